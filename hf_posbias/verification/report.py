"""The verification report: YHP26's filtering table (Table 6) and disjoint margin strata.

Computed in one place from scored rows (``margin``, ``target_position``, ``length_bin``): the
verify stage writes it, the CLI prints it, and the pool and training-set cards show its
filtering table (:meth:`VerificationReport.filter_rows`).

Example:
    >>> rows = [{"margin": m, "target_position": p, "length_bin": "256-512"}
    ...         for m, p in [(-0.1, "begin"), (0.05, "middle"), (0.5, "end")]]
    >>> report = VerificationReport.from_rows(rows, delta=0.3)
    >>> [row["filter"] for row in report.filter_rows()]
    ['fails top-rank check (m < 0, removed)', 'm ≥ 0', 'm ≥ 0.1', 'm ≥ 0.2', 'm ≥ 0.3']
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hf_posbias.corpus.documents import bin_position_counts
from hf_posbias.jsonable import JsonRecord
from hf_posbias.positions import POSITIONS
from hf_posbias.setting_values import at_least
from hf_posbias.tables import as_table

DEFAULT_DELTA = 0.3
"""YHP26's consensus-margin threshold δ."""
DELTA = at_least(0)
"""δ's range on every panel; its ceiling is the panel's own (``panel.check_delta``)."""

REPORT_THRESHOLDS: tuple[float, ...] = (0.0, 0.1, 0.2)
"""Margin thresholds of YHP26 Table 6; δ is always added."""


def report_thresholds(delta: float) -> list[float]:
    """YHP26's Table 6 thresholds 0, 0.1, 0.2 plus δ, sorted and unique.

    Example:
        >>> report_thresholds(0.25)
        [0.0, 0.1, 0.2, 0.25]
    """
    return sorted({*REPORT_THRESHOLDS, float(delta)})


def stratum_labels(delta: float) -> list[str]:
    """Disjoint margin strata: ``failed`` (m < 0), ``[a,b)`` between thresholds, ``≥last``.

    Example:
        >>> stratum_labels(0.3)
        ['failed', '[0,0.1)', '[0.1,0.2)', '[0.2,0.3)', '>=0.3']
    """
    t = report_thresholds(delta)
    return ["failed", *(f"[{a:g},{b:g})" for a, b in zip(t, t[1:])), f">={t[-1]:g}"]


def margin_stratum(margin: float, delta: float) -> str:
    """The stratum label of one margin (see :func:`stratum_labels`).

    Example:
        >>> [margin_stratum(m, 0.3) for m in (-0.2, 0.0, 0.15, 0.29, 0.3)]
        ['failed', '[0,0.1)', '[0.1,0.2)', '[0.2,0.3)', '>=0.3']
    """
    t = report_thresholds(delta)
    labels = stratum_labels(delta)
    if margin < t[0]:
        return labels[0]
    for i, (a, b) in enumerate(zip(t, t[1:])):
        if a <= margin < b:
            return labels[i + 1]
    return labels[-1]


def _pct(count: int, total: int) -> float:
    return round(100.0 * count / total, 2) if total else 0.0


def _margin_of(row: Mapping[str, Any]) -> float | None:
    m = row.get("margin")
    if m is None or (isinstance(m, float) and math.isnan(m)):
        return None
    return float(m)


@dataclass
class VerificationReport(JsonRecord):
    """Filtering statistics of one verification run (YHP26 Table 6 and its strata).

    ``cumulative`` rows: ``threshold, count, pct`` (of generated) and per-position counts of
    candidates with ``m ≥ threshold``; ``failed`` = candidates with ``m < 0`` (fail the
    top-rank check); ``unscored`` = rows without a margin (counted, never kept). ``strata``:
    disjoint margin ranges whose counts sum to the scored candidates.
    """

    delta: float
    members: list[dict[str, Any]]
    generated: int
    generated_per_position: dict[str, int]
    failed: dict[str, Any]
    cumulative: list[dict[str, Any]]
    strata: list[dict[str, Any]]
    retained: int
    retained_per_bin: dict[str, dict[str, int]]
    unscored: int = 0
    pairs_total: int = 0
    pairs_scored: int = 0

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[Mapping[str, Any]],
        delta: float = DEFAULT_DELTA,
        members: list[dict[str, Any]] | None = None,
        pairs_total: int = 0,
        pairs_scored: int = 0,
    ) -> VerificationReport:
        """Compute the report from scored rows (``margin``, ``target_position``, ``length_bin``).

        Example:
            >>> rows = [{"margin": m, "target_position": p, "length_bin": "256-512"}
            ...         for m, p in [(-0.1, "begin"), (0.05, "middle"), (0.5, "end")]]
            >>> r = VerificationReport.from_rows(rows, delta=0.3)
            >>> r.failed["count"], r.retained, [s["count"] for s in r.strata]
            (1, 1, [1, 1, 0, 0, 1])
        """
        # One pass, counting: the rows may be a lazy pool of any size (nothing is held).
        thresholds = report_thresholds(delta)
        generated = dict.fromkeys(POSITIONS, 0)
        failed = dict.fromkeys(POSITIONS, 0)
        kept = [dict.fromkeys(POSITIONS, 0) for _ in thresholds]
        strata = {label: dict.fromkeys(POSITIONS, 0) for label in stratum_labels(delta)}
        retained: Counter[tuple[str, str]] = Counter()
        bins: set[str] = set()
        total = unscored = 0
        for row in rows:
            total += 1
            position = row["target_position"]
            generated[position] += 1
            bins.add(str(row.get("length_bin")))
            m = _margin_of(row)
            if m is None:
                unscored += 1
                continue
            if m < 0:
                failed[position] += 1
            for t, cell in zip(thresholds, kept):
                if m >= t:
                    cell[position] += 1
            stratum = strata.get(margin_stratum(m, delta))
            if stratum is not None:
                stratum[position] += 1
            if m >= delta:
                retained[(str(row.get("length_bin")), position)] += 1
        n_failed = sum(failed.values())
        return cls(
            delta=float(delta),
            members=list(members or []),
            generated=total,
            generated_per_position=generated,
            failed={"count": n_failed, "pct": _pct(n_failed, total), **failed},
            cumulative=[
                {"threshold": t, "count": sum(c.values()), "pct": _pct(sum(c.values()), total), **c}
                for t, c in zip(thresholds, kept)
            ],
            strata=[
                {"stratum": label, "count": sum(c.values()), **c} for label, c in strata.items()
            ],
            retained=sum(retained.values()),
            retained_per_bin=bin_position_counts(
                (
                    {"length_bin": label, "target_position": position}
                    for (label, position), n in retained.items()
                    for _ in range(n)
                ),
                bins=bins,
            ),
            unscored=unscored,
            pairs_total=pairs_total,
            pairs_scored=pairs_scored,
        )

    def filter_rows(self) -> list[dict[str, Any]]:
        """YHP26 Table 6 as rows (``filter, retained, %, begin, middle, end``), cumulative.

        The first row counts candidates that fail the top-rank check (``m < 0``, removed); rows
        without a margin get their own row instead of disappearing.
        """
        table: list[dict[str, Any]] = [
            {
                "filter": "fails top-rank check (m < 0, removed)",
                "retained": self.failed["count"],
                "%": self.failed["pct"],
            }
        ]
        if self.unscored:
            table.append(
                {
                    "filter": "no margin (not scored, removed)",
                    "retained": self.unscored,
                    "%": _pct(self.unscored, self.generated),
                }
            )
        for row in self.cumulative:
            table.append(
                {
                    "filter": f"m ≥ {row['threshold']:g}",
                    "retained": row["count"],
                    "%": row["pct"],
                    **{p: row[p] for p in POSITIONS},
                }
            )
        return table

    def strata_rows(self) -> list[dict[str, Any]]:
        """The disjoint margin strata as rows (``margin stratum, candidates, begin, …``)."""
        return [
            {
                "margin stratum": s["stratum"],
                "candidates": s["count"],
                **{p: s[p] for p in POSITIONS},
            }
            for s in self.strata
        ]

    def to_markdown(self) -> str:
        """Markdown tables: filtering (cumulative), margin strata, retained per bin × position."""
        retained = {
            label: {**cell, "total": sum(cell.values())}
            for label, cell in self.retained_per_bin.items()
        }
        parts = [
            f"Verification panel: {', '.join(self._member_labels())}; δ = {self.delta:g}",
            as_table(self.filter_rows()).to_markdown(),
            as_table(self.strata_rows()).to_markdown(),
            f"Retained (m ≥ {self.delta:g}) per length bin:",
            as_table(retained, index_name="length bin").to_markdown(),
        ]
        return "\n\n".join(parts) + "\n"

    def _member_labels(self) -> list[str]:
        return [f"{m.get('name')} ({m.get('normalization')})" for m in self.members]

    def summary_lines(self) -> list[str]:
        """Human-readable lines for the CLI stage report."""
        lines = [
            f"verify: panel {', '.join(self._member_labels()) or '?'}; delta {self.delta:g}",
            f"  generated: {self.generated:,} "
            + " / ".join(f"{p} {self.generated_per_position.get(p, 0):,}" for p in POSITIONS),
            f"  fails top-rank check (m < 0): {self.failed['count']:,} ({self.failed['pct']:.2f}%)",
        ]
        if self.unscored:
            lines.append(f"  WARNING no margin (not scored): {self.unscored:,}")
        for row in self.cumulative:
            lines.append(
                f"  m >= {row['threshold']:g}: {row['count']:,} ({row['pct']:.2f}%) "
                + " / ".join(f"{p} {row[p]:,}" for p in POSITIONS)
            )
        lines.append(f"  retained (m >= {self.delta:g}): {self.retained:,}")
        for label, cell in self.retained_per_bin.items():
            lines.append(f"  bin {label}: " + " / ".join(f"{p} {cell[p]:,}" for p in POSITIONS))
        if self.pairs_total:
            lines.append(
                f"  pairs: {self.pairs_total:,} (query, segment) cells, "
                f"{self.pairs_scored:,} unique pairs scored per member"
            )
        return lines
