"""The study report's inputs: the runs it reads (:class:`Source`: a study folder's or any evaluate
folders' ``summary.json``) and one cell of Table 3 per run (:func:`compute_cell`), for
:mod:`hf_posbias.study.report`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import read_json
from hf_posbias.sampling.configs import PAPER_CONFIG_NAMES
from hf_posbias.tasks.taskdata import PLAIN_BUCKET

SKEWED: tuple[str, ...] = PAPER_CONFIG_NAMES[:3]
"""begin, middle, end: the skewed configurations PSI(uniform) is compared with."""


UNIFORM = PAPER_CONFIG_NAMES[3]


BASE = "base"


@dataclass(frozen=True)
class Source:
    """One evaluation to report: a task's summary of one model in one run folder."""

    task: str
    model: str
    config: str
    pooling: str | None
    summary: Any
    """The :class:`~hf_posbias.evaluation.summary.EvaluationSummary`."""
    per_query: str


@dataclass
class Cell:
    """One (task, model, configuration[, pooling]) of the report, from its per-query table."""

    task: str
    model: str
    config: str
    pooling: str | None
    per_position: dict[str, float]
    mean: float
    psi: float | None
    ci: dict[str, Any]
    n_queries: dict[str, int]
    per_query: str
    ndcg_at_10_all: float = 0.0
    """Plain retrieval: nDCG@10 averaged over every query of the task (each once)."""
    standard: bool = False
    """A standard retrieval task (a plain BEIR/MS MARCO folder: one bucket, no evidence
    positions): reported in the plain-retrieval table only, without PSI or curves."""
    bucket_scheme: str = ""
    """How the queries fall into the buckets the PSI is over (e.g. ``squad-chars [lo, hi)``)."""
    n_buckets: int = 0
    """Buckets the PSI is over."""
    max_seq_length: int | None = None
    """The model's maximum sequence length in tokens."""
    truncated: dict[str, int] = field(default_factory=dict)
    """Per bucket: queries whose evidence starts at or beyond ``max_seq_length``."""
    scoring: str = "default"
    """The per-position protocol (``posbias evaluate --scoring``)."""

    @property
    def row(self) -> str:
        """The table row label: the base, with its pooling in a pooling study."""
        return _row_label({"model": self.model, "pooling": self.pooling})


def _keys(row: Mapping[str, Any]) -> dict[str, str]:
    return {"task": row["task"], "model": _row_label(row)}


def _row_label(row: Mapping[str, Any]) -> str:
    return row["model"] if not row["pooling"] else f"{row['model']} · {row['pooling']}"


def _per_query_path(summary: Any, run_folder: Path) -> str:
    from hf_posbias.evaluation.runs.exports import PER_QUERY_DIRNAME, safe_name

    path = summary.per_query_path
    if path and Path(path).is_file():
        return str(path)
    local = run_folder / PER_QUERY_DIRNAME / f"{safe_name(summary.task)}.parquet"
    if local.is_file():
        return str(local)
    raise InputError(f"{run_folder}: {summary.task} has no per-query table (rerun the evaluation)")


def model_facts(model: str) -> tuple[str, str, str | None]:
    """(base, configuration, pooling) of an evaluated model, from its folder's facts.

    A posbias-trained checkpoint names its base and configuration (``posbias_training.json``);
    a study's untrained base names its base; anything else is a ``base`` under its own name.
    """
    from hf_posbias.cards.checkpoint import load_card_facts
    from hf_posbias.modeling.resolve import model_display_name
    from hf_posbias.study.layout import BASE_MARKER
    from hf_posbias.training.card import BI_ENCODER_CARD, TRAINING_INFO

    folder = Path(model)
    if (folder / TRAINING_INFO).is_file():
        info = load_card_facts(BI_ENCODER_CARD, folder)
        return info.model_name, info.config, info.pooling
    if (folder / BASE_MARKER).is_file():
        facts = read_json(folder / BASE_MARKER)
        return str(facts["base"]), BASE, facts.get("pooling")
    return model_display_name(model), BASE, None


def run_sources(runs: Sequence[str | Path]) -> list[Source]:
    """The evaluations of ``posbias evaluate`` run folders (``posbias study report RUN … --out``).

    Every run must hold the same tasks on the same data: a folder from another task is refused.
    """
    from hf_posbias.evaluation.runs.remedies import remedy_label
    from hf_posbias.evaluation.summary import read_summaries

    if not runs:
        raise InputError("no run folder given")
    sources: list[Source] = []
    tasks: dict[str, tuple[str, str]] = {}
    for run in runs:
        folder = Path(run)
        summaries = read_summaries(folder)
        names = {s.task for s in summaries}
        if tasks and names != set(tasks):
            raise InputError(
                f"{folder} holds task(s) {', '.join(sorted(names))}, the other runs "
                f"{', '.join(sorted(tasks))}: report runs of the same tasks"
            )
        for summary in summaries:
            seen = tasks.setdefault(summary.task, (summary.task_revision, str(run)))
            if seen[0] and summary.task_revision and seen[0] != summary.task_revision:
                raise InputError(
                    f"{folder} and {seen[1]} hold different data for task {summary.task!r}: "
                    "report runs of the same task"
                )
            base, config, pooling = model_facts(summary.model)
            config = remedy_label(config, summary.remedy)
            sources.append(
                Source(
                    summary.task, base, config, pooling, summary, _per_query_path(summary, folder)
                )
            )
    return sources


def study_sources(out: str | Path) -> list[Source]:
    """The evaluations of a study folder (its markers name base, configuration and pooling)."""
    from hf_posbias.evaluation.summary import read_summaries
    from hf_posbias.study.layout import (
        EVAL_MARKER,
        base_label,
        eval_dir,
        resolve_tasks,
        study_models,
    )
    from hf_posbias.study.spec import spec_from_folder

    spec = spec_from_folder(out)
    tasks = resolve_tasks(spec.evaluation_tasks)
    sources = []
    missing = 0
    for model in study_models(spec, out):
        for task in tasks:
            if not task.runs_on(model.base):
                continue
            folder = eval_dir(out, model, task)
            if not (folder / EVAL_MARKER).is_file():
                missing += 1
                continue
            [summary] = read_summaries(folder)
            sources.append(
                Source(
                    summary.task,
                    base_label(model.base),
                    model.config,
                    model.pooling,
                    summary,
                    _per_query_path(summary, folder),
                )
            )
    if missing:
        raise InputError(
            f"{out}: {missing} evaluation(s) of the study are missing: rerun `posbias study run`"
        )
    return sources


def single_pooling(sources: Sequence[Source]) -> list[Source]:
    """Drop the pooling of models evaluated with one pooling only (it is no axis for them)."""
    from dataclasses import replace

    poolings: dict[str, set[str | None]] = {}
    for s in sources:
        if s.config != "off-the-shelf":
            poolings.setdefault(s.model, set()).add(s.pooling)
    return [
        replace(s, pooling=None) if len(poolings.get(s.model, set())) <= 1 else s for s in sources
    ]


def _scores(source: Source) -> dict[str, dict[str, float]]:
    from hf_posbias.evaluation.runs.exports import per_bucket_from_table, read_per_query

    return per_bucket_from_table(read_per_query(source.per_query))


def compute_cell(source: Source, n_resamples: int, seed: int, root: Path | None = None) -> Cell:
    """A cell recomputed from its per-query table."""
    from hf_posbias.statistics.uncertainty import bootstrap_positions

    scores = _scores(source)
    ci = bootstrap_positions(scores, n_resamples=n_resamples, seed=seed)
    every = {(b, q): v for b, per in scores.items() for q, v in per.items()}
    order = [b for b in source.summary.buckets if b in ci.buckets]
    per_query = source.per_query
    if root is not None:
        per_query = os.path.relpath(Path(per_query).resolve(), root.resolve())
    return Cell(
        task=source.task,
        model=source.model,
        config=source.config,
        pooling=source.pooling,
        per_position={b: ci.buckets[b].estimate for b in order},
        mean=ci.mean.estimate,
        psi=None if ci.psi is None else ci.psi.estimate,
        ci={
            "per_position": {b: [ci.buckets[b].low, ci.buckets[b].high] for b in order},
            "mean": [ci.mean.low, ci.mean.high],
            "psi": None if ci.psi is None else [ci.psi.low, ci.psi.high],
        },
        n_queries={b: ci.n_queries[b] for b in order},
        per_query=per_query,
        ndcg_at_10_all=sum(every.values()) / len(every),
        standard=order == [PLAIN_BUCKET],
        bucket_scheme=str(getattr(source.summary, "bucket_scheme", "") or ""),
        n_buckets=len(order),
        max_seq_length=getattr(source.summary, "max_seq_length", None),
        truncated=dict(getattr(source.summary, "truncated", None) or {}),
        scoring=str(getattr(source.summary, "scoring", "default")),
    )
