"""Markdown tables: the one writer for every table hf-posbias prints or puts in a card or report.

A table is built from rows (list of dicts, or a nested ``{row_label: {column: value}}``
mapping) by :func:`as_table`, which formats every cell with :func:`format_cell`; or directly as
a :class:`MarkdownTable` when the caller has already formatted its cells (fixed digits, say).
Dataset cards, model cards, stage reports, evaluation reports and the analysis tables all go
through it, so a table looks the same wherever it appears.

Example:
    >>> from hf_posbias.tables import as_table
    >>> print(as_table({"256-512": {"begin": 3, "end": 1200}}, index_name="bin").to_markdown())
    | bin | begin | end |
    |---|---|---|
    | 256-512 | 3 | 1,200 |
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TableLike = Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]
"""A table as a list of row dicts (columns = keys, in first-seen order) or as a nested mapping
``{row_label: {column: value}}`` (e.g. ``{"256-512": {"begin": 10, "middle": 7, "end": 9}}``)."""


@dataclass(frozen=True)
class MarkdownTable:
    """A table with pre-formatted string cells.

    Example:
        >>> print(MarkdownTable(["model", "PSI"], [["base", "0.21"]]).to_markdown())
        | model | PSI |
        |---|---|
        | base | 0.21 |
    """

    columns: list[str]
    rows: list[list[str]]

    def to_markdown(self) -> str:
        """GitHub-flavoured markdown.

        Example:
            >>> print(as_table([{"a": 1, "b": 0.25}]).to_markdown())
            | a | b |
            |---|---|
            | 1 | 0.25 |
        """
        head = "| " + " | ".join(self.columns) + " |"
        rule = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join([head, rule, *body])


def format_cell(value: Any) -> str:
    """Format one table cell: thousands separators, at most 4 decimals for floats.

    Example:
        >>> [format_cell(v) for v in (481236, 0.3, 16.3245678, 1.0, 2e-05, None, True)]
        ['481,236', '0.3', '16.3246', '1.0', '2e-05', '', 'yes']
        >>> format_cell("a|b"), format_cell([1, 2]), format_cell({"k": 0.5})
        ('a\\\\|b', '1, 2', 'k=0.5')
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer():
            return f"{value:,.1f}"
        if abs(value) < 1e-3:
            # 4 fixed decimals would print a small but non-zero value as 0.
            return f"{value:.3g}"
        return f"{value:,.4f}".rstrip("0").rstrip(".")
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={format_cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(format_cell(v) for v in value)
    # A pipe or newline would break the markdown row.
    return str(value).replace("|", "\\|").replace("\n", " ")


def as_table(table: TableLike, *, index_name: str = "") -> MarkdownTable:
    """Turn a list of row dicts or a nested ``{row: {col: value}}`` mapping into a table.

    Example:
        >>> as_table({"256-512": {"begin": 3, "end": 1}}, index_name="bin").columns
        ['bin', 'begin', 'end']
    """
    if isinstance(table, Mapping):
        rows: list[Mapping[str, Any]] = [
            {index_name or "": label, **dict(cells)} for label, cells in table.items()
        ]
    else:
        rows = list(table)
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    return MarkdownTable(
        columns=[str(c) for c in columns],
        rows=[[format_cell(row.get(c)) for c in columns] for row in rows],
    )


def flatten_report(report: Mapping[str, Any], prefix: str = "") -> list[dict[str, Any]]:
    """Flatten a stage report's ``to_dict()`` into ``{"field": …, "value": …}`` rows.

    Nested mappings get dotted keys; lists of scalars are joined. Lists of dicts are skipped
    (tables belong in their own card section) and so are empty values.

    Example:
        >>> flatten_report({"kept": 10, "per_bin": {"256-512": 4}, "examples": {}})
        [{'field': 'kept', 'value': 10}, {'field': 'per_bin.256-512', 'value': 4}]
    """
    rows: list[dict[str, Any]] = []
    for key, value in report.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            rows.extend(flatten_report(value, prefix=f"{name}."))
        elif isinstance(value, list | tuple):
            if value and not any(isinstance(v, Mapping | list | tuple) for v in value):
                rows.append({"field": name, "value": list(value)})
        elif value is not None and value != "":
            rows.append({"field": name, "value": value})
    return rows


__all__ = ["MarkdownTable", "TableLike", "as_table", "flatten_report", "format_cell"]
