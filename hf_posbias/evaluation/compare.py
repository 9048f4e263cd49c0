"""``posbias compare RUN_A RUN_B``: is B's position profile really different from A's?

Two ``posbias evaluate`` run folders of the same task (same name, same data fingerprint, same
scoring) are compared on their shared queries with
:func:`~hf_posbias.statistics.uncertainty.paired_comparison` (paired bootstrap or paired
randomization): Δ = B − A per bucket, for the mean and for PSI, each with a percentile interval
and a two-sided p-value. Queries scored by only one run are counted and left out. The test of
two per-query tables, :func:`compare_per_query`, is also the one of
``posbias listwise compare-tests``.

Example:
    >>> from hf_posbias.evaluation.compare import difference_rows
    >>> from hf_posbias.statistics.uncertainty import paired_comparison
    >>> a = {"begin": {"q1": .9, "q2": .8}, "end": {"q3": .5, "q4": .4}}
    >>> b = {"begin": {"q1": .9, "q2": .8}, "end": {"q3": .7, "q4": .6}}
    >>> rows = difference_rows(paired_comparison(a, b, n_resamples=200, seed=0))
    >>> rows[1]["what"], round(rows[1]["Δ (B − A)"], 3)
    ('end', 0.2)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.evaluation.runs.exports import per_bucket_from_table, read_per_query
from hf_posbias.evaluation.summary import EvaluationSummary, read_summaries
from hf_posbias.setting_values import DEFAULT_SEED
from hf_posbias.statistics.uncertainty import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Difference,
    Method,
    PairedComparison,
    paired_comparison,
)

ALPHA = 0.05
"""Significance level of the verdicts printed next to the p-values."""


@dataclass
class RunComparison:
    """One task compared between two runs."""

    task: str
    label_a: str
    label_b: str
    comparison: PairedComparison

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "task": self.task,
            "a": self.label_a,
            "b": self.label_b,
            **self.comparison.to_dict(),
        }


def _same_task(a: EvaluationSummary, b: EvaluationSummary, where_a: str, where_b: str) -> None:
    for field, what in (
        ("task_revision", "task data"),
        ("task_repo_revision", "benchmark revision"),
        ("scoring", "scoring"),
        ("buckets", "buckets"),
    ):
        value_a, value_b = getattr(a, field), getattr(b, field)
        if value_a and value_b and value_a != value_b:
            raise InputError(
                f"{where_a} and {where_b} differ in {what} for task {a.task!r} "
                f"({value_a} vs {value_b}): compare runs of the same task and scoring"
            )


def _pairs(
    run_a: str | Path, run_b: str | Path
) -> list[tuple[EvaluationSummary, EvaluationSummary]]:
    summaries_a = {s.task: s for s in read_summaries(run_a)}
    summaries_b = {s.task: s for s in read_summaries(run_b)}
    shared = [t for t in summaries_a if t in summaries_b]
    if not shared:
        raise InputError(
            f"{run_a} and {run_b} are runs of different tasks "
            f"({', '.join(summaries_a)} vs {', '.join(summaries_b)}): nothing to compare"
        )
    pairs = [(summaries_a[t], summaries_b[t]) for t in shared]
    for a, b in pairs:
        _same_task(a, b, str(run_a), str(run_b))
    return pairs


def compare_per_query(
    rows_a: Sequence[Mapping[str, Any]],
    rows_b: Sequence[Mapping[str, Any]],
    *,
    bucket: str = "bucket",
    paired: bool = False,
    order: Sequence[str] | None = None,
    method: Method = "bootstrap",
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> PairedComparison:
    """Paired comparison (Δ = B − A) of two runs' per-query rows, bucket by bucket: the test
    behind ``posbias compare`` (per-query tables, buckets of evidence position) and
    ``posbias listwise compare-tests`` (``per_query.jsonl``, input positions, ``paired=True``).

    Rows hold the ``bucket`` column, ``query_id`` and ``ndcg_at_10``
    (:func:`~hf_posbias.evaluation.runs.exports.per_bucket_from_table`); ``paired``: every
    query is in every bucket (:func:`~hf_posbias.statistics.uncertainty.paired_comparison`).
    Buckets are tested in the order ``rows_a`` first names them and reported in ``order``
    (default: that order; a bucket ``order`` leaves out is dropped). ``method``,
    ``n_resamples``, ``confidence`` and ``seed``: the test's.

    Example:
        >>> a = [{"bucket": b, "query_id": q, "ndcg_at_10": s}
        ...      for b, q, s in [("end", "q1", .5), ("end", "q2", .4), ("begin", "q3", .9)]]
        >>> b = [dict(r, ndcg_at_10=.6) for r in a]
        >>> cmp = compare_per_query(a, b, order=["begin", "end"], n_resamples=50)
        >>> {bucket: round(d.delta, 2) for bucket, d in cmp.buckets.items()}
        {'begin': -0.3, 'end': 0.15}
    """
    comparison = paired_comparison(
        per_bucket_from_table(rows_a, bucket),
        per_bucket_from_table(rows_b, bucket),
        method=method,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        paired=paired,
    )
    if order is not None:
        kept = [name for name in order if name in comparison.buckets]
        comparison.buckets = {name: comparison.buckets[name] for name in kept}
    return comparison


def compare_runs(
    run_a: str | Path,
    run_b: str | Path,
    *,
    method: Method = "bootstrap",
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> list[RunComparison]:
    """Paired comparison of every task two run folders share (Δ = B − A).

    Raises:
        InputError: a folder without ``summary.json``/per-query tables, runs of different tasks
            (or of the same task name on different data or scoring), bad settings.

    Example:
        >>> # compare_runs("runs/base", "runs/uniform", method="randomization")
    """
    out = []
    for a, b in _pairs(run_a, run_b):
        for summary, where in ((a, run_a), (b, run_b)):
            if not summary.per_query_path:
                raise InputError(f"{where}: {summary.task} has no per-query table (rerun it)")
        comparison = compare_per_query(
            read_per_query(a.per_query_path),  # type: ignore[arg-type]
            read_per_query(b.per_query_path),  # type: ignore[arg-type]
            order=a.buckets,  # the task's bucket order, not the per-query table's
            method=method,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
        out.append(RunComparison(a.task, a.label, b.label, comparison))
    return out


def _row(what: str, diff: Difference | None, n: Any = "") -> dict[str, Any]:
    if diff is None:
        return {"what": what, "queries": n, "Δ (B − A)": None, "interval": "", "p": None, "": ""}
    return {
        "what": what,
        "queries": n,
        "Δ (B − A)": diff.delta,
        "interval": f"[{diff.low:+.4f}, {diff.high:+.4f}]",
        "p": diff.p_value,
        "": "significant" if diff.p_value < ALPHA else "",
    }


def difference_rows(comparison: PairedComparison) -> list[dict[str, Any]]:
    """Table rows: each bucket, then the mean and PSI, with Δ, interval and p-value."""
    rows = [
        _row(bucket, diff, comparison.n_shared.get(bucket, 0))
        for bucket, diff in comparison.buckets.items()
    ]
    rows.append(_row("mean", comparison.mean, sum(comparison.n_shared.values())))
    rows.append(_row("PSI", comparison.psi, sum(comparison.n_shared.values())))
    return rows


def significant(comparison: PairedComparison, alpha: float = ALPHA) -> list[str]:
    """What differs at level ``alpha``: bucket names, ``mean`` and/or ``PSI``.

    Example:
        >>> from hf_posbias.statistics.uncertainty import Difference, PairedComparison
        >>> d = Difference(0.1, 0.05, 0.15, 0.01)
        >>> c = PairedComparison({"a": d}, d, None, {"a": 9}, 0, 0, "bootstrap", 9, .95, 0, False)
        >>> significant(c)
        ['a', 'mean']
    """
    found = [b for b, d in comparison.buckets.items() if d.p_value < alpha]
    if comparison.mean.p_value < alpha:
        found.append("mean")
    if comparison.psi is not None and comparison.psi.p_value < alpha:
        found.append("PSI")
    return found
