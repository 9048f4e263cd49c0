"""Bucketing rules that turn an evidence location into a position bucket (shared by all builders).

Every rule is an :class:`IntervalBuckets`: ordered edges, one label per interval, and which side
of each interval is closed. Each value lands in **exactly one** bucket (or in none, when it lies
outside the outer edges — the builders count those as dropped, never silently):

* ``closed="left"``: ``[e0, e1), [e1, e2), …, [e_{n-1}, e_n]`` — the last interval is closed on
  both sides so that the upper edge itself (relative position 1.0) belongs to a bucket.
* ``closed="right"``: ``[e0, e1], (e1, e2], …`` — the first interval includes its lower edge
  (pandas' ``cut(..., right=True, include_lowest=True)``, which PosIR's analysis code uses).

Predefined rules:

* :data:`THIRDS` — relative position, begin ``[0, 1/3)``, middle ``[1/3, 2/3)``, end ``[2/3, 1]``
  (YHP26's three target positions).
* :func:`relative_buckets` — arbitrary relative edges such as ``"0,0.25,0.5,1"``.
* :data:`SQUAD_POSQ` — absolute character start of the first answer, Z25's six buckets 0–100,
  100–200, 200–300, 300–400, 400–500, 500–3120. Z25's code tests ``lo <= start <= hi``, so a start
  of exactly 100, 200, 300, 400 or 500 is counted in two buckets there. Here the buckets are
  half-open ``[lo, hi)`` with the last one closed ``[500, 3120]``: a start of exactly 100 is
  ``100-200`` only. Bucket sizes therefore differ slightly from Z25's published
  21,220 / 16,527 / 13,667 / 11,514 / 10,089 / 20,384 (whose sum exceeds the 92,749 queries).
* :data:`POSIR_RELATIVE_20` — PosIR's 20 equal relative-position bins (``np.linspace(0, 1, 21)``,
  right-closed, lowest included), applied to the *centre* of the evidence span as PosIR does.
* :data:`POSIR_TOKEN_LENGTH` — PosIR's document token-length groups ``(0, 512]``,
  ``(512, 1024]``, ``(1024, 1536]``, ``(1536, ∞)`` (its ``Q1``–``Q4``, labelled by edges here).

Example:
    >>> from hf_posbias.tasks.bucketing import THIRDS, SQUAD_POSQ, parse_buckets
    >>> THIRDS.assign(0.0), THIRDS.assign(1 / 3), THIRDS.assign(1.0)
    ('begin', 'middle', 'end')
    >>> SQUAD_POSQ.assign(99), SQUAD_POSQ.assign(100), SQUAD_POSQ.assign(3120)
    ('0-100', '100-200', '500-3120')
    >>> parse_buckets("0,0.25,0.5,1").labels
    ('0-0.25', '0.25-0.5', '0.5-1')
    >>> relative_position(30, 40, 100), relative_position(30, 40, 100, anchor="center")
    (0.3, 0.35)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from hf_posbias.errors import InputError
from hf_posbias.positions import POSITIONS

Anchor = Literal["start", "center"]


def _fmt(edge: float) -> str:
    if math.isinf(edge):
        return "inf"
    return f"{edge:g}"


@dataclass(frozen=True)
class IntervalBuckets:
    """Ordered, non-overlapping intervals with labels; :meth:`assign` picks exactly one.

    Attributes:
        edges: ``n + 1`` strictly increasing edges for ``n`` buckets.
        labels: one label per bucket (default ``"lo-hi"``).
        scheme: short name written to ``task.json`` (``bucket_scheme``).
        unit: what is bucketed: ``"relative"`` (position in [0, 1]), ``"chars"`` or ``"tokens"``.
        closed: ``"left"`` (``[lo, hi)``, last closed) or ``"right"`` (``(lo, hi]``, first
            closed).

    Example:
        >>> b = IntervalBuckets((0, 10, 20), scheme="toy", unit="chars")
        >>> b.labels, b.assign(10), b.assign(20), b.assign(21)
        (('0-10', '10-20'), '10-20', '10-20', None)
        >>> IntervalBuckets((0, 10, 20), unit="chars", closed="right").assign(10)
        '0-10'
    """

    edges: tuple[float, ...]
    labels: tuple[str, ...] = ()
    scheme: str = "custom"
    unit: str = "relative"
    closed: Literal["left", "right"] = "left"

    def __post_init__(self) -> None:
        edges = tuple(float(e) for e in self.edges)
        if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
            raise InputError(
                f"bucket edges must be at least two strictly increasing numbers, got "
                f"{[_fmt(e) for e in edges]}"
            )
        if any(math.isnan(e) for e in edges):
            raise InputError("bucket edges must not be NaN")
        if self.unit == "relative" and (edges[0] < 0 or edges[-1] > 1):
            raise InputError(
                f"relative bucket edges must lie in [0, 1], got {[_fmt(e) for e in edges]}"
            )
        if self.closed not in ("left", "right"):
            raise InputError(f"closed must be 'left' or 'right', got {self.closed!r}")
        labels = tuple(self.labels) or tuple(
            f"{_fmt(lo)}-{_fmt(hi)}" for lo, hi in zip(edges, edges[1:])
        )
        if len(labels) != len(edges) - 1:
            raise InputError(f"{len(edges) - 1} buckets need as many labels, got {len(labels)}")
        if len(set(labels)) != len(labels):
            raise InputError(f"bucket labels must be unique, got {list(labels)}")
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "labels", labels)

    def assign(self, value: float) -> str | None:
        """The one bucket holding ``value``; ``None`` when it lies outside the outer edges."""
        v = float(value)
        if math.isnan(v):
            return None
        n = len(self.labels)
        for i, (lo, hi) in enumerate(zip(self.edges, self.edges[1:])):
            if self.closed == "left":
                if lo <= v < hi or (i == n - 1 and v == hi):
                    return self.labels[i]
            elif lo < v <= hi or (i == 0 and v == lo):
                return self.labels[i]
        return None

    def rule(self) -> str:
        """A one-line description of the intervals, written to ``task.json`` ``extra``."""
        parts = []
        n = len(self.labels)
        for i, (label, lo, hi) in enumerate(zip(self.labels, self.edges, self.edges[1:])):
            if self.closed == "left":
                right = "]" if i == n - 1 else ")"
                parts.append(f"{label}=[{_fmt(lo)}, {_fmt(hi)}{right}")
            else:
                left = "[" if i == 0 else "("
                right = ")" if math.isinf(hi) else "]"
                parts.append(f"{label}={left}{_fmt(lo)}, {_fmt(hi)}{right}")
        return f"{self.unit}: " + "; ".join(parts)

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable description (scheme, unit, edges, labels, rule)."""
        return {
            "scheme": self.scheme,
            "unit": self.unit,
            "closed": self.closed,
            "edges": [e if not math.isinf(e) else "inf" for e in self.edges],
            "labels": list(self.labels),
            "rule": self.rule(),
        }


THIRDS = IntervalBuckets((0.0, 1 / 3, 2 / 3, 1.0), labels=POSITIONS, scheme="thirds")
"""Begin ``[0, 1/3)``, middle ``[1/3, 2/3)``, end ``[2/3, 1]`` of relative position."""

SQUAD_POSQ = IntervalBuckets(
    (0, 100, 200, 300, 400, 500, 3120), scheme="squad-posq-char-start", unit="chars"
)
"""Z25's SQuAD-PosQ answer-start buckets: half-open ``[lo, hi)``, the last ``[500, 3120]``."""

SQUAD_POSQ_NOTE = (
    "Buckets are half-open [lo, hi) on the first answer's character start, the last closed "
    "[500, 3120], so each query is in exactly one bucket. Z25's reference code tests "
    "lo <= start <= hi, which puts starts of exactly 100, 200, 300, 400 and 500 in two buckets; "
    "bucket sizes here therefore differ slightly from Z25's 21,220 / 16,527 / 13,667 / 11,514 / "
    "10,089 / 20,384."
)

POSIR_RELATIVE_20 = IntervalBuckets(
    # i * 0.05 (not i / 20): the same floats as np.linspace(0, 1, 21), PosIR's edges, so values
    # on an edge land where PosIR's pd.cut puts them.
    (*(i * (1.0 / 20) for i in range(20)), 1.0),
    scheme="posir-relative-20",
    closed="right",
)
"""PosIR's 20 relative-position bins: ``[0, .05], (.05, .1], …, (.95, 1]``."""

POSIR_TOKEN_LENGTH = IntervalBuckets(
    (0, 512, 1024, 1536, math.inf),
    labels=("0-512", "512-1024", "1024-1536", "1536+"),
    scheme="posir-token-length",
    unit="tokens",
    closed="right",
)
"""PosIR's document token-length groups (its Q1–Q4): ``(0, 512], (512, 1024], (1024, 1536],
(1536, ∞)``; a length of exactly 0 falls in the first (lowest included)."""


def relative_buckets(edges: str | tuple[float, ...] | list[float]) -> IntervalBuckets:
    """Relative-position buckets from edges such as ``"0,0.2,0.5,1"`` (left-closed, last closed).

    Example:
        >>> relative_buckets("0,0.5,1").assign(0.5)
        '0.5-1'
    """
    if isinstance(edges, str):
        try:
            values = tuple(float(p) for p in edges.split(",") if p.strip())
        except ValueError:
            raise InputError(
                f"relative bucket edges must be comma-separated numbers, got {edges!r}"
            ) from None
        spec = edges.replace(" ", "")
    else:
        values = tuple(float(v) for v in edges)
        spec = ",".join(_fmt(v) for v in values)
    return IntervalBuckets(values, scheme=f"relative:{spec}")


def parse_buckets(spec: str | IntervalBuckets) -> IntervalBuckets:
    """A rule from a CLI string: ``thirds``, ``posir20`` or relative edges ``0,0.25,0.5,1``.

    Example:
        >>> parse_buckets("thirds") is THIRDS
        True
    """
    if isinstance(spec, IntervalBuckets):
        return spec
    name = spec.strip().lower()
    if name == "thirds":
        return THIRDS
    if name in ("posir20", "posir-relative-20"):
        return POSIR_RELATIVE_20
    if "," in name:
        return relative_buckets(name)
    raise InputError(
        f"unknown bucket scheme {spec!r}: use 'thirds', 'posir20' or relative edges "
        "like '0,0.25,0.5,1'"
    )


def relative_position(start: int, end: int, doc_length: int, anchor: Anchor = "start") -> float:
    """Where the evidence lies in its document, in [0, 1].

    ``anchor="start"`` uses the evidence's first character (YHP26's begin/middle/end reading);
    ``"center"`` the midpoint of ``[start, end]`` clipped to the document (PosIR's analysis).

    Example:
        >>> relative_position(0, 10, 40), relative_position(0, 10, 40, "center")
        (0.0, 0.125)
    """
    if doc_length <= 0:
        raise InputError(f"document length must be positive, got {doc_length}")
    if anchor == "start":
        point = float(start)
    elif anchor == "center":
        point = min((start + end) / 2.0, float(doc_length))
    else:
        raise InputError(f"anchor must be 'start' or 'center', got {anchor!r}")
    return min(max(point / doc_length, 0.0), 1.0)
