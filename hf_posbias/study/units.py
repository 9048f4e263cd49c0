"""The study as units of work: one per training run, untrained base, evaluation and the report.

``train/<model>`` trains one run (``gpus=1``, its cost the planner's projected seconds when
throughput figures are given); ``base/<model>`` saves one untrained base; ``eval/<model>/<task>``
evaluates one model on one task once its training (or base) unit is done; ``report/report``
waits for every evaluation of this invocation and writes the report when the whole study (every
shard) is evaluated. Whether a unit is finished is read from the study's own markers (the
trainer's final marker, ``posbias_study_base.json``, ``posbias_study_eval.json`` with the model's
fingerprint), so a rerun under any executor skips exactly what a local rerun skips.

Example:
    >>> from hf_posbias.study.spec import StudySpec
    >>> spec = StudySpec(bases=["bert-base"], configs=["begin", "uniform"], data="d",
    ...                  tasks=["t"])
    >>> from hf_posbias.study.layout import StudyTask, study_models
    >>> task = StudyTask("t", "t", "t", "0")
    >>> work = StudyWork(save_base=print, evaluate=print, complete=print)
    >>> units = study_units(spec, "o", study_models(spec, "o"), [task], work)
    >>> [(u.id, u.deps) for u in units][:3]  # doctest: +NORMALIZE_WHITESPACE
    [('base/posbias-bert-base-base', ()),
     ('eval/posbias-bert-base-base/t', ('base/posbias-bert-base-base',)),
     ('train/posbias-bert-base-begin', ())]
    >>> units[-1].id, len(units[-1].deps)
    ('report/report', 3)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.executors.units import Unit
from hf_posbias.settings import Settings, setting
from hf_posbias.study.layout import (
    BASE_CONFIG,
    BASE_MARKER,
    StudyModel,
    StudyTask,
    eval_dir,
    evaluation_done,
    evaluation_fingerprint,
    run_settings,
    study_models,
)
from hf_posbias.study.spec import StudySpec, training_values

REPORT_UNIT = "report/report"


@dataclass(frozen=True)
class StudyWork:
    """The study's own steps the units call (top-level functions of
    :mod:`hf_posbias.study.run`, so a unit pickles to a Ray worker or a Slurm job)."""

    save_base: Callable[[StudyModel, StudySpec], None]
    """Save an untrained base as the trainer builds it."""
    evaluate: Callable[[StudyModel, Sequence[StudyTask], StudySpec, str], Any]
    """Evaluate a model on tasks not done yet."""
    complete: Callable[[StudySpec, str, Sequence[StudyTask]], bool]
    """Whether every evaluation and analysis of the study (every shard) is there."""
    progress: bool = True
    """Training steps, evaluation and analysis counts while a unit runs (``--no-progress``:
    off)."""


def train_unit(
    spec: StudySpec,
    model: StudyModel,
    in_process: bool,
    num_processes: int | None,
    progress: bool = True,
) -> None:
    """Train ``model``'s run (``accelerate launch``, or in this process)."""
    from hf_posbias.rows.readers import read_json
    from hf_posbias.training.matrix import run_matrix

    run_matrix(
        [run_settings(spec, model, progress=progress)],
        list(training_values(spec)),
        num_processes=num_processes,
        in_process=in_process,
    )
    facts = read_json(Path(model.folder) / "posbias_training.json")
    print(
        f"{model.name}: trained {facts['steps']} steps in {facts['train_seconds']:.1f} s "
        f"({facts['train_seconds'] / max(facts['steps'], 1):.2f} s/step)"
    )


def report_unit(work: StudyWork, spec: StudySpec, out: str, tasks: Sequence[StudyTask]) -> None:
    """Write the report when every evaluation of the study (every shard) is there."""
    if work.complete(spec, out, tasks):
        from hf_posbias.study.report import write_study_report

        write_study_report(out)


def _trained_done(model: StudyModel) -> bool:
    return model.run.is_finished()


def _base_done(model: StudyModel) -> bool:
    return (Path(model.folder) / BASE_MARKER).is_file()


def _eval_done(spec: StudySpec, out: str, model: StudyModel, task: StudyTask) -> bool:
    folder = eval_dir(out, model, task)
    return evaluation_done(folder, evaluation_fingerprint(model, spec), task)


def study_units(
    spec: StudySpec,
    out: str | Path,
    models: Sequence[StudyModel],
    tasks: Sequence[StudyTask],
    work: StudyWork,
    *,
    in_process: bool = False,
    num_processes: int | None = None,
    costs: Mapping[str, float | None] | None = None,
) -> list[Unit]:
    """The units of ``models`` × ``tasks`` and the report (see the module docstring); ``costs``:
    projected seconds of each training run by model name."""
    out = str(out)
    units: list[Unit] = []
    prep: dict[str, str] = {}  # model folder → the unit that makes it
    for model in models:
        if model.trained:
            uid = f"train/{model.name}"
            units.append(
                Unit(
                    uid,
                    "train",
                    train_unit,
                    (spec, model, in_process, num_processes, work.progress),
                    cost=(costs or {}).get(model.name),
                    gpus=1.0,
                    done=functools.partial(_trained_done, model),
                )
            )
            prep[model.folder] = uid
        elif model.config == BASE_CONFIG and model.remedy is None:
            uid = f"base/{model.name}"
            done = functools.partial(_base_done, model)
            units.append(Unit(uid, "base", work.save_base, (model, spec), done=done))
            prep[model.folder] = uid
        deps = (prep[model.folder],) if model.folder in prep else ()
        for task in tasks:
            if not task.runs_on(model.base):
                continue  # the spec runs this task on other bases only
            units.append(
                Unit(
                    f"eval/{model.name}/{task.name}",
                    "eval",
                    functools.partial(work.evaluate, progress=work.progress),
                    (model, [task], spec, out),
                    deps=deps,
                    gpus=1.0,
                    done=functools.partial(_eval_done, spec, out, model, task),
                )
            )
        if spec.analyses and model.remedy is None:
            from hf_posbias.study.analyses import analyse_study_model, model_analyses_done

            units.append(
                Unit(
                    f"analysis/{model.name}",
                    "analysis",
                    functools.partial(analyse_study_model, progress=work.progress),
                    (model, spec, out, list(tasks)),
                    deps=deps,
                    gpus=1.0,
                    done=functools.partial(model_analyses_done, model, spec, out, list(tasks)),
                )
            )
    evals = tuple(u.id for u in units if u.kind in ("eval", "analysis"))
    report_args = (work, spec, out, list(tasks))
    units.append(Unit(REPORT_UNIT, "report", report_unit, report_args, deps=evals))
    return units


def projected_costs(
    spec: StudySpec,
    models: Sequence[StudyModel],
    throughput: str | None,
    plan_for: str | None = None,
    num_processes: int | None = None,
) -> dict[str, float | None]:
    """Each run's projected seconds from the training planner (empty without figures)."""
    if not throughput:
        return {}
    from hf_posbias.training.matrix import plan_runs

    trained = [m for m in models if m.trained]
    runs = [run_settings(spec, m) for m in trained]
    plans = plan_runs(runs, num_processes=num_processes, plan_for=plan_for, throughput=throughput)
    return {m.name: p.projected_seconds for m, p in zip(trained, plans)}


def folder_units(
    out: str | Path, spec: StudySpec, tasks: Sequence[StudyTask], work: StudyWork
) -> list[Unit]:
    """Every unit of the study folder ``out`` (all shards), for ``posbias study status``."""
    return study_units(spec, out, study_models(spec, out), tasks, work)


def dry_run_tasks(spec: StudySpec) -> list[StudyTask]:
    """The study's tasks for a dry run: resolved when they are here, else by their names."""
    from hf_posbias.errors import PosbiasError
    from hf_posbias.study.layout import resolve_tasks

    try:
        return resolve_tasks(spec.evaluation_tasks)
    except PosbiasError:
        names = [t["task"] if isinstance(t, Mapping) else t for t in spec.evaluation_tasks]
        return [StudyTask(t, Path(t).name, t, "") for t in names]


def executor_plan(
    spec: StudySpec,
    out: str | Path,
    models: Sequence[StudyModel],
    work: StudyWork,
    throughput: str | Path | None = None,
    plan_for: str | None = None,
    num_processes: int | None = None,
) -> list[str]:
    """What ``--dry-run`` prints for ``--executor ray|slurm``: every unit in the order the
    executor starts them (Slurm: the jobs it would submit, with their sbatch options and
    dependencies)."""
    from hf_posbias.executors.units import schedule_order

    costs = projected_costs(spec, models, str(throughput) if throughput else None, plan_for,
                            num_processes)  # fmt: skip
    order = schedule_order(study_units(spec, out, models, dry_run_tasks(spec), work, costs=costs))
    if spec.executor == "slurm":
        from hf_posbias.executors.slurm import describe_jobs

        return describe_jobs(order, spec)
    lines = []
    for index, unit in enumerate(order, start=1):
        cost = f", projected {unit.cost / 3600:.2f} h" if unit.cost is not None else ""
        g = spec.gpus_per_task
        gpus = ("GPU: auto" if g == "auto" else f"{g:g} GPU") if unit.gpus else "no GPU"
        lines.append(
            f"task {index}/{len(order)}: {unit.id} ({gpus}, {spec.cpus_per_task} CPU{cost})"
        )
    return lines


@dataclass(kw_only=True)
class StudyStatusSettings(Settings):
    """``posbias study status DIR``."""

    folder: str = setting("the study folder (--out of `posbias study run`)", positional=True)


def study_status(folder: str | Path, work: StudyWork) -> list[str]:
    """The state of every unit of the study folder (:mod:`hf_posbias.executors.status`): a count
    per state, then each failed, running and waiting unit (a failure with its last log line)."""
    from hf_posbias.executors.status import status_lines, unit_states
    from hf_posbias.study.layout import resolve_tasks
    from hf_posbias.study.spec import spec_from_folder

    spec = spec_from_folder(folder)
    units = folder_units(folder, spec, resolve_tasks(spec.evaluation_tasks), work)
    return status_lines(unit_states(units, folder))
