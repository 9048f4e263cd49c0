"""Controlled sampling: training sets with a chosen begin:middle:end distribution.

From the retained pool (verified candidates, ``retained`` true), every configuration takes the
same number of examples per length bin — the **budget** — split over positions by its ratio:
``floor(budget × w_pos / Σw)`` per (bin, position) cell. Concentrated configurations (B, M, E)
take the whole budget from one position; uniform takes ``budget // 3`` per position (YHP26:
8,189 → 2,729). By default the budget is the smallest (bin, position) cell over the bins used,
so every configuration is drawn from the same budget and configurations are comparable.

Draws are deterministic: each cell's rows are sorted by ``candidate_id`` and shuffled with a
generator seeded by ``(seed, bin, position)``; a configuration takes a prefix of that order. So
cells do not influence each other, and with one seed the uniform set's begin examples are a
subset of the begin set's.

Example:
    >>> from hf_posbias.sampling.configs import UNIFORM
    >>> from hf_posbias.sampling.draw import sample_training_set
    >>> pool = [{"candidate_id": f"d{i}::{p}", "doc_id": f"d{i}", "query": "q", "positive": "t",
    ...          "length_bin": "256-512", "target_position": p, "margin": 0.5, "retained": True}
    ...         for i in range(6) for p in ("begin", "middle", "end")]
    >>> rows, report = sample_training_set(pool, UNIFORM)
    >>> report.budget, len(rows), report.counts["256-512"]
    (6, 6, {'begin': 2, 'middle': 2, 'end': 2})
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_posbias.corpus.documents import bin_sort_key
from hf_posbias.errors import BudgetError, InputError
from hf_posbias.jsonable import JsonRecord
from hf_posbias.positions import POSITIONS
from hf_posbias.sampling.configs import PositionConfig
from hf_posbias.setting_values import at_least
from hf_posbias.settings import check_number, setting_label

TRAINING_COLUMNS: tuple[str, ...] = (
    "query",
    "positive",
    "doc_id",
    "length_bin",
    "target_position",
    "candidate_id",
    "margin",
)
"""Columns of a training set (CONTRIBUTING "Training sets"), in this order."""


@dataclass
class SampleReport(JsonRecord):
    """What one configuration took, from where, and what was left out and why."""

    config: str
    distribution: str
    seed: int
    budget: int
    budget_source: str
    bins_used: list[str]
    bins_excluded: dict[str, str]
    available: dict[str, dict[str, int]]
    counts: dict[str, dict[str, int]]
    total: int
    pool_rows: int
    not_retained_skipped: int
    min_cell: int
    notes: list[str] = field(default_factory=list)

    def summary_lines(self) -> list[str]:
        """Human-readable lines for the CLI stage report."""
        lines = [
            f"sample: config {self.config} (b:m:e = {self.distribution}), seed {self.seed}",
            f"  budget per bin: {self.budget:,} ({self.budget_source})",
            f"  pool: {self.pool_rows:,} rows, {self.not_retained_skipped:,} not retained skipped",
        ]
        for label in self.bins_used:
            cell = self.counts[label]
            avail = self.available[label]
            lines.append(
                f"  bin {label}: "
                + " / ".join(f"{p} {cell[p]:,} of {avail[p]:,}" for p in POSITIONS)
            )
        for label, reason in self.bins_excluded.items():
            lines.append(f"  WARNING bin {label} excluded: {reason}")
        lines.extend(f"  WARNING {note}" for note in self.notes)
        lines.append(f"  total: {self.total:,}")
        return lines


TINY_TRAINING_SET = 100
"""Rows under which a training set is reported as tiny (a warning, not an error: the demo and
the tests train on small sets on purpose)."""


CELL_ROWS = at_least(1)
"""What ``--budget`` and ``--min-cell`` count: rows of one (bin, position) cell."""


def check_sampling_options(budget: Any = None, min_cell: Any = 1) -> None:
    """Refuse a budget or minimum cell size that is not a whole number of rows >= 1 (one line;
    the library's own check of what :class:`~hf_posbias.pipeline.stage_settings.SampleSettings`
    declares).

    Example:
        >>> check_sampling_options(budget=0)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: budget must be >= 1, got 0
    """
    for name, value in (("budget", budget), ("min_cell", min_cell)):
        if value is None and name == "budget":
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value != int(value)
        ):
            raise InputError(f"{setting_label(name)} must be a whole number, got {value!r}")
        check_number(name, value, CELL_ROWS)


def _cell_order(cell: list[tuple[str, int]], seed: int, length_bin: str, position: str) -> list:
    # A cell is (candidate_id, row index) pairs. Sorted first so the draw never depends on the
    # pool's row order; string seeds are hashed deterministically by `random` (independent of
    # PYTHONHASHSEED).
    ordered = sorted(cell, key=lambda r: str(r[0]))
    random.Random(f"{seed}|{length_bin}|{position}").shuffle(ordered)
    return ordered


def _columns(pool_rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> Iterable[Any]:
    """The pool restricted to ``columns`` where it is read lazily (a parquet pool reads only
    them); a list as it is."""
    select = getattr(pool_rows, "select", None)
    names = set(getattr(pool_rows, "column_names", ()))
    if select is None:
        return pool_rows
    return select([c for c in columns if c in names])


def sample_training_set(
    pool_rows: Sequence[dict[str, Any]],
    config: PositionConfig | str,
    *,
    budget: int | None = None,
    seed: int = 42,
    min_cell: int = 1,
) -> tuple[list[dict[str, Any]], SampleReport]:
    """Draw one training configuration from the retained pool.

    Args:
        pool_rows: scored pool rows (rows with ``retained`` false are skipped and counted).
        config: a :class:`PositionConfig` or its spelling (``"uniform"``, ``"50:25:25"`` …).
        budget: examples per length bin; default = the smallest (bin, position) cell over the
            bins used (the same for every configuration of one pool).
        seed: the draw's seed.
        min_cell: bins whose smallest cell holds fewer retained rows are excluded (reported).

    Returns:
        Training rows (:data:`TRAINING_COLUMNS`, ordered by bin, position, candidate_id) and the
        report. Raises :class:`BudgetError` naming the first cell a given budget cannot meet.
    """
    check_sampling_options(budget, min_cell)
    return draw_training_set(pool_rows, config, budget=budget, seed=seed, min_cell=min_cell)


def draw_training_set(
    pool_rows: Sequence[dict[str, Any]],
    config: PositionConfig | str,
    *,
    budget: int | None,
    seed: int,
    min_cell: int,
) -> tuple[list[dict[str, Any]], SampleReport]:
    """:func:`sample_training_set` for options already checked once (by the settings of
    ``posbias data sample``/``build``, which draw every configuration with the same options)."""
    spec = PositionConfig.parse(config)
    if not pool_rows:
        raise InputError("the pool is empty: nothing to sample")

    # First pass, over four light columns: each retained row's id and index per cell (about
    # 100 bytes a row). The chosen rows' training columns are read in a second pass.
    cells: dict[str, dict[str, list[tuple[str, int]]]] = {}
    skipped = 0
    n_rows = 0
    for index, row in enumerate(_columns(pool_rows, (*TRAINING_COLUMNS, "retained"))):
        n_rows += 1
        missing = [c for c in TRAINING_COLUMNS if c not in row]
        if missing:
            raise InputError(
                f"pool row {row.get('candidate_id', '?')!r} lacks column(s) {', '.join(missing)}: "
                "sample from a verified pool"
            )
        if row["target_position"] not in POSITIONS:
            raise InputError(
                f"pool row {row['candidate_id']!r}: unknown target_position "
                f"{row['target_position']!r}"
            )
        # Bins present in the pool with no retained row at all still need reporting.
        bin_cells = cells.setdefault(str(row["length_bin"]), {p: [] for p in POSITIONS})
        if not row.get("retained", True):
            skipped += 1
            continue
        bin_cells[row["target_position"]].append((str(row["candidate_id"]), index))

    labels = sorted(cells, key=bin_sort_key)
    available = {b: {p: len(cells[b][p]) for p in POSITIONS} for b in labels}
    bins_used: list[str] = []
    bins_excluded: dict[str, str] = {}
    for label in labels:
        small_pos = min(POSITIONS, key=lambda p: available[label][p])
        small = available[label][small_pos]
        if small < min_cell:
            bins_excluded[label] = (
                f"cell ({label}, {small_pos}) has {small} retained examples "
                f"(minimum per cell: {min_cell})"
            )
        else:
            bins_used.append(label)
    if not bins_used:
        raise InputError(
            "no length bin has at least "
            f"{min_cell} retained example(s) in every position: "
            + "; ".join(f"{b}: {r}" for b, r in bins_excluded.items())
        )

    if budget is None:
        # YHP26 §3's rule: the smallest cell over the bins used (over all three positions,
        # whatever this configuration's ratio) so every configuration gets the same budget.
        label, pos = min(
            ((b, p) for b in bins_used for p in POSITIONS),
            key=lambda bp: (available[bp[0]][bp[1]], bin_sort_key(bp[0]), POSITIONS.index(bp[1])),
        )
        budget = available[label][pos]
        source = f"auto: smallest cell ({label}, {pos})"
    else:
        budget = int(budget)
        source = "given"

    need = spec.counts(budget)
    for label in bins_used:
        for pos in POSITIONS:
            if need[pos] > available[label][pos]:
                raise BudgetError(
                    f"cell ({label}, {pos}) has {available[label][pos]} retained examples, "
                    f"budget needs {need[pos]} (config {spec.name}, budget {budget} per bin)"
                )

    counts: dict[str, dict[str, int]] = {}
    drawn: dict[str, dict[str, list[tuple[str, int]]]] = {}
    for label in bins_used:
        counts[label], drawn[label] = {}, {}
        for pos in POSITIONS:
            chosen = _cell_order(cells[label][pos], seed, label, pos)[: need[pos]]
            counts[label][pos] = len(chosen)
            drawn[label][pos] = sorted(chosen, key=lambda r: r[0])
    wanted = {index for cell in drawn.values() for chosen in cell.values() for _, index in chosen}
    records: dict[int, dict[str, Any]] = {}
    for index, row in enumerate(_columns(pool_rows, TRAINING_COLUMNS)):
        if index in wanted:
            record = {c: row[c] for c in TRAINING_COLUMNS}
            record["margin"] = float(record["margin"])
            record["length_bin"] = str(record["length_bin"])
            records[index] = record
    out = [
        records[index] for label in bins_used for pos in POSITIONS for _, index in drawn[label][pos]
    ]

    notes = []
    zero = [p for p in POSITIONS if need[p] == 0 and spec.weights[POSITIONS.index(p)] > 0]
    if zero:
        notes.append(f"budget {budget} gives 0 examples to weighted position(s) {', '.join(zero)}")
    if len(out) < TINY_TRAINING_SET:
        notes.append(
            f"tiny training set: {len(out):,} rows (budget {budget:,} per bin x "
            f"{len(bins_used)} bin(s)), under {TINY_TRAINING_SET} rows: a fine-tune on it measures "
            "noise; YHP26's sets hold 8,189 per bin (more documents, or a larger pool at a lower δ)"
        )
    report = SampleReport(
        config=spec.name,
        distribution=spec.distribution,
        seed=seed,
        budget=budget,
        budget_source=source,
        bins_used=bins_used,
        bins_excluded=bins_excluded,
        available=available,
        counts=counts,
        total=len(out),
        pool_rows=n_rows,
        not_retained_skipped=skipped,
        min_cell=min_cell,
        notes=notes,
    )
    return out, report
