"""What each listwise remedy does: the :class:`ListwiseRemedy` objects of ``posbias listwise
remedies``.

A listwise remedy turns the plain reranker's rows of the controlled 1…k test (``none``) into the
rows of its own remedy rows, with their measured cost (:class:`Variant`): the built-ins are slot
calibration (:data:`CALIBRATED`), PermSC aggregation of shuffled lists (:data:`PERMSC`, one row
per m and aggregator) and DebiasFirst checkpoints (:data:`DEBIASFIRST`, one row per
``--checkpoints`` folder). Each says which settings ask for it (``reads``) and adds no row when
they do not. They are looked up in
:data:`~hf_posbias.listwise.experiments.remedies.LISTWISE_REMEDY_REGISTRY`, the same kind of
:class:`~hf_posbias.plugins.Registry` as the bi-encoder remedies: the built-ins, then the
plugins of the entry-point group ``hf_posbias.listwise_remedies`` (docs/extending.md).

Example:
    >>> [name for name, _, _ in permsc_variants([1, 2, 5])]
    ['permsc-borda-m2', 'permsc-kemeny-m2', 'permsc-borda-m5', 'permsc-kemeny-m5']
    >>> [remedy.name for remedy in BUILTIN_LISTWISE_REMEDIES]
    ['calibrated', 'permsc', 'debiasfirst']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from hf_posbias.listwise.experiments.aggregate import borda, kemeny_local_search
from hf_posbias.listwise.experiments.experiment_settings import (
    ControlledTestConfig,
    ListwiseRemediesConfig,
)
from hf_posbias.listwise.experiments.taskio import RerankTask
from hf_posbias.rerankers.base import ListwiseReranker

AGGREGATORS: dict[str, Callable[[Sequence[Sequence[str]]], list[str]]] = {
    "borda": borda,
    "kemeny": kemeny_local_search,
}


def permsc_variants(ms: Sequence[int]) -> list[tuple[str, int, str]]:
    """``(remedy name, m, aggregator)`` of every PermSC row (m = 1 is the plain reranker)."""
    return [(f"permsc-{agg}-m{m}", m, agg) for m in ms if m > 1 for agg in AGGREGATORS]


@dataclass
class Variant:
    """One remedy's per-(query, position) rows and its measured cost."""

    rows: list[dict[str, Any]]
    windows: int
    seconds: float
    windows_per_ranking: float
    extra: dict[str, Any]


class RemedyRun(Protocol):
    """What a remedy reads of the run (:class:`~hf_posbias.listwise.experiments.remedies.
    ListwiseRemedies` has it): the reranker, the task, the output folder, the settings."""

    reranker: ListwiseReranker
    task: RerankTask
    out: Path
    config: ListwiseRemediesConfig
    show_progress: bool
    load_checkpoint: Callable[[str], ListwiseReranker] | None


Rows = list[dict[str, Any]]

VariantsOf = Callable[[RemedyRun, Rows, dict[str, Rows], Variant], dict[str, Variant]]
"""``variants(run, plain, shuffles, none)`` → remedy row name → its rows and cost: ``plain``
the plain reranker's rows, ``shuffles`` each query's reranked shuffles (0 … m−2), ``none`` the
plain reranker's :class:`Variant`."""


@dataclass(frozen=True)
class ListwiseRemedy:
    """One listwise remedy: its name, what it does, the settings that ask for it, and how it
    makes its rows from the plain reranker's."""

    name: str
    help: str
    reads: tuple[str, ...]
    """The settings that ask for it and shape its rows (flags without ``--``)."""
    variants: VariantsOf


def per_ranking(rows: Sequence[dict[str, Any]]) -> float:
    """Windows one ranked list cost, on average over ``rows``."""
    return sum(int(r["windows"]) for r in rows) / max(len(rows), 1)


def _calibrated(
    reranker: ListwiseReranker, plain: list[dict[str, Any]], out: Path, none: Variant
) -> Variant:
    from hf_posbias.listwise.experiments.calibration import calibrated_rows, estimate_slot_priors

    calibration = estimate_slot_priors(reranker, {len(r["input"]) for r in plain}, out)
    started = time.perf_counter()
    rows = calibrated_rows(plain, calibration["priors"])
    seconds = none.seconds + float(calibration["seconds"]) + time.perf_counter() - started
    return Variant(
        rows,
        none.windows + int(calibration["windows"]),
        seconds,
        none.windows_per_ranking,
        {"calibration_windows": calibration["windows"]},
    )


def _permsc(
    plain: list[dict[str, Any]],
    shuffles: dict[str, list[dict[str, Any]]],
    m: int,
    aggregator: str,
    none: Variant,
) -> Variant:
    aggregate = AGGREGATORS[aggregator]
    started = time.perf_counter()
    rows = []
    for row in plain:
        pool = [row["ranking"], *(s["ranking"] for s in shuffles[str(row["query_id"])][: m - 1])]
        rows.append({**row, "ranking": aggregate(pool)})
    used = [s for qs in shuffles.values() for s in qs[: m - 1]]
    return Variant(
        rows,
        none.windows + sum(int(s["windows"]) for s in used),
        none.seconds + sum(float(s["seconds"]) for s in used) + time.perf_counter() - started,
        none.windows_per_ranking * m,
        {"m": m, "aggregator": aggregator},
    )


def _checkpoint(
    reranker: ListwiseReranker,
    task: RerankTask,
    out: Path,
    config: ListwiseRemediesConfig,
    show_progress: bool,
) -> Variant:
    from hf_posbias.listwise.experiments.controlled import run_controlled_test
    from hf_posbias.rows.readers import read_rows

    values = {f.name: getattr(config, f.name) for f in fields(ControlledTestConfig) if f.init}
    test = ControlledTestConfig(**{**values, "calibrate": False})
    folder = out / "checkpoints" / Path(reranker.name).name
    run_controlled_test(reranker, task, folder, test, show_progress=show_progress)
    rows = read_rows(folder / "per_query.jsonl")
    return Variant(
        rows,
        sum(int(r["windows"]) for r in rows),
        sum(float(r["seconds"]) for r in rows),
        per_ranking(rows),
        {"checkpoint": reranker.name},
    )


def _calibrated_variants(
    run: RemedyRun, plain: Rows, shuffles: dict[str, Rows], none: Variant
) -> dict[str, Variant]:
    if not run.config.calibrate:
        return {}
    return {"calibrated": _calibrated(run.reranker, plain, run.out, none)}


def _permsc_variants(
    run: RemedyRun, plain: Rows, shuffles: dict[str, Rows], none: Variant
) -> dict[str, Variant]:
    return {
        name: _permsc(plain, shuffles, m, aggregator, none)
        for name, m, aggregator in permsc_variants(run.config.shuffles)
    }


def _checkpoint_variants(
    run: RemedyRun, plain: Rows, shuffles: dict[str, Rows], none: Variant
) -> dict[str, Variant]:
    return {
        f"debiasfirst:{Path(path).name}": _checkpoint(
            run.load_checkpoint(path),  # type: ignore[misc]
            run.task,
            run.out,
            run.config,
            run.show_progress,
        )
        for path in run.config.checkpoint_paths
    }


CALIBRATED = ListwiseRemedy(
    "calibrated",
    "slot calibration from the recorded scores plus one content-free window per window shape",
    ("calibrate",),
    _calibrated_variants,
)
PERMSC = ListwiseRemedy(
    "permsc",
    "PermSC: the list as given and m-1 seeded shuffles reranked, aggregated by Borda or Kemeny "
    "(one row per m > 1 and aggregator: permsc-borda-m5 …)",
    ("shuffles",),
    _permsc_variants,
)
DEBIASFIRST = ListwiseRemedy(
    "debiasfirst",
    "each DebiasFirst checkpoint tested on the same queries and positions (debiasfirst:<folder>)",
    ("checkpoints",),
    _checkpoint_variants,
)

BUILTIN_LISTWISE_REMEDIES: tuple[ListwiseRemedy, ...] = (CALIBRATED, PERMSC, DEBIASFIRST)
"""The listwise remedies hf-posbias ships, in the order of their rows in ``remedies.json``."""
