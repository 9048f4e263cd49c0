"""``posbias study run SPEC --out DIR``: train every run, evaluate every model once, report.

The steps of a study, in order, each one resumable:

1. every (base, configuration[, pooling]) run is trained through the matrix runner
   (:func:`hf_posbias.training.matrix.run_matrix`: ``accelerate launch`` per run, or in this
   process with ``in_process``) into ``<out>/models/posbias-<base>-<config>[-<pooling>]``; a run
   whose folder holds the trainer's final marker is skipped;
2. every untrained base is saved with exactly the settings its checkpoints get — the trainer's
   own :func:`~hf_posbias.training.builder.build_sentence_transformer` with the study's pooling
   and max length, so the same query prefix, sequence length and pooling — into
   ``<out>/bases/posbias-<base>-base[-<pooling>]``; with ``off_the_shelf`` the base as published
   is evaluated too (config ``off-the-shelf``);
3. every model — and with ``remedies``, each untrained base once more per inference-time remedy
   (:mod:`hf_posbias.evaluation.runs.remedies`, config ``base +<remedy>``, no retraining) — is
   evaluated on every task by
:func:`hf_posbias.evaluation.runs.runner.evaluate_model`
   (the code of ``posbias evaluate``) into ``<out>/eval/<model folder>/<task>/``; the marker
   ``posbias_study_eval.json`` (written last) holds the model's and the task's fingerprints (a
   remedy row's names the remedy and its passage settings), so a rerun evaluates nothing that is
   done and re-evaluates a model whose weights (or remedy settings) changed; with the spec's
   ``analyses``, each of them runs on every model but the remedy rows
   (:mod:`hf_posbias.study.analyses`: one result file per model × analysis, resumable alike);
4. when every evaluation of the study is there, the report (:mod:`hf_posbias.study.report`).

``shard="i/n"`` takes runs ``i, i+n, …`` (and bases ``i, i+n, …``) for node ``i`` of ``n``; the
node that finishes last writes the report (or run ``posbias study report DIR``).

Example:
    >>> StudyRunSettings(spec="s.yaml", out="o", shard="1/4").shard
    '1/4'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError, PosbiasError
from hf_posbias.settings import ProgressSettings, flag_name, setting, shared_setting
from hf_posbias.shards import write_text_atomic
from hf_posbias.study.layout import (
    BASE_CONFIG,
    BASE_MARKER,
    EVAL_MARKER,
    StudyModel,
    StudyTask,
    base_label,
    eval_dir,
    evaluation_done,
    evaluation_fingerprint,
    resolve_tasks,
    run_settings,
    study_models,
)
from hf_posbias.study.spec import StudySpec, save_spec, training_values
from hf_posbias.training.matrix import LaunchSettings

if TYPE_CHECKING:
    from hf_posbias.study.units import StudyWork

Echo = Callable[[str], None]


@dataclass(kw_only=True)
class StudyFolder:
    """Which study and where: the spec and the study folder (listed first in ``--help``)."""

    spec: str = setting("study spec file (YAML or JSON), e.g. studies/yhp26.yaml", positional=True)
    out: str | None = shared_setting("out", default=None)


@dataclass(kw_only=True)
class StudyRunSettings(ProgressSettings, LaunchSettings, StudyFolder):
    """How one invocation of ``posbias study run`` runs the study (the spec says what); a dry
    run shows no progress."""

    hub_token: str | None = shared_setting("hub_token", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.out is None and not self.dry_run:
            raise InputError(f"{flag_name('out')} is required (the study folder)")

    def run_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`run_study` these settings stand for:
        ``run_study(spec, **s.run_kwargs())``.

        Example:
            >>> StudyRunSettings(spec="s.yaml", out="o", in_process=True).run_kwargs()["in_process"]
            True
        """
        return {
            "out": self.out,
            "shard": self.shard,
            "in_process": self.in_process,
            "num_processes": self.num_processes,
            "hub_token": self.hub_token,
            "progress": self.progress,
            "throughput": self.throughput,
        }

    def dry_run_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`dry_run_lines` these settings stand for:
        ``dry_run_lines(spec, **s.dry_run_kwargs())``.

        Example:
            >>> s = StudyRunSettings(spec="s.yaml", dry_run=True, plan_for="h100")
            >>> s.dry_run_kwargs()["plan_for"], s.dry_run_kwargs()["out"]
            ('h100', None)
        """
        return {
            "out": self.out,
            "shard": self.shard,
            "num_processes": self.num_processes,
            "plan_for": self.plan_for,
            "throughput": self.throughput,
        }


def save_untrained_base(model: StudyModel, spec: StudySpec) -> None:
    """Save the base as the trainer builds it before step 1 (same pooling, length, prompts)."""
    folder = Path(model.folder)
    if (folder / BASE_MARKER).is_file():
        return
    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.training.builder import build_sentence_transformer

    model_spec = get_model_spec(model.base)
    st = build_sentence_transformer(
        model_spec,
        pooling=model.pooling or spec.training.get("pooling"),
        max_length=spec.training.get("max_length"),
    )
    st.save(str(folder))
    facts = {
        "base": base_label(model.base),
        "pooling": st[1].pooling_mode if len(st) > 1 else None,
        "max_seq_length": st.max_seq_length,
        "query_prefix": st.prompts.get("query", ""),
    }
    write_text_atomic(folder / BASE_MARKER, json.dumps(facts, indent=2, sort_keys=True) + "\n")


def evaluate_study_model(
    model: StudyModel,
    tasks: Sequence[StudyTask],
    spec: StudySpec,
    out: str | Path,
    *,
    progress: bool = True,
) -> tuple[int, int]:
    """Evaluate ``model`` on every task not done yet; returns (evaluated, skipped).
    ``progress``: texts encoded and queries scored while each evaluation runs."""
    import shutil

    from hf_posbias.evaluation.runs.runner import RESULTS_DIRNAME, evaluate_model

    fingerprint = evaluation_fingerprint(model, spec)
    tasks = [t for t in tasks if t.runs_on(model.base)]
    todo = [t for t in tasks if not evaluation_done(eval_dir(out, model, t), fingerprint, t)]
    remedy = spec.remedy_settings(model.remedy or "none")
    loaded = None
    for task in todo:
        folder = eval_dir(out, model, task)
        # mteb files results by model revision (the folder's whole content, card included):
        # a redone evaluation would sit next to the stale one, and both would be published.
        shutil.rmtree(folder / RESULTS_DIRNAME, ignore_errors=True)
        if loaded is None:
            from hf_posbias.evaluation.runs.mteb_models import load_mteb_model

            loaded = load_mteb_model(model.folder, remedy=remedy, settings=spec.model_settings)
        evaluate_model(
            loaded,
            [task.folder],
            out=folder,
            bootstrap=spec.bootstrap,
            seed=spec.seed,
            progress=progress,
            scoring=task.scoring,
            exclude_truncated=spec.exclude_truncated,
        )
        marker = {
            "base": model.base,
            "config": model.config,
            "pooling": model.pooling,
            "model": model.folder,
            "remedy": model.remedy,
            "model_fingerprint": fingerprint,
            "task": task.name,
            "task_fingerprint": task.fingerprint,
        }
        write_text_atomic(folder / EVAL_MARKER, json.dumps(marker, indent=2, sort_keys=True) + "\n")
    return len(todo), len(tasks) - len(todo)


def check_remedies(
    models: Sequence[StudyModel], tasks: Sequence[StudyTask], spec: StudySpec, out: str | Path
) -> None:
    """Every remedy row still to evaluate against its base (passage length, stride, pooling),
    before anything trains or evaluates: one line for the first that cannot work (saves the
    untrained bases it needs, as step 2 would)."""
    from hf_posbias.evaluation.runs.mteb_models import load_mteb_model, with_remedy

    pending = [
        m
        for m in models
        if m.remedy is not None
        and not all(
            evaluation_done(eval_dir(out, m, t), evaluation_fingerprint(m, spec), t)
            for t in tasks
            if t.runs_on(m.base)
        )
    ]
    for folder in dict.fromkeys(m.folder for m in pending):
        mine = [m for m in pending if m.folder == folder]
        save_untrained_base(mine[0], spec)
        loaded = load_mteb_model(folder)
        for model in mine:
            with_remedy(loaded, spec.remedy_settings(str(model.remedy)))


@dataclass
class StudyOutcome:
    """What one ``study run`` invocation did."""

    trained: list[str]
    evaluated: int
    skipped: int
    report: Path | None
    lines: list[str]


def select_models(models: Sequence[StudyModel], shard: str | None) -> list[StudyModel]:
    """This node's models: runs ``i, i+n, …`` and bases ``i, i+n, …`` (all without a shard);
    a base's remedy rows go with it (they read the folder it saves)."""
    from hf_posbias.training.matrix import select_shard

    if not shard:
        return list(models)
    bases = [m for m in models if not m.trained and m.remedy is None]
    runs = [m for m in models if m.trained]
    # select_shard validates "i/n" and slices any sequence the same way.
    mine = select_shard(bases, shard)  # type: ignore[arg-type]
    folders = {m.folder for m in mine if m.config == BASE_CONFIG}
    remedied = [m for m in models if m.remedy is not None and m.folder in folders]
    return mine + remedied + select_shard(runs, shard)  # type: ignore[arg-type]


class DryRunLines(list[str]):
    """The lines of a study's dry run, which also carry the projected training seconds of all
    its runs (``None`` unless the throughput figures cover every run) and the inputs the run
    could not start without (:func:`~hf_posbias.study.preflight.input_problems`).

    Example:
        >>> lines = DryRunLines(["run 1/1: posbias-bert-base-begin"], 3600.0)
        >>> lines[0], lines.projected_seconds, lines.problems
        ('run 1/1: posbias-bert-base-begin', 3600.0, [])
    """

    def __init__(
        self,
        lines: Sequence[str] = (),
        projected_seconds: float | None = None,
        problems: Sequence[str] = (),
    ) -> None:
        super().__init__(lines)
        self.projected_seconds = projected_seconds
        self.problems = list(problems)


def dry_run_lines(
    spec: StudySpec,
    *,
    out: str | Path | None = None,
    shard: str | None = None,
    num_processes: int | None = None,
    plan_for: str | None = None,
    throughput: str | Path | None = None,
    check: bool = True,
) -> DryRunLines:
    """The study's tasks and standard tasks (:func:`task_plan_lines`), every training run with
    its launch command, its settings after the memory plan and its projected time, then the
    evaluations, the projected total and every input the run could not start without, one
    ``missing:`` line each (:func:`~hf_posbias.study.preflight.input_problems`: the real run's
    check, also in :attr:`DryRunLines.problems`; ``posbias study run --dry-run`` exits 2 on
    them with the real run's error).

    ``out``: the study folder the runs would write (default ``study``); ``shard``: this node's
    share (``i/n``); ``num_processes``: accelerate processes per run; ``plan_for``: the GPU to
    plan for (default: this machine); ``throughput``: a ``benchmarks/train_throughput.py
    --json`` file for the projected time; ``check=False`` skips the input check, as
    ``plan_for`` does (a plan made for another machine: a GPU host's, from a laptop without its
    caches and data). The lines carry the projected training seconds
    (:attr:`DryRunLines.projected_seconds`).
    """
    from hf_posbias.study.preflight import StudyInputError, input_problems
    from hf_posbias.study.protocol import task_entries
    from hf_posbias.tasks.benchmark_registry import is_missing_folder
    from hf_posbias.training.matrix import run_matrix

    # A plan for another machine (--plan-for) says nothing of what this one lacks.
    checked = check and plan_for is None
    problems = input_problems(spec) if checked else []
    entries = task_entries(spec.evaluation_tasks, spec.bases)
    not_built = [e.task for e in entries if is_missing_folder(e.task)]
    models = select_models(study_models(spec, out or "study"), shard)
    runs = [model.run for model in models if model.trained]
    try:
        report = run_matrix(
            [run_settings(spec, model) for model in models if model.trained],
            list(training_values(spec)),
            dry_run=True,
            num_processes=num_processes,
            plan_for=plan_for,
            throughput=throughput,
        )
    except PosbiasError:
        if problems:  # what made the plan fail is among them (an unknown base)
            raise StudyInputError(problems) from None
        raise
    lines = task_plan_lines(spec, not_built)
    for index, (command, plan) in enumerate(zip(report.commands, report.plans), start=1):
        lines.append(f"run {index}/{len(runs)}: {runs[index - 1].name}")
        lines.append(f"  {command}")
        lines.append(f"  # {plan}")
    remedied = [m for m in models if m.remedy is not None]
    for index, model in enumerate(remedied, start=1):
        key = spec.remedy_settings(str(model.remedy)).key
        lines.append(
            f"remedy {index}/{len(remedied)}: {model.name}: the untrained base "
            f"{Path(model.folder).name} under {key}, evaluated on "
            f"{sum(e.runs_on(model.base) for e in entries)} task(s), no training"
        )
    if spec.analyses:
        lines += analysis_plan_lines(spec, len([m for m in models if m.remedy is None]))
    n_eval = sum(e.runs_on(m.base) for m in models for e in entries)
    untrained = len(models) - len(runs) - len(remedied)
    lines.append(
        f"# {len(runs)} runs to train, {untrained} "
        f"{'untrained base' if spec.train else 'published (evaluation only)'} model(s), "
        f"{len(remedied)} remedy row(s), {n_eval} evaluations ({len(models)} models × "
        f"{len(entries)} tasks{_per_task_bases(entries)})"
    )
    if spec.executor != "local":
        from hf_posbias.study.units import executor_plan

        lines += executor_plan(
            spec, out or "study", models, study_work(), throughput, plan_for, num_processes
        )
    if report.projected_seconds is not None:
        lines.append(f"# training projected {report.projected_seconds / 3600:.1f} h in all")
    else:
        lines.append(
            "# pass --throughput FILE (benchmarks/train_throughput.py --json FILE) for a "
            "projected time"
        )
    if check and not checked:
        lines.append(f"# inputs not checked here: the plan is for {plan_for}")
    lines += [f"missing: {problem}" for problem in problems]
    return DryRunLines(lines, report.projected_seconds, problems)


def task_plan_lines(spec: StudySpec, not_built: Sequence[str] = ()) -> list[str]:
    """The dry run's list of the study's ``tasks`` and ``standard`` tasks (YHP26 Table 4/14),
    each with the protocol and bases it pins; a folder in ``not_built`` is marked (a run
    refuses it until it is built).

    Example:
        >>> spec = StudySpec(bases=["bert-base", "gpt2-medium"], data="d", tasks=[
        ...     "SQuAD-PosQ", {"task": "PosIR", "buckets": "posir20", "bases": ["bert-base"]}],
        ...     standard=["tasks/beir/scifact"])
        >>> for line in task_plan_lines(spec, ["tasks/beir/scifact"]):
        ...     print(line)
        tasks (2):
          SQuAD-PosQ
          PosIR (pytrec_eval, buckets posir20; on 1 base: bert-base)
        standard (1; YHP26 Table 4/14: nDCG@10 on every model):
          tasks/beir/scifact (not built yet: a run refuses it)
    """
    from hf_posbias.study.protocol import task_entries

    def described(entry: Any) -> str:
        pinned = []
        if (entry.scoring, entry.buckets) != ("pytrec_eval", "task"):
            pinned.append(f"{entry.scoring}, buckets {entry.buckets}")
        if entry.bases is not None:
            n = len(entry.bases)
            pinned.append(f"on {n} base{'s' if n != 1 else ''}: {', '.join(entry.bases)}")
        missing = " (not built yet: a run refuses it)" if entry.task in not_built else ""
        protocol = f" ({'; '.join(pinned)})" if pinned else ""
        return f"  {entry.task}{protocol}{missing}"

    lines = [f"tasks ({len(spec.tasks)}):"]
    lines += [described(e) for e in task_entries(spec.tasks, spec.bases)]
    if spec.standard:
        lines.append(f"standard ({len(spec.standard)}; YHP26 Table 4/14: nDCG@10 on every model):")
        lines += [described(e) for e in task_entries(spec.standard, spec.bases)]
    return lines


def analysis_plan_lines(spec: StudySpec, n_models: int) -> list[str]:
    """The dry run's lines of the spec's analyses: each with its inputs as the spec gives them
    (pairs, document samples with their word ranges and sizes, slots).

    Example:
        >>> spec = StudySpec(bases=["m"], train=False, tasks=["T"], analyses=["segment-profile"],
        ...                  analysis_slots=3, analysis_limit=10000, analysis_corpus=[
        ...                      {"name": "FineWeb-Edu", "corpus": "hf:HuggingFaceFW/fineweb-edu",
        ...                       "min_words": 200, "max_words": 500}])
        >>> for line in analysis_plan_lines(spec, 1):
        ...     print(line)
        analyses: segment-profile on each of 1 model(s)
          segment-profile, 3 segments: FineWeb-Edu: hf:HuggingFaceFW/fineweb-edu, 200–500 words, 10,000 sampled
    """  # noqa: E501
    lines = [f"analyses: {', '.join(spec.analyses)} on each of {n_models} model(s)"]
    drawn = f"{spec.analysis_limit:,} sampled" if spec.analysis_limit else "all"
    if "evidence-moving" in spec.analyses:
        lines.append(
            f"  evidence-moving, {spec.analysis_slots} slots: pairs {spec.analysis_pairs}, {drawn}"
        )
    if "segment-profile" in spec.analyses:
        lines += [
            f"  segment-profile, {spec.analysis_slots} segments: "
            + sample.describe(spec.analysis_limit)
            for sample in spec.profile_samples
        ]
    return lines


def _per_task_bases(entries: Sequence[Any]) -> str:
    """``; FineWeb-PosQ on 3 bases`` for each task that does not run on every base."""
    return "".join(f"; {e.task} on {len(e.bases)} base(s)" for e in entries if e.bases)


def run_study(
    spec: StudySpec,
    *,
    out: str | Path,
    shard: str | None = None,
    in_process: bool = False,
    num_processes: int | None = None,
    hub_token: str | None = None,
    echo: Echo = print,
    progress: bool = True,
    throughput: str | Path | None = None,
) -> StudyOutcome:
    """Train, evaluate and report the study (see the module docstring); resumable.

    Args:
        spec: what the study is (:func:`hf_posbias.study.spec.load_spec`).
        out: the study folder (a rerun resumes it).
        shard: ``i/n``: this node's share of the runs (0-based); ``None``: all of them.
        in_process: train in this process instead of ``accelerate launch``.
        num_processes: accelerate processes per run (DDP).
        hub_token: Hub token for the spec's ``hub_org`` (unset: ``HF_TOKEN`` or the login).
        echo: where each progress line goes (one per finished unit of work, with the ETA
            of the units left from the measured durations of each kind).
        progress: training steps and evaluation counts while each unit runs
            (``--no-progress``: only the per-unit lines).
        throughput: ``benchmarks/train_throughput.py --json`` figures: the runs' projected
            hours, by which the executor starts the longest runs first.

    The units of work (:mod:`hf_posbias.study.units`) run under the spec's ``executor``
    (:mod:`hf_posbias.executors`: ``local``, ``ray``, ``slurm``).

    Example:
        >>> # run_study(load_spec("studies/yhp26.yaml"), out="study", in_process=True)
        >>> StudyRunSettings(spec="studies/yhp26.yaml", out="study").run_kwargs()["out"]
        'study'
    """
    from hf_posbias.study.preflight import check_inputs

    out = str(out)
    check_inputs(spec, out, hub_token)
    from hf_posbias.executors import check_executor

    check_executor(spec)  # one line before any work when it cannot start
    tasks = resolve_tasks(spec.evaluation_tasks)
    models = select_models(study_models(spec, out), shard)
    # Every run's settings are built (and so checked) before the first run starts, and before
    # the folder is claimed: a corrected spec must still fit it.
    for model in models:
        if model.trained:
            run_settings(spec, model, progress=progress)
    save_spec(spec, out)
    check_remedies(models, tasks, spec, out)
    # The units of work go to the executor (hf_posbias.executors): local, Ray or Slurm.
    from hf_posbias.executors import run_units
    from hf_posbias.study.units import projected_costs, study_units

    costs = projected_costs(spec, models, throughput, num_processes=num_processes)
    units = study_units(spec, out, models, tasks, study_work(progress), in_process=in_process,
                        num_processes=num_processes, costs=costs)  # fmt: skip
    outcome = StudyOutcome([], 0, 0, None, [])

    def echo_line(line: str) -> None:
        outcome.lines.append(line)
        echo(line)

    ran, skipped = run_units(units, out, spec, echo_line)
    outcome.trained = [u.id.split("/", 1)[1] for u in ran if u.kind == "train"]
    outcome.evaluated = sum(u.kind == "eval" for u in ran)
    outcome.skipped = sum(u.kind == "eval" for u in skipped)
    if study_complete(spec, out, tasks):
        from hf_posbias.study.report import REPORT_DIRNAME

        outcome.report = Path(out) / REPORT_DIRNAME / "report.json"  # the report unit wrote it
        echo(f"report: {outcome.report}")
        if spec.hub_org:
            from hf_posbias.study.publish import publish_study

            for line in publish_study(out, spec.hub_org, hub_token):
                echo(line)
    else:
        echo("report: waiting for the other shards' evaluations (or run `posbias study report`)")
    return outcome


def study_complete(spec: StudySpec, out: str | Path, tasks: Sequence[StudyTask]) -> bool:
    """Whether every model of the study (all shards) has every evaluation and analysis."""
    from hf_posbias.study.analyses import analyses_complete

    return all(
        (eval_dir(out, m, t) / EVAL_MARKER).is_file()
        for m in study_models(spec, out)
        for t in tasks
        if t.runs_on(m.base)
    ) and analyses_complete(spec, out)


def study_work(progress: bool = True) -> StudyWork:
    """The steps of this module the study's units call (:mod:`hf_posbias.study.units`)."""
    from hf_posbias.study.units import StudyWork

    return StudyWork(
        save_base=save_untrained_base,
        evaluate=evaluate_study_model,
        complete=study_complete,
        progress=progress,
    )
