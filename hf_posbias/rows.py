"""Reading rows from any source: local files, dataset repo folders and Hub datasets.

The one reader behind the corpus stage, the evaluation builders and training:

- a local file: ``.jsonl`` (one JSON object per line), ``.json`` (a JSON array of objects, or
  JSON Lines), ``.parquet``;
- a local folder laid out like a Hub dataset repo (what :mod:`hf_posbias.publish` writes) or any
  folder ``datasets.load_dataset`` reads;
- a Hub dataset id (``HF_ENDPOINT`` decides which Hub).

Local folders are read through a **content-addressed** ``datasets`` cache
(:func:`local_cache_dir`): ``datasets`` 5.x keys the cache of a local folder by its base name and
YAML ``configs:`` only, so a rewritten folder would otherwise silently yield the old rows.

Every problem is one :class:`~hf_posbias.errors.InputError` line naming the file and the place
(line number, row, or byte offset of text that is not UTF-8).

Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.jsonl"
    >>> _ = path.write_text('{"id": 1}\\n\\n{"id": 2}\\n')
    >>> read_rows(path)
    [{'id': 1}, {'id': 2}]
    >>> [where for where, _ in iter_rows(path)]  # doctest: +ELLIPSIS
    ['...rows.jsonl:1', '...rows.jsonl:3']
"""

from __future__ import annotations

import bisect
import json
import re
from abc import abstractmethod
from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any, Generic, TypeVar

from hf_posbias.errors import BackendError, InputError, PosbiasError, first_line

CARD_FILE = "README.md"
"""The dataset card of a repo folder; its YAML header declares the configs."""

FILE_SUFFIXES: tuple[str, ...] = (".jsonl", ".json", ".parquet")
"""Local file types :func:`iter_rows` reads."""


# --------------------------------------------------------------------------- text and files


def _not_utf8(path: Path, offset: int, err: UnicodeDecodeError) -> InputError:
    bad = err.object[err.start : err.start + 4]
    return InputError(
        f"{path}: not UTF-8 text at byte offset {offset} ({err.reason}, bytes {bad!r}); "
        "convert the file to UTF-8"
    )


def read_text(path: str | Path) -> str:
    """A file's text, decoded as UTF-8; text that is not UTF-8 names the file and byte offset.

    Example:
        >>> import pathlib, tempfile
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "latin1.txt"
        >>> _ = bad.write_bytes("caf\\xe9".encode("latin-1"))
        >>> read_text(bad)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ...latin1.txt: not UTF-8 text at byte offset 3 ...
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _not_utf8(path, err.start, err) from None


def read_json(path: str | Path) -> Any:
    """A JSON file's content; a missing file, text that is not UTF-8 or malformed JSON is one
    :class:`InputError` line naming the file.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cut.json"
        >>> _ = path.write_text('{"k": 2,')
        >>> read_json(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ...cut.json: not valid JSON (Expecting property name ...)
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise InputError(
            f"{path}: not valid JSON ({err.msg}, line {err.lineno} column {err.colno})"
        ) from None


def iter_jsonl_objects(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(where, object)`` for each non-blank line of a JSONL file.

    ``where`` is ``"<path>:<line>"``. A missing file, a line that is not UTF-8 (reported with
    its byte offset), malformed JSON or a line that is not a JSON object raises
    :class:`InputError` naming the file and line.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.jsonl"
        >>> _ = path.write_text('{"a": 1}\\n[1]\\n')
        >>> list(iter_jsonl_objects(path))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ...x.jsonl:2: expected a JSON object, got list
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    offset = 0
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise _not_utf8(path, start + err.start, err) from None
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(f"{where}: malformed JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}")
            yield where, record


def _iter_json_file(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    # A ``.json`` file is a JSON array of objects, or JSON Lines (as datasets' json loader).
    text = read_text(path)
    if not text.lstrip().startswith("["):
        yield from iter_jsonl_objects(path)
        return
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None
    for i, record in enumerate(payload):
        if not isinstance(record, dict):
            kind = type(record).__name__
            raise InputError(f"{path}: item {i}: expected a JSON object, got {kind}")
        yield f"{path}: item {i}", record


def read_parquet(path: str | Path, columns: list[str] | None = None) -> Any:
    """A parquet file as a ``pyarrow.Table``; a missing, truncated or foreign file is one
    :class:`InputError` line naming the file.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cut.parquet"
        >>> _ = path.write_bytes(b"PAR1 not really")
        >>> read_parquet(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: ...cut.parquet: not a readable parquet file (...)
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    with _readable_parquet(path) as path:
        table = pq.read_table(path, columns=columns)
    # The read's scratch memory (compressed and decoded pages, the reader threads' pages) is
    # free now, but arrow's allocator (mimalloc) keeps it from the OS: at 64,000 documents of
    # text about 90 MB, 2.4 times the table itself, which the process's peak would carry.
    pa.default_memory_pool().release_unused()
    return table


def parquet_num_rows(path: str | Path) -> int:
    """A parquet file's row count from its footer, without reading its rows; an unreadable file
    is one error line, as in :func:`read_parquet`.

    Example:
        >>> import pathlib, tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "ids.parquet"
        >>> pq.write_table(pa.table({"id": ["d1", "d2", "d3"]}), path)
        >>> parquet_num_rows(path)
        3
    """
    import pyarrow.parquet as pq

    with _readable_parquet(path) as path:
        return int(pq.ParquetFile(path).metadata.num_rows)


@contextmanager
def _readable_parquet(path: str | Path) -> Iterator[Path]:
    """Turn a missing file or pyarrow's many error types for an unreadable one into one
    :class:`InputError` line naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        yield path
    except Exception as err:  # pyarrow raises several types for unreadable files
        raise InputError(f"{path}: not a readable parquet file ({first_line(err)})") from None


def read_parquet_rows(path: str | Path) -> list[dict[str, Any]]:
    """A parquet file's rows as dicts (through :func:`read_parquet`)."""
    return read_parquet(path).to_pylist()


def _iter_parquet_file(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, row in enumerate(read_parquet_rows(path)):
        yield f"{path}: row {i}", row


# --------------------------------------------------------------------------- repo folders


def split_front_matter(card: str) -> tuple[dict[str, Any], str]:
    """A card's YAML header (``{}`` if none) and its body.

    Example:
        >>> split_front_matter("---\\npretty_name: x\\n---\\n# Title\\n")
        ({'pretty_name': 'x'}, '# Title\\n')
    """
    import yaml

    match = re.match(r"^---\n(.*?)\n---\n?(.*)$", card, flags=re.S)
    if not match:
        return {}, card
    return yaml.safe_load(match.group(1)) or {}, match.group(2)


def declared_configs(card: str) -> list[str]:
    """Config names a card's YAML ``configs:`` declares, in order.

    Example:
        >>> declared_configs("---\\nconfigs:\\n- config_name: uniform\\n---\\n")
        ['uniform']
    """
    header, _ = split_front_matter(card)
    return [str(c.get("config_name")) for c in header.get("configs") or []]


def available_configs(folder: str | Path) -> list[str]:
    """Config names declared in a local repo folder's card (``[]`` without a card).

    Example:
        >>> available_configs("/nonexistent")
        []
    """
    card = Path(folder) / CARD_FILE
    if not card.is_file():
        return []
    return declared_configs(read_text(card))


def local_cache_dir(folder: str | Path, root: str | Path | None = None) -> Path:
    """A ``datasets`` cache folder addressed by the content of a local folder.

    Why: ``datasets`` 5.x keys the cache of a local folder by the folder's *base name* and its
    YAML ``configs:`` only — not by the data. Two ``<out>/train`` folders with the same configs
    share one cache entry, so ``load_dataset`` silently returns the rows of whichever was read
    first. Hashing the folder's files gives each content its own entry (identical content still
    shares one).

    Example:
        >>> import tempfile
        >>> a, b = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> local_cache_dir(a, "/c") == local_cache_dir(b, "/c")  # both empty: same content
        True
    """
    from hf_posbias.hashing import folder_digest

    if root is None:
        import datasets

        root = datasets.config.HF_DATASETS_CACHE
    return Path(root) / "posbias-local" / folder_digest(folder)[:20]


def load_dataset_fresh(
    source: str | Path, config: str | None = None, split: str = "train", **kwargs: Any
) -> Any:
    """``datasets.load_dataset``, with local folders read through :func:`local_cache_dir`.

    Use it wherever a local folder may have been rewritten since it was last read (the
    pipeline's own outputs, user folders); Hub ids and files go to ``load_dataset`` unchanged.
    """
    import datasets

    cache_dir = kwargs.pop("cache_dir", None)
    if Path(source).is_dir():
        cache_dir = str(local_cache_dir(source, cache_dir))
    elif cache_dir is not None:
        cache_dir = str(cache_dir)
    return datasets.load_dataset(str(source), config, split=split, cache_dir=cache_dir, **kwargs)


def _looks_local(source: str) -> bool:
    # A Hub id is "name" or "org/name"; anything else that does not exist is a missing path.
    return source.startswith(("/", ".", "~")) or source.count("/") > 1


def read_dataset(
    repo_or_folder: str | Path,
    config: str | None,
    split: str = "train",
    *,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
) -> Any:
    """One config of a dataset repo folder or Hub dataset, as a ``datasets.Dataset``.

    ``repo_or_folder`` is a local folder (a repo folder written by
    :func:`hf_posbias.publish.write_dataset_repo`, or any folder ``load_dataset`` reads) or a
    Hub id (``HF_ENDPOINT`` decides which Hub); ``revision`` applies to Hub ids. A folder whose
    card declares configs must hold ``config`` (a one-line error names the real ones). Local
    folders go through the content-addressed cache, so a rewritten folder never yields stale
    rows — prefer this over a bare ``load_dataset(folder, …)``.

    Example:
        >>> read_dataset("/nonexistent-folder", "uniform")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: no dataset repo folder or Hub dataset '/nonexistent-folder'
    """
    import datasets

    local = Path(repo_or_folder)
    if local.exists():
        names = available_configs(local)
        if names and config is not None and config not in names:
            raise InputError(
                f"{local} has no config {config!r}; available configs: {', '.join(names)}"
            )
        try:
            return load_dataset_fresh(local, config, split=split, cache_dir=cache_dir)
        except PosbiasError:
            raise
        except Exception as err:  # datasets raises many types; all mean "cannot read this"
            raise InputError(
                f"cannot read {local} ({config or 'default'}, split {split}): {first_line(err)}"
            ) from None
    if _looks_local(str(repo_or_folder)):
        raise InputError(f"no dataset repo folder or Hub dataset {str(repo_or_folder)!r}")
    try:
        return datasets.load_dataset(
            str(repo_or_folder),
            config,
            split=split,
            revision=revision,
            cache_dir=None if cache_dir is None else str(cache_dir),
        )
    except ValueError as exc:
        # datasets names the available configs in its message ("Available: [...]"); keep it
        # on one line and lead with what the user asked for.
        message = " ".join(str(exc).split())
        if config and config in message and "vailable" in message:
            raise InputError(f"{repo_or_folder} has no config {config!r}: {message}") from exc
        raise InputError(_cannot_load(repo_or_folder, config, exc)) from exc
    except (ConnectionError, OSError) as exc:
        raise BackendError(_cannot_load(repo_or_folder, config, exc)) from exc
    except Exception as exc:  # e.g. DatasetNotFoundError: a missing repo is the user's input
        raise InputError(_cannot_load(repo_or_folder, config, exc)) from exc


def _cannot_load(source: object, config: str | None, exc: BaseException) -> str:
    """One line for a Hub dataset that did not load: the config only when one was asked for, and
    why the Hub was not asked when offline mode is on.

    Example:
        >>> _cannot_load("rajpurkar/squad_v2", None, OSError("no network")).split(" (HF_HUB")[0]
        'cannot load rajpurkar/squad_v2: no network'
    """
    import os

    where = f"{source} (config {config})" if config else str(source)
    reason = first_line(exc) or type(exc).__name__
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}:
        reason += " (HF_HUB_OFFLINE is set: the Hub is not contacted)"
    return f"cannot load {where}: {reason}"


# --------------------------------------------------------------------------- any source


def iter_rows(
    source: str | Path, *, split: str = "train", config: str | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(where, row)`` from any source (see the module docstring), in order.

    ``where`` locates the row for error messages (``"c.jsonl:3"``, ``"t.parquet: row 7"``,
    ``"org/name: row 7"``). A local file is one split; ``split`` and ``config`` select the
    split and config of a folder or Hub id.
    """
    text = str(source)
    path = Path(text).expanduser()
    if path.is_file():
        if path.suffix == ".jsonl":
            yield from iter_jsonl_objects(path)
        elif path.suffix == ".json":
            yield from _iter_json_file(path)
        elif path.suffix == ".parquet":
            yield from _iter_parquet_file(path)
        else:
            raise InputError(
                f"{path}: unsupported file type (use {', '.join(FILE_SUFFIXES)}, a dataset "
                "folder or a Hub dataset id)"
            )
        return
    if not path.exists() and _looks_local(text):
        raise InputError(f"{path}: no such file or folder")
    dataset = read_dataset(path if path.exists() else text, config, split=split)
    for i, row in enumerate(dataset):
        yield f"{text}: row {i}", row


def read_rows(
    source: str | Path, *, split: str = "train", config: str | None = None
) -> list[dict[str, Any]]:
    """Every row of a source as a list of dicts (see :func:`iter_rows`).

    Example:
        >>> read_rows("/no/such/file.jsonl")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /no/such/file.jsonl: no such file or folder
    """
    return [row for _, row in iter_rows(source, split=split, config=config)]


__all__ = [
    "CARD_FILE",
    "available_configs",
    "declared_configs",
    "iter_jsonl_objects",
    "iter_rows",
    "load_dataset_fresh",
    "local_cache_dir",
    "read_dataset",
    "read_rows",
    "read_text",
    "split_front_matter",
]


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
            with _readable_parquet(path):
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
            with _readable_parquet(path):
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
            with _readable_parquet(self.paths[f]) as path:
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
