"""Level-aware and trend statistics of per-position scores (formulas in ``docs/evaluation.md``).

PSI is scale-free: PSI 0.1 at nDCG@10 0.9 and at 0.3 read the same. Three statistics add the
level and the shape:

- :func:`~hf_posbias.statistics.psi.harmonic_mean` of the per-position nDCG@10 — low when
  any position is low, so it rewards a model that is good *everywhere*;
  ``H = n / Σ 1/s_b`` (0 when some ``s_b`` is 0);
- :func:`position_trend` — least-squares slope and R² of per-query nDCG@10 on the evidence's
  relative position ``x ∈ [0, 1]`` (0 = start of the document), and Spearman's ρ with its
  p-value (PosIR's question: does quality fall as evidence moves back?);
- :func:`psi_by_length` — PSI within document-length strata (tertiles of the evaluated queries'
  document length in characters), so a length effect is not read as a position effect.

Each has a percentile bootstrap interval over queries (:func:`trend_intervals`; the harmonic
mean's comes with :func:`~hf_posbias.statistics.uncertainty.bootstrap_positions`).

Example:
    >>> from hf_posbias.statistics.psi import harmonic_mean
    >>> harmonic_mean([0.5, 0.5]), harmonic_mean([1.0, 0.0])
    (0.5, 0.0)
    >>> t = position_trend([0.0, 0.5, 1.0], [0.9, 0.6, 0.3])
    >>> round(t["slope"], 3), round(t["r2"], 3), round(t["spearman_rho"], 3)
    (-0.6, 1.0, -1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

TREND_KEYS = ("slope", "r2", "spearman_rho", "spearman_p")
LENGTH_STRATA = ("short", "medium", "long")


def _slope_r2(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise least-squares slope and R² of ``y`` on ``x`` (2-D arrays, one fit per row)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    sxx = (xc * xc).sum(axis=-1)
    syy = (yc * yc).sum(axis=-1)
    sxy = (xc * yc).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(sxx > 0, sxy / np.where(sxx > 0, sxx, 1.0), np.nan)
        r2 = np.where((sxx > 0) & (syy > 0), sxy * sxy / (sxx * syy), np.nan)
    return slope, r2


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (rx * ry).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def _finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def position_trend(x: Sequence[float], y: Sequence[float]) -> dict[str, float | None]:
    """``{slope, r2, spearman_rho, spearman_p, n_queries}`` of ``y`` on ``x``.

    Undefined values (fewer than 3 queries, constant ``x`` or ``y``) are ``None``.
    """
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    out: dict[str, float | None] = dict.fromkeys(TREND_KEYS)
    out["n_queries"] = int(xa.size)
    if xa.size < 3:
        return out
    slope, r2 = _slope_r2(xa[None], ya[None])
    rho = float(_spearman_rows(xa[None], ya[None])[0])
    out["slope"], out["r2"] = _finite_or_none(slope[0]), _finite_or_none(r2[0])
    out["spearman_rho"] = _finite_or_none(rho)
    if np.isfinite(rho):
        from scipy.stats import spearmanr

        out["spearman_p"] = _finite_or_none(spearmanr(xa, ya).pvalue)
    return out


def trend_intervals(
    x: Sequence[float],
    y: Sequence[float],
    *,
    n_resamples: int,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict[str, float] | None]:
    """Percentile bootstrap intervals (queries resampled) of slope, R² and Spearman's ρ.

    Example:
        >>> ci = trend_intervals([0, .2, .4, .6, .8, 1], [1, .9, .7, .6, .2, .1], n_resamples=200)
        >>> ci["slope"]["low"] < ci["slope"]["estimate"] < ci["slope"]["high"] < 0
        True
    """
    from hf_posbias.statistics.uncertainty import _percentiles

    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    point = position_trend(xa, ya)
    out: dict[str, dict[str, float] | None] = {k: None for k in TREND_KEYS[:3]}
    if xa.size < 3:
        return out
    idx = np.random.default_rng(seed).integers(0, xa.size, (n_resamples, xa.size))
    slope, r2 = _slope_r2(xa[idx], ya[idx])
    draws = {"slope": slope, "r2": r2, "spearman_rho": _spearman_rows(xa[idx], ya[idx])}
    for key, values in draws.items():
        estimate = point[key]
        if estimate is None:
            continue
        low, high = _percentiles(values, confidence)
        out[key] = {"estimate": float(estimate), "low": low, "high": high}
    return out


def length_strata(lengths: Sequence[int]) -> tuple[float, float]:
    """Tertile cut points of document lengths (``short`` ≤ first < ``medium`` ≤ second <
    ``long``)."""
    values = np.asarray([v for v in lengths if v > 0], dtype=float)
    if values.size == 0:
        return (0.0, 0.0)
    low, high = np.quantile(values, [1 / 3, 2 / 3])
    return float(low), float(high)


def stratum_of(length: int, cuts: tuple[float, float]) -> str | None:
    """The length stratum of one document length (``None`` for an unknown length ≤ 0)."""
    if length <= 0:
        return None
    return LENGTH_STRATA[0] if length <= cuts[0] else LENGTH_STRATA[1 + (length > cuts[1])]


def psi_by_length(
    rows: Sequence[Mapping[str, Any]],
    *,
    n_resamples: int | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """PSI (and per-bucket nDCG@10) within document-length tertiles of per-query rows.

    Rows need ``bucket``, ``doc_length`` and ``ndcg_at_10``; strata with fewer than two
    non-empty buckets have ``psi = None``. With ``n_resamples`` each stratum gets its bootstrap
    interval (``psi_interval``).

    Example:
        >>> rows = [{"query_id": f"q{i}", "bucket": "ab"[i % 2], "doc_length": 10 * (i + 1),
        ...          "ndcg_at_10": 1.0 if i % 2 == 0 else 0.5} for i in range(12)]
        >>> out = psi_by_length(rows)
        >>> sorted(out), out["short"]["psi"]
        (['long', 'medium', 'short'], 0.5)
    """
    cuts = length_strata([int(r["doc_length"]) for r in rows])
    strata = {}
    for r in rows:
        stratum = stratum_of(int(r["doc_length"]), cuts)
        if stratum is not None:
            strata[str(r["query_id"])] = stratum
    out = psi_by_strata(rows, strata, order=LENGTH_STRATA, n_resamples=n_resamples, seed=seed)
    for stratum, entry in out.items():
        cut = None if stratum == "long" else cuts[LENGTH_STRATA.index(stratum)]
        out[stratum] = {"n_queries": entry["n_queries"], "max_doc_length": cut, **entry}
    return out


def psi_by_strata(
    rows: Sequence[Mapping[str, Any]],
    strata: Mapping[str, str],
    *,
    order: Sequence[str],
    n_resamples: int | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """PSI (and per-bucket nDCG@10) within given strata of per-query rows.

    Rows need ``query_id``, ``bucket`` and ``ndcg_at_10``; ``strata`` maps a query id to its
    stratum (queries without one are left out); ``order`` lists the strata to report. Each
    stratum holds ``n_queries``, ``ndcg_at_10`` per bucket, ``psi`` (``None`` with fewer than
    two non-empty buckets) and, with ``n_resamples``, ``psi_interval`` (``{low, high}``).

    Example:
        >>> rows = [{"query_id": "a", "bucket": "x", "ndcg_at_10": 1.0},
        ...         {"query_id": "b", "bucket": "y", "ndcg_at_10": 0.25}]
        >>> psi_by_strata(rows, {"a": "s", "b": "s"}, order=["s", "t"])["s"]["psi"]
        0.75
    """
    from hf_posbias.statistics.psi import psi
    from hf_posbias.statistics.uncertainty import bootstrap_positions

    grouped: dict[str, dict[str, dict[str, float]]] = {}
    for r in rows:
        stratum = strata.get(str(r["query_id"]))
        if stratum is not None:
            bucket = grouped.setdefault(stratum, {}).setdefault(str(r["bucket"]), {})
            bucket[str(r["query_id"])] = float(r["ndcg_at_10"])
    out: dict[str, dict[str, Any]] = {}
    for stratum in order:
        per_bucket = grouped.get(stratum)
        if not per_bucket:
            continue
        means = {b: float(np.mean(list(v.values()))) for b, v in per_bucket.items()}
        defined = len(means) > 1 and max(means.values()) > 0
        entry: dict[str, Any] = {
            "n_queries": sum(len(v) for v in per_bucket.values()),
            "ndcg_at_10": means,
            "psi": psi(means) if defined else None,
            "psi_interval": None,
        }
        if defined and n_resamples:
            ci = bootstrap_positions(per_bucket, n_resamples=n_resamples, seed=seed).psi
            entry["psi_interval"] = None if ci is None else {"low": ci.low, "high": ci.high}
        out[stratum] = entry
    return out
