"""``posbias study run|report|bases|remedies`` and ``posbias report``: the models ×
configurations study (``bases`` and ``remedies`` list what its spec's keys of those names take,
plugins included: :mod:`hf_posbias.cli.listing`).

Example:
    >>> import argparse
    >>> from hf_posbias.cli.study import register
    >>> parser = argparse.ArgumentParser(); sub = parser.add_subparsers()
    >>> register(sub)
    >>> args = parser.parse_args(["study", "run", "s.yaml", "--out", "o", "--bases", "a", "b"])
    >>> (args.spec, args.out, args.bases, args.configs, args.dry_run)
    ('s.yaml', 'o', ['a', 'b'], None, False)
"""

from __future__ import annotations

import argparse
import dataclasses


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``study run``, ``study report``, ``study bases``, ``study remedies`` and ``report``."""
    from hf_posbias.cli.listing import add_listing_verb, bases_table, remedies_table
    from hf_posbias.settings import add_settings_arguments
    from hf_posbias.study.report import ReportSettings, StudyReportSettings
    from hf_posbias.study.run import StudyRunSettings
    from hf_posbias.study.spec import StudySpec

    study = subparsers.add_parser(
        "study",
        help="the models × configurations study: train, evaluate, report, publish",
        description="Run YHP26's study (or yours) from one spec file: see docs/study.md.",
    )
    verbs = study.add_subparsers(dest="study_command", metavar="VERB")
    run = verbs.add_parser(
        "run",
        help="train every (base, configuration), evaluate every model on every task, report",
        description="Train every run of the spec, evaluate every checkpoint and every untrained "
        "base on every task once, write <out>/report/. Resumable: a rerun skips what is done. "
        "Flags after the spec override its keys.",
    )
    add_settings_arguments(run, StudyRunSettings)
    overrides = run.add_argument_group("spec overrides (default: the spec file's value)")
    add_settings_arguments(overrides, StudySpec)
    # An override is "given" only when not None: the spec file's value stands otherwise.
    run.set_defaults(**{f.name: None for f in dataclasses.fields(StudySpec)}, func=run_study_cmd)

    report = verbs.add_parser(
        "report",
        help="the report of a study folder (tables, PSI reductions, curves, report.json)",
    )
    add_settings_arguments(report, StudyReportSettings)
    report.set_defaults(func=study_report_cmd)
    add_listing_verb(
        verbs,
        "bases",
        "the base models a study's bases and posbias train --model take: built-in, registered, "
        "or a plugin's (entry-point group hf_posbias.bases, with its distribution)",
        bases_table,
    )
    add_listing_verb(
        verbs,
        "remedies",
        "the bi-encoder remedies a study's remedies, posbias remedies --remedies and posbias "
        "evaluate --remedy take: built-in, or a plugin's (entry-point group hf_posbias.remedies, "
        "with its distribution)",
        remedies_table,
    )
    study.set_defaults(func=lambda args: study.print_help() or 1)

    top = subparsers.add_parser(
        "report",
        help="the study report over `posbias evaluate` runs (base and config from model cards)",
        description="Per task: mean nDCG@10 and PSI per base × configuration with intervals, "
        "PSI reduction of uniform, the direction check and curves, from the runs' per-query "
        "tables.",
    )
    add_settings_arguments(top, ReportSettings)
    top.set_defaults(func=report_cmd)


def run_study_cmd(args: argparse.Namespace) -> int:
    """``posbias study run``."""
    from hf_posbias.settings import settings_from_args
    from hf_posbias.study.run import StudyRunSettings, dry_run_lines, run_study
    from hf_posbias.study.spec import StudySpec, load_spec

    settings = settings_from_args(StudyRunSettings, args)
    names = [f.name for f in dataclasses.fields(StudySpec) if hasattr(args, f.name)]
    spec = load_spec(settings.spec, {name: getattr(args, name) for name in names})
    if settings.dry_run:
        for line in dry_run_lines(spec, settings):
            print(line)
        return 0
    outcome = run_study(spec, settings)
    print(
        f"{len(outcome.trained)} run(s) trained, {outcome.evaluated} evaluation(s) run, "
        f"{outcome.skipped} skipped (done)"
    )
    return 0


def study_report_cmd(args: argparse.Namespace) -> int:
    """``posbias study report``."""
    from hf_posbias.settings import settings_from_args
    from hf_posbias.study.report import StudyReportSettings, write_study_report

    settings = settings_from_args(StudyReportSettings, args)
    target = write_study_report(settings.folder)
    print((target.parent / "report.md").read_text())
    print(f"report: {target}")
    return 0


def report_cmd(args: argparse.Namespace) -> int:
    """``posbias report``."""
    from hf_posbias.settings import settings_from_args
    from hf_posbias.study.report import ReportSettings, run_sources, write_report

    settings = settings_from_args(ReportSettings, args)
    target = write_report(
        run_sources(settings.runs),
        settings.out,
        n_resamples=settings.bootstrap,
        seed=settings.seed,
        title=settings.title,
    )
    print((target.parent / "report.md").read_text())
    print(f"report: {target}")
    return 0
