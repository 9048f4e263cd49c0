"""``posbias study run|status|report``: the models × configurations study.

What a spec's ``bases`` and ``remedies`` keys take is listed by ``posbias list bases|remedies``
(:mod:`hf_posbias.cli.listing`).

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(
    ...     ["study", "run", "s.yaml", "--out", "o", "--bases", "a", "b"])
    >>> (args.spec, args.out, args.bases, args.configs, args.dry_run)
    ('s.yaml', 'o', ['a', 'b'], None, False)
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.cli.common import add_group, add_verb
from hf_posbias.output_folders import OutputFolder

if TYPE_CHECKING:
    from hf_posbias.study.report import ReportSettings, StudyReportSettings
    from hf_posbias.study.run import StudyRunSettings
    from hf_posbias.study.spec import StudySpec
    from hf_posbias.study.units import StudyStatusSettings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``study run``, ``study report`` (of a study folder, or of run folders with ``--out``)
    and ``study status``."""
    from hf_posbias.settings import add_settings_arguments
    from hf_posbias.study.report import StudyReportSettings
    from hf_posbias.study.run import StudyRunSettings
    from hf_posbias.study.spec import StudySpec
    from hf_posbias.study.units import StudyStatusSettings

    verbs = add_group(
        subparsers,
        "study",
        help="the bases × configurations study: run, status, report",
        description="Run YHP26's study (or yours) from one spec file: see docs/study.md.",
    )
    run = add_verb(
        verbs,
        "run",
        StudyRunSettings,
        run_study_cmd,
        help="train every (base, configuration), evaluate every model on every task, report",
        description="Train every run of the spec, evaluate every checkpoint and every untrained "
        "base on every task once, write <out>/report/. Resumable: a rerun skips what is done. "
        "Flags after the spec override its keys.",
        with_args=True,
        output=OutputFolder(
            keeps="its finished units (checkpoints, evaluations)",
            pins=study_parameters,
            part="shard",
        ),
    )
    overrides = run.add_argument_group(
        "spec overrides (unset: the spec file's value; a default is what a spec that names none "
        "gets)"
    )
    add_settings_arguments(overrides, StudySpec)
    # An override is "given" only when not None: the spec file's value stands otherwise.
    run.set_defaults(**{f.name: None for f in dataclasses.fields(StudySpec)})
    add_verb(
        verbs,
        "report",
        StudyReportSettings,
        study_report_cmd,
        help="the report of a study folder, or of evaluate run folders with --out",
        description="The study report (tables, PSI reductions, the direction check, curves, "
        "report.json) of a study folder, into FOLDER/report/; or, with --out, the same report "
        "over any `posbias evaluate` run folders (base and configuration from their model "
        "cards), from the runs' per-query tables.",
    )
    add_verb(
        verbs,
        "status",
        StudyStatusSettings,
        study_status_cmd,
        help="every unit of a study folder: done / running / failed / waiting (failures with "
        "their last log line)",
        description="Read a study folder's unit records and print each unit of work (a "
        "training run, an evaluation, an analysis) with its state, a failed one with the last "
        "line of its log; nothing is run or written.",
    )


def _load_spec(settings: StudyRunSettings, args: argparse.Namespace) -> StudySpec | None:
    """The spec file with the flags given after it (``--bases …``) overriding its keys;
    ``None`` for a listwise spec (its own steps). The flags are checked first (type and range),
    before the spec file is even looked for: a flag's mistake is its one line whatever the
    file, as for every verb's numbers (issue 49)."""
    from hf_posbias.study.listwise_study import is_listwise_spec
    from hf_posbias.study.spec import StudySpec, given_overrides, load_spec

    names = [f.name for f in dataclasses.fields(StudySpec) if hasattr(args, f.name)]
    overrides = given_overrides({name: getattr(args, name) for name in names})
    if is_listwise_spec(settings.spec):
        return None
    return load_spec(settings.spec, overrides)


def study_parameters(settings: StudyRunSettings, args: argparse.Namespace) -> dict[str, Any]:
    """What a study folder's run is made of: the spec's identity (what makes two specs the
    same study; the executor, a Hub org and such may change between reruns), or a listwise
    spec whole."""
    from hf_posbias.settings import settings_record
    from hf_posbias.study.listwise_spec import load_listwise_spec

    spec = _load_spec(settings, args)
    if spec is None:
        return {"spec": settings_record(load_listwise_spec(settings.spec))}
    return spec.identity()


def run_study_cmd(settings: StudyRunSettings, args: argparse.Namespace) -> None:
    """``posbias study run`` (its folder claimed by :func:`study_parameters`; shards of one
    study share it by design, each under its own lock)."""
    from hf_posbias.study.listwise_report import run_listwise_cmd
    from hf_posbias.study.run import dry_run_lines, run_study

    spec = _load_spec(settings, args)
    if spec is None:  # kind: listwise (Q26): its own steps and report
        run_listwise_cmd(settings.spec, settings.out, dry_run=settings.dry_run)
        return
    if settings.dry_run:
        from hf_posbias.study.preflight import StudyInputError

        lines = dry_run_lines(spec, **settings.dry_run_kwargs())
        for line in lines:
            print(line)
        if lines.problems:  # the real run would stop here, with this error
            raise StudyInputError(lines.problems)
        return
    outcome = run_study(spec, **settings.run_kwargs())
    print(
        f"{len(outcome.trained)} run(s) trained, {outcome.evaluated} evaluation(s) run, "
        f"{outcome.skipped} skipped (done)"
    )


def study_status_cmd(settings: StudyStatusSettings) -> None:
    """``posbias study status``."""
    from hf_posbias.study.run import study_work
    from hf_posbias.study.units import study_status

    for line in study_status(settings.folder, study_work()):
        print(line)


def _print_report(target: Path) -> None:
    print((target.parent / "report.md").read_text())
    print(f"report: {target}")


def study_report_cmd(settings: StudyReportSettings) -> None:
    """``posbias study report``: a study folder's report, or (``--out``) run folders'."""
    from hf_posbias.study.listwise_report import write_listwise_report
    from hf_posbias.study.listwise_study import spec_of_folder
    from hf_posbias.study.report import write_study_report

    runs = settings.runs_report()
    if runs is not None:
        report_cmd(runs)
        return
    folder = settings.folder[0]
    write = write_listwise_report if spec_of_folder(folder) is not None else write_study_report
    try:
        target = write(folder)
    except BaseException as err:
        # The report is the study folder's (no claim of its own): each file whole, some new.
        from hf_posbias.output_folders import set_stop_note

        report = Path(folder) / "report"
        text = f"{report} may hold part of the new report; the same command writes it again"
        set_stop_note(err, text, kept=True)
        raise
    _print_report(target)


def report_cmd(settings: ReportSettings) -> None:
    """The report over run folders (``posbias study report RUN … --out OUT``)."""
    from hf_posbias.study.report import write_report
    from hf_posbias.study.report_sources import run_sources

    target = write_report(
        run_sources(settings.runs),
        settings.out,
        n_resamples=settings.bootstrap,
        seed=settings.seed,
        title=settings.title,
    )
    _print_report(target)
