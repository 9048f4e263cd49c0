"""Arrow data read lazily as sequences of rows, or looked up by id.

:class:`ParquetRows` (parquet files, one row group at a time), :class:`TableRows` (a table in
memory, a batch of rows at a time) and :class:`RowsById` (a corpus held once, as arrow, looked up
by id): a pass over any of them holds one piece's Python objects, whatever the number of rows.
"""

from __future__ import annotations

import bisect
from abc import abstractmethod
from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from itertools import islice
from pathlib import Path
from typing import Any, Generic, TypeVar

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import readable_parquet


class ArrowRows(Sequence[Any]):
    """Arrow data read as a sequence of rows, lazily: the common part of :class:`ParquetRows`
    (files on disk) and :class:`TableRows` (a table in memory).

    Rows are made a piece at a time (:meth:`tables`), as dicts (``convert``: as objects), and
    dropped after use: a pass over everything holds one piece's Python objects, whatever the
    number of rows. The sequence is read-only; it compares equal to a list of the same rows.
    """

    convert: Any = None

    @abstractmethod
    def tables(self) -> Iterator[Any]:
        """The data as ``pyarrow.Table`` pieces, in order."""

    @abstractmethod
    def _slice(self, start: int, stop: int) -> list[Any]:
        """Rows ``start`` to ``stop`` (``0 <= start <= stop <= len``)."""

    @abstractmethod
    def select(self, columns: Sequence[str]) -> ArrowRows:
        """The same rows restricted to ``columns`` (as dicts: no ``convert``)."""

    @property
    def num_rows(self) -> int:
        """The row count (as a ``pyarrow.Table`` names it)."""
        return len(self)

    def _rows(self, table: Any) -> list[Any]:
        rows = table.to_pylist()
        return [self.convert(r) for r in rows] if self.convert is not None else rows

    def __iter__(self) -> Iterator[Any]:
        for table in self.tables():
            yield from self._rows(table)

    def __getitem__(self, index: Any) -> Any:
        n = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._slice(start, max(start, stop))
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"row {index} of {n}")
        return self._slice(i, i + 1)[0]

    def to_pylist(self) -> list[Any]:
        """Every row, as a list (what a caller that must hold them all asks for)."""
        return list(self)

    def __eq__(self, other: object) -> bool:
        # As a list compares: the same rows in the same order.
        if isinstance(other, ArrowRows | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {len(self)} rows>"


class ParquetRows(ArrowRows):
    """The rows of parquet files, in order, read lazily: one row group at a time.

    A stage's input or output of any size is handed on as this instead of a list: ``len`` comes
    from the footers, iteration reads a row group, turns its rows into dicts (``convert``: into
    objects) and drops them, and a slice reads only the row groups it spans (the last one is
    kept, so consecutive slices — a stage's shards — read each row group once). Memory is one
    row group's, whatever the number of rows.

    Example:
        >>> import pathlib, tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.parquet"
        >>> pq.write_table(pa.table({"x": list(range(10)), "y": ["a"] * 10}), path,
        ...                row_group_size=4)
        >>> rows = ParquetRows([path])
        >>> len(rows), rows[5], [r["x"] for r in rows[3:6]], rows.column_names
        (10, {'x': 5, 'y': 'a'}, [3, 4, 5], ['x', 'y'])
        >>> sum(r["x"] for r in rows.select(["x"]))
        45
    """

    def __init__(
        self,
        paths: Sequence[str | Path],
        convert: Any = None,
        columns: Sequence[str] | None = None,
    ) -> None:
        import pyarrow.parquet as pq

        self.paths = [Path(p) for p in paths]
        self.convert = convert
        self.columns = list(columns) if columns is not None else None
        # (file index, row group index, first row, rows) for every row group, in order.
        self._groups: list[tuple[int, int, int, int]] = []
        start = 0
        for f, path in enumerate(self.paths):
            with readable_parquet(path):
                meta = pq.ParquetFile(path).metadata
            for g in range(meta.num_row_groups):
                n = meta.row_group(g).num_rows
                self._groups.append((f, g, start, n))
                start += n
        self._len = start
        self._starts = [first for _, _, first, _ in self._groups]
        self._cached: tuple[int, Any] | None = None

    def __len__(self) -> int:
        return self._len

    @property
    def column_names(self) -> list[str]:
        """The columns read (the first file's schema, or ``columns``)."""
        if self.columns is not None:
            return list(self.columns)
        return list(self.schema().names) if self.paths else []

    def schema(self) -> Any:
        """The files' schemas unified (a column null in one file takes another's type), as
        ``pyarrow`` infers it from the rows (list items named ``item``, no metadata): rows
        written again under it make the file they made first."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        schemas = []
        for path in self.paths:
            with readable_parquet(path):
                schemas.append(pq.read_schema(path))
        schema = pa.unify_schemas(schemas) if schemas else pa.schema([])
        if self.columns is not None:
            schema = pa.schema([schema.field(c) for c in self.columns])
        return pa.schema([f.with_type(_item_lists(f.type)) for f in schema])

    def select(self, columns: Sequence[str]) -> ParquetRows:
        """The same rows restricted to ``columns`` (as dicts: no ``convert``)."""
        return ParquetRows(self.paths, columns=columns)

    def _group(self, k: int) -> Any:
        import pyarrow.parquet as pq

        if self._cached is None or self._cached[0] != k:
            f, g, _, _ = self._groups[k]
            with readable_parquet(self.paths[f]) as path:
                table = pq.ParquetFile(path).read_row_group(g, columns=self.columns)
            self._cached = (k, table)
        return self._cached[1]

    def tables(self) -> Iterator[Any]:
        """Each row group as a ``pyarrow.Table``, in order."""
        for k in range(len(self._groups)):
            table = self._group(k)
            self._cached = None  # a pass over everything keeps nothing behind it
            yield table

    def _slice(self, start: int, stop: int) -> list[Any]:
        out: list[Any] = []
        # The row groups the slice spans, found by bisection on their first rows.
        first_group = max(0, bisect.bisect_right(self._starts, start) - 1)
        for k in range(first_group, len(self._groups)):
            _, _, first, n = self._groups[k]
            if first >= stop:
                break
            if first + n <= start:
                continue
            lo, hi = max(start, first) - first, min(stop, first + n) - first
            out.extend(self._rows(self._group(k).slice(lo, hi - lo)))
        return out


class TableRows(ArrowRows):
    """The rows of an in-memory ``pyarrow.Table``, read lazily: ``batch_rows`` at a time.

    Holds the table (arrow buffers: the text's bytes and an offset per value), never a Python
    object per row: iteration turns one batch into dicts and drops it, indexing and slicing turn
    only the rows asked for. Hand :attr:`table` to arrow-based consumers (a ``datasets.Dataset``)
    instead of copying the rows.

    Example:
        >>> import pyarrow as pa
        >>> rows = TableRows(pa.table({"id": ["a", "b", "c"], "n": [1, 2, 3]}), batch_rows=2)
        >>> len(rows), rows[-1], rows[1:], [r["id"] for r in rows.select(["id"])]
        (3, {'id': 'c', 'n': 3}, [{'id': 'b', 'n': 2}, {'id': 'c', 'n': 3}], ['a', 'b', 'c'])
        >>> rows == [{"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "c", "n": 3}]
        True
    """

    def __init__(self, table: Any, convert: Any = None, batch_rows: int = 1024) -> None:
        self.table = table
        self.convert = convert
        self.batch_rows = batch_rows

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @property
    def column_names(self) -> list[str]:
        """The table's columns."""
        return list(self.table.column_names)

    def select(self, columns: Sequence[str]) -> TableRows:
        """The same rows restricted to ``columns`` (as dicts: no ``convert``; no copy)."""
        return TableRows(self.table.select(list(columns)), batch_rows=self.batch_rows)

    def tables(self) -> Iterator[Any]:
        """The table in slices of ``batch_rows`` rows (views, no copy), in order."""
        for start in range(0, len(self), self.batch_rows):
            yield self.table.slice(start, self.batch_rows)

    def _slice(self, start: int, stop: int) -> list[Any]:
        return self._rows(self.table.slice(start, stop - start))


V = TypeVar("V")


class RowsById(Mapping[str, V], Generic[V]):
    """An arrow table's rows looked up by their ``id`` column (unique strings), lazily: a
    read-only mapping ``id → convert(row dict)``.

    Holds the table (arrow buffers) and an ``id → row number`` dict, no Python object per row's
    content: a lookup turns one row; ``values()``/``items()`` (table order) and :meth:`take`
    (given ids: one arrow ``take`` per batch) turn ``batch_rows`` rows at a time. It compares
    equal to a dict of the same items.

    Example:
        >>> import pyarrow as pa
        >>> docs = RowsById(pa.table({"id": ["b", "a"], "text": ["y", "x"]}), lambda r: r["text"])
        >>> docs["a"], len(docs), "c" in docs, list(docs.items())
        ('x', 2, False, [('b', 'y'), ('a', 'x')])
        >>> list(docs.take(["a", "b"])), docs == {"a": "x", "b": "y"}
        (['x', 'y'], True)
    """

    def __init__(
        self,
        table: Any,
        convert: Any,
        *,
        batch_rows: int = 1024,
        index: dict[str, int] | None = None,
    ) -> None:
        self.rows = TableRows(table, convert, batch_rows)  # read by row number, in batches
        if index is None:
            ids = table.column("id").to_pylist()
            index = {doc_id: row for row, doc_id in enumerate(ids)}
            if len(index) < len(ids):
                dup = next(d for row, d in enumerate(ids) if index[d] != row)
                raise InputError(f"duplicate id {dup!r} in a table looked up by id")
        self._index = index

    @property
    def table(self) -> Any:
        """The ``pyarrow.Table`` (``id`` and the columns ``convert`` reads)."""
        return self.rows.table

    def with_convert(self, convert: Any) -> RowsById[Any]:
        """The same rows (table and index shared, not copied), each turned by ``convert``."""
        return RowsById(self.table, convert, batch_rows=self.rows.batch_rows, index=self._index)

    def __getitem__(self, key: str) -> V:
        return self.rows[self._index[key]]  # an unknown id: KeyError, as a dict's

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)  # in table order: the index was made from the id column

    def __len__(self) -> int:
        return len(self._index)

    def take(self, keys: Iterable[str]) -> Iterator[V]:
        """The values of ``keys``, in their order, read ``batch_rows`` rows at a time."""
        keys = iter(keys)
        while chunk := [self._index[k] for k in islice(keys, self.rows.batch_rows)]:
            yield from self.rows._rows(self.table.take(chunk))

    def values(self) -> ValuesView[V]:
        """The values in table order, turned a batch at a time."""
        return _BatchValues(self)

    def items(self) -> ItemsView[str, V]:
        """``(id, value)`` pairs in table order, turned a batch at a time."""
        return _BatchItems(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {len(self)} rows>"


class _BatchValues(ValuesView[V]):
    _mapping: RowsById[V]

    def __iter__(self) -> Iterator[V]:
        return iter(self._mapping.rows)


class _BatchItems(ItemsView[str, V]):
    _mapping: RowsById[V]

    def __iter__(self) -> Iterator[tuple[str, V]]:
        return zip(self._mapping, self._mapping.rows, strict=True)


def take_values(mapping: Mapping[str, V], keys: Iterable[str]) -> Iterator[V]:
    """``mapping[k]`` for each of ``keys``, in order: a :class:`RowsById` reads them in batches
    (:meth:`RowsById.take`), any other mapping key by key.

    Example:
        >>> list(take_values({"a": 1, "b": 2}, ["b", "a"]))
        [2, 1]
    """
    if isinstance(mapping, RowsById):
        return mapping.take(keys)
    return (mapping[k] for k in keys)


def select_columns(rows: Sequence[Any], columns: Sequence[str]) -> Sequence[Any]:
    """``rows`` restricted to ``columns`` where that saves work (lazy arrow rows read only those
    columns); a list of dicts is returned as it is.

    Example:
        >>> import pyarrow as pa
        >>> list(select_columns(TableRows(pa.table({"id": [1], "t": ["x"]})), ["id"]))
        [{'id': 1}]
        >>> select_columns([{"id": 1, "t": "x"}], ["id"])
        [{'id': 1, 't': 'x'}]
    """
    return rows.select(columns) if isinstance(rows, ArrowRows) else rows


def _item_lists(kind: Any) -> Any:
    """``kind`` with every list's value field named ``item`` (parquet reads it as ``element``)."""
    import pyarrow as pa

    if pa.types.is_list(kind):
        return pa.list_(_item_lists(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_item_lists(f.type)) for f in kind])
    return kind
