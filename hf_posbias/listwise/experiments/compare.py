"""Two input-position curves on the same queries: did the fine-tune move the curve?

``posbias listwise compare-tests A B`` reads two ``posbias listwise test`` folders (their
``per_query.jsonl``), checks they hold the same k, positions and queries, and compares B
against A with the evaluation side's paired test of per-query rows
(:func:`~hf_posbias.evaluation.compare.compare_per_query`, the one behind ``posbias compare``,
with ``paired=True``: every query is scored at every position, so resampling and swaps are
drawn per query and shared by the positions). Δ = B − A per input position, for the mean
over positions and for PSI, each with a percentile interval and a two-sided p-value. The
before/after table prints both curves with their own intervals (from each run's
``positions.json``) and Δ.

Example:
    >>> a = [{"query_id": q, "position": p, "ndcg_at_10": s}
    ...      for q, s1, s2 in [("q1", 1.0, 0.2), ("q2", 0.9, 0.1)] for p, s in ((1, s1), (2, s2))]
    >>> b = [dict(r, ndcg_at_10=0.6) for r in a]
    >>> cmp = compare_rows(a, b, n_resamples=200, seed=0)
    >>> round(cmp.buckets["2"].delta, 3), round(cmp.psi.delta, 3)
    (0.45, -0.842)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.settings import flag_name
from hf_posbias.statistics.uncertainty import DEFAULT_RESAMPLES, Method, PairedComparison

COMPARISON_FILE = "comparison.json"


def _positions(rows: Sequence[dict[str, Any]]) -> list[str]:
    return sorted({str(r["position"]) for r in rows}, key=int)


def _by_position(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows in input-position order (the order the positions are tested and reported)."""
    return sorted(rows, key=lambda r: int(r["position"]))


def compare_rows(
    rows_a: Sequence[dict[str, Any]],
    rows_b: Sequence[dict[str, Any]],
    *,
    method: Method = "randomization",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedComparison:
    """Paired comparison (Δ = B − A) of two sets of per-query rows (``per_query.jsonl``): the
    evaluation side's :func:`~hf_posbias.evaluation.compare.compare_per_query` with the input
    position as the bucket, once both runs are checked to hold the same positions and queries."""
    from hf_posbias.evaluation.compare import compare_per_query

    a, b = _positions(rows_a), _positions(rows_b)
    if a != b:
        raise InputError(
            f"the two runs test different input positions ({','.join(a)} vs {','.join(b)})"
        )
    queries_a = {str(r["query_id"]) for r in rows_a}
    queries_b = {str(r["query_id"]) for r in rows_b}
    if queries_a != queries_b:
        raise InputError(
            f"the two runs scored different queries ({len(queries_a ^ queries_b)} differ): "
            f"rerun both with the same {flag_name('task')}, {flag_name('max_queries')} and "
            f"{flag_name('seed')}, or compare the shared ones with {flag_name('common_queries')}"
        )
    return compare_per_query(
        _by_position(rows_a),
        _by_position(rows_b),
        bucket="position",
        method=method,
        n_resamples=n_resamples,
        seed=seed,
        paired=True,
    )


def _read_run(folder: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from hf_posbias.rows.readers import read_json, read_rows

    path = Path(folder)
    positions, per_query = path / "positions.json", path / "per_query.jsonl"
    if not positions.is_file() or not per_query.is_file():
        raise InputError(
            f"{path} is not a posbias listwise test folder (needs positions.json and "
            "per_query.jsonl)"
        )
    summary = read_json(positions)
    missing = [k for k in ("positions", "k") if not isinstance(summary, dict) or k not in summary]
    if missing:
        raise InputError(f"{positions}: not a listwise test summary (no {', '.join(missing)})")
    return summary, read_rows(per_query)


def compare_listwise_runs(
    folder_a: str | Path,
    folder_b: str | Path,
    *,
    method: Method = "randomization",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    labels: tuple[str, str] = ("A", "B"),
    common_queries: bool = False,
) -> dict[str, Any]:
    """Compare two test folders; the payload of ``comparison.json`` (see the module docstring).

    ``table`` holds one row per position (both curves with their intervals, Δ, its interval
    and p), then ``mean`` and ``PSI``.
    """
    summary_a, rows_a = _read_run(folder_a)
    summary_b, rows_b = _read_run(folder_b)
    if summary_a.get("k") != summary_b.get("k"):
        raise InputError(
            f"the runs used different k ({summary_a.get('k')} vs {summary_b.get('k')})"
        )
    dropped = {"a": 0, "b": 0}
    if common_queries:
        rows_a, rows_b, dropped = _common(rows_a, rows_b)
        summary_a = _resummarize(summary_a, rows_a, n_resamples, seed)
        summary_b = _resummarize(summary_b, rows_b, n_resamples, seed)
    comparison = compare_rows(rows_a, rows_b, method=method, n_resamples=n_resamples, seed=seed)
    return {
        "a": {"folder": str(folder_a), "label": labels[0], "reranker": summary_a.get("reranker")},
        "b": {"folder": str(folder_b), "label": labels[1], "reranker": summary_b.get("reranker")},
        "k": summary_a.get("k"),
        "task": summary_a.get("task"),
        "queries": len({str(r["query_id"]) for r in rows_a}),
        "queries_left_out": dropped,
        "table": comparison_table(summary_a, summary_b, comparison, labels),
        "comparison": comparison.to_dict(),
    }


def _common(
    rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, int]]:
    """Both runs' rows restricted to the queries both scored, and how many each lost."""
    queries_a = {str(r["query_id"]) for r in rows_a}
    queries_b = {str(r["query_id"]) for r in rows_b}
    shared = queries_a & queries_b
    if not shared:
        raise InputError("the two runs share no query: nothing to compare")
    keep_a = [r for r in rows_a if str(r["query_id"]) in shared]
    keep_b = [r for r in rows_b if str(r["query_id"]) in shared]
    return keep_a, keep_b, {"a": len(queries_a - shared), "b": len(queries_b - shared)}


def _resummarize(
    summary: dict[str, Any], rows: list[dict[str, Any]], n_resamples: int, seed: int
) -> dict[str, Any]:
    """A run's ``positions.json`` recomputed on a subset of its per-query rows."""
    from hf_posbias.listwise.experiments.controlled import summarize_positions_rows

    fresh = summarize_positions_rows(
        rows,
        k=int(summary["k"]),
        reranker=str(summary.get("reranker", "")),
        n_resamples=n_resamples,
        seed=seed,
    )
    return {**summary, **fresh}


def _cell(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None:
        return "undefined"
    if low is None or high is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def comparison_table(
    summary_a: dict[str, Any],
    summary_b: dict[str, Any],
    comparison: PairedComparison,
    labels: tuple[str, str] = ("A", "B"),
) -> list[dict[str, Any]]:
    """Rows of the before/after table: position, A, B (95% CIs), Δ [CI], p.

    Example:
        >>> from hf_posbias.statistics.uncertainty import Difference, PairedComparison
        >>> d = Difference(0.1, 0.0, 0.2, 0.04)
        >>> c = PairedComparison({"1": d}, d, None, {"1": 5}, 0, 0, "bootstrap", 9, .95, 0, True)
        >>> s = {"positions": [{"position": 1, "ndcg_at_10": .5, "ci_low": .4, "ci_high": .6}],
        ...      "mean": .5, "psi": 0.0, "psi_ci": [0.0, 0.0]}
        >>> comparison_table(s, s, c)[0]["Δ (B − A)"]
        '+0.100 [+0.000, +0.200]'
    """
    rows_a = {str(r["position"]): r for r in summary_a["positions"]}
    rows_b = {str(r["position"]): r for r in summary_b["positions"]}
    delta = f"Δ ({labels[1]} − {labels[0]})"

    def diff(d: Any) -> dict[str, Any]:
        if d is None:
            return {delta: "undefined", "p": ""}
        return {delta: f"{d.delta:+.3f} [{d.low:+.3f}, {d.high:+.3f}]", "p": f"{d.p_value:.3g}"}

    table = []
    for position, d in comparison.buckets.items():
        a, b = rows_a[position], rows_b[position]
        table.append(
            {
                "input position": position,
                labels[0]: _cell(a["ndcg_at_10"], a["ci_low"], a["ci_high"]),
                labels[1]: _cell(b["ndcg_at_10"], b["ci_low"], b["ci_high"]),
                **diff(d),
            }
        )
    for what, key, d in (("mean", "mean", comparison.mean), ("PSI", "psi", comparison.psi)):
        ci_a = summary_a.get(f"{key}_ci") or [None, None]
        ci_b = summary_b.get(f"{key}_ci") or [None, None]
        table.append(
            {
                "input position": what,
                labels[0]: _cell(summary_a.get(key), *ci_a),
                labels[1]: _cell(summary_b.get(key), *ci_b),
                **diff(d),
            }
        )
    return table


def compare_from_settings(s: Any) -> tuple[dict[str, Any], Path | None]:
    """``posbias listwise compare-tests`` (its settings,
    :class:`~hf_posbias.listwise.experiments.experiment_settings.ListwiseCompareSettings`): the
    payload of :func:`compare_listwise_runs`, and ``comparison.json`` when ``s.out`` is set."""
    payload = compare_listwise_runs(
        s.run_a,
        s.run_b,
        method=s.method,
        n_resamples=s.n_resamples,
        seed=s.seed,
        labels=(s.label_a, s.label_b),
        common_queries=s.common_queries,
    )
    if not s.out:
        return payload, None
    Path(s.out).mkdir(parents=True, exist_ok=True)
    return payload, write_comparison(s.out, payload)


def write_comparison(out: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``comparison.json`` into ``out`` (a folder) and return its path."""
    from hf_posbias.shards import write_json

    path = Path(out) / COMPARISON_FILE
    write_json(path, payload)
    return path
