"""The Position Sensitivity Index and its companions.

PSI (Zeng et al. 2025) = 1 − min(s) / max(s) over per-position scores ``s`` (nDCG@10 per evidence
position bucket); 0 means position-robust, 1 means the model fails entirely at some position. It
is defined only when max(s) > 0 and must always be reported with the mean score — a model that
is uniformly bad has a low PSI too.

Example:
    >>> from hf_posbias.statistics.psi import psi, summarize_positions
    >>> round(psi([0.5, 0.4, 0.25]), 3)
    0.5
    >>> s = summarize_positions({"begin": 0.5, "middle": 0.4, "end": 0.25})
    >>> (round(s.mean, 4), round(s.psi, 3), s.worst_bucket)
    (0.3833, 0.5, 'end')
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.jsonable import JsonRecord

if TYPE_CHECKING:
    import numpy as np


def _finite(values: Sequence[float]) -> list[float]:
    out = [float(v) for v in values]
    if not out:
        raise InputError("PSI needs at least one per-position score")
    if any(math.isnan(v) or math.isinf(v) for v in out):
        raise InputError(f"per-position scores must be finite numbers, got {out}")
    if any(v < 0 for v in out):
        raise InputError(f"per-position scores must be non-negative, got {out}")
    return out


UNDEFINED_PSI = "PSI is undefined when every per-position score is 0 (max(s) = 0)"
"""Why :func:`psi` has no value; the note a summary records when it reports PSI as ``None``."""


def psi(scores: Sequence[float] | Mapping[str, float]) -> float:
    """Position Sensitivity Index: ``1 − min/max``; raises :class:`InputError` when max is 0."""
    values = _finite(list(scores.values()) if isinstance(scores, Mapping) else list(scores))
    if max(values) <= 0:
        raise InputError(UNDEFINED_PSI)
    import numpy as np

    return float(psi_columns(np.asarray(values, dtype=np.float64)[:, None])[0])


def psi_columns(means: np.ndarray) -> np.ndarray:
    """:func:`psi` of each column of ``means`` (rows = positions), NaN where a column's max is 0:
    the one formula, vectorised for bootstrap replicates.

    Example:
        >>> import numpy as np
        >>> psi_columns(np.array([[0.5, 0.0], [0.25, 0.0]])).tolist()
        [0.5, nan]
    """
    import numpy as np

    top = means.max(axis=0)
    low = means.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(top > 0, 1.0 - low / np.where(top > 0, top, 1.0), np.nan)


def defined_psi(scores: Sequence[float] | Mapping[str, float]) -> float | None:
    """:func:`psi`, or ``None`` where it is undefined (every score 0): the one rule for reports.

    Example:
        >>> defined_psi([0.5, 0.25]), defined_psi([0.0, 0.0])
        (0.5, None)
    """
    values = _finite(list(scores.values()) if isinstance(scores, Mapping) else list(scores))
    return psi(values) if max(values) > 0 else None


def worst_relative_drop(scores: Sequence[float] | Mapping[str, float]) -> float:
    """Largest drop relative to the first position: ``max_i (s_0 − s_i) / s_0`` (0 if none).

    The first bucket is the reference because position bias is, by definition, a preference for
    evidence near the beginning; a model that improves later has a drop of 0.
    """
    values = _finite(list(scores.values()) if isinstance(scores, Mapping) else list(scores))
    if values[0] <= 0:
        return 0.0
    return max(0.0, max((values[0] - v) / values[0] for v in values[1:]) if len(values) > 1 else 0)


@dataclass
class PositionSummary(JsonRecord):
    """Per-position scores with mean, PSI and worst drop; empty buckets listed, not hidden.

    ``psi`` is ``None`` only when the summary was asked to allow an undefined PSI (every score
    0); the callers that record notes then add :data:`UNDEFINED_PSI`.
    """

    scores: dict[str, float]
    mean: float
    psi: float | None
    worst_drop: float
    best_bucket: str
    worst_bucket: str
    empty_buckets: list[str] = field(default_factory=list)


def summarize_positions(
    scores: Mapping[str, float | None],
    empty_buckets: Sequence[str] = (),
    *,
    allow_undefined_psi: bool = False,
) -> PositionSummary:
    """Mean, PSI and worst drop over the buckets that have a score.

    Buckets whose score is ``None`` (no queries) are listed in ``empty_buckets`` and PSI is
    computed over the remaining ones with a warning — never silently. When every score is 0,
    PSI is undefined: an :class:`InputError`, or ``psi=None`` with ``allow_undefined_psi``
    (drop 0, best = worst = the first bucket).

    Example:
        >>> s = summarize_positions({"a": 0.0, "b": 0.0}, allow_undefined_psi=True)
        >>> s.psi, s.mean, s.worst_drop, s.best_bucket, s.worst_bucket
        (None, 0.0, 0.0, 'a', 'a')
    """
    present = {k: float(v) for k, v in scores.items() if v is not None}
    empty = list(empty_buckets) + [k for k, v in scores.items() if v is None]
    if empty:
        warnings.warn(
            f"buckets without queries: {', '.join(empty)}; PSI over the remaining "
            f"{len(present)} bucket(s)",
            stacklevel=2,
        )
    if not present:
        raise InputError("no bucket has a score: nothing to summarise")
    values = list(present.values())
    return PositionSummary(
        scores=present,
        mean=sum(values) / len(values),
        psi=defined_psi(values) if allow_undefined_psi else psi(values),
        worst_drop=worst_relative_drop(values),
        best_bucket=max(present, key=present.__getitem__),
        worst_bucket=min(present, key=present.__getitem__),
        empty_buckets=empty,
    )


def harmonic_mean(values: Any, axis: int = 0) -> Any:
    """Harmonic mean ``n / Σ 1/v`` along ``axis`` (0 where some value is 0; values ≥ 0).

    Example:
        >>> round(harmonic_mean([0.9, 0.3]), 4)
        0.45
    """
    import numpy as np

    arr = np.asarray(values, dtype=float)
    n = arr.shape[axis]
    with np.errstate(divide="ignore"):
        inv = np.where(arr > 0, 1.0 / np.where(arr > 0, arr, 1.0), np.inf)
    out = n / inv.sum(axis=axis)
    return float(out) if np.ndim(out) == 0 else out
