"""Resumable, shardable stage execution: parquet shards + a manifest.

Every heavy stage (generation, verification, encoding) maps a function over an ordered list of
work items. :func:`run_sharded` cuts the list into fixed-size shards, gives each process of an
``accelerate launch`` run its own shards (``shard_index % num_processes == process_index``), writes
each finished shard atomically as parquet, and lets the main process merge them. A rerun after a
kill skips every finished shard, so nothing is redone or duplicated. A manifest pins the stage's
parameters (:func:`pin_parameters`, also used by the stages that do not shard): resuming with
different parameters is refused instead of silently mixing outputs, and later stages read the
parameters back from it (:func:`stage_parameters`).

Example:
    >>> import tempfile
    >>> from hf_posbias.shards import run_sharded
    >>> out = tempfile.mkdtemp()
    >>> rows = run_sharded(list(range(10)), lambda xs: [{"x": x, "sq": x * x} for x in xs],
    ...                    out, shard_size=4, params={"op": "square"}, progress=False)
    >>> [r["sq"] for r in rows][:4]
    [0, 1, 4, 9]
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import read_json, read_parquet_rows
from hf_posbias.settings import flag_name

T = TypeVar("T")

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ProcessInfo:
    """Rank and world size of this process (1 process outside ``accelerate launch``)."""

    index: int = 0
    count: int = 1

    @property
    def is_main(self) -> bool:
        """Whether this is the process that merges and reports."""
        return self.index == 0


def _partial_state() -> Any:
    """Accelerate's process state, honouring ``ACCELERATE_USE_CPU``.

    ``PartialState()`` ignores that variable (only ``AcceleratorState`` reads it), so under
    ``accelerate launch --multi_gpu`` on a CPU machine every process would believe it is rank 0
    of 1 and redo all shards; passing ``cpu=`` explicitly sets up the gloo process group.
    """
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


def process_info() -> ProcessInfo:
    """This process's rank, read through Accelerate when launched with several processes."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return ProcessInfo()
    state = _partial_state()
    if state.num_processes != world:
        raise InputError(
            f"launched with WORLD_SIZE={world} but Accelerate sees {state.num_processes} "
            "process(es): on a machine without GPUs set ACCELERATE_USE_CPU=true"
        )
    return ProcessInfo(state.process_index, state.num_processes)


def wait_for_everyone() -> None:
    """Barrier across ``accelerate launch`` processes (no-op for a single process)."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        _partial_state().wait_for_everyone()


def fingerprint(params: dict[str, Any]) -> str:
    """A stable hash of a stage's parameters (JSON with sorted keys)."""
    blob = json.dumps(params, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` that replaces it in one rename when the block ends.

    A reader (another process, a resumed run) sees the old file or the whole new one, never a
    half-written file; a block that raises leaves ``path`` as it was.

    Example:
        >>> import pathlib, tempfile
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "a" / "x.txt"
        >>> with atomic_path(target) as tmp:
        ...     _ = tmp.write_text("done")
        >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
        ('done', ['x.txt'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write UTF-8 text through :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, payload: Any) -> None:
    """Write JSON atomically (temporary file + rename) with stable formatting."""
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")


def write_parquet(
    rows: Sequence[dict[str, Any]] | Any, path: str | Path, schema: Any = None
) -> None:
    """Write rows (list of dicts or a pyarrow Table) atomically as a deterministic parquet file.

    Statistics and page indexes are fixed and no wall-clock metadata is written, so the same
    rows give byte-identical files.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(list(rows), schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", write_statistics=True, store_schema=True)


ROW_GROUP_ROWS = 1024
"""Rows per row group of a file written row group by row group (:class:`ParquetRowWriter`): the most
a streaming stage holds of it, and what a reader (:class:`hf_posbias.rows.arrow.ParquetRows`) reads
at a time."""


_ARROW_TYPES = {
    "str": "string",
    "str | None": "string",
    "int": "int64",
    "int | None": "int64",
    "float": "float64",
    "bool": "bool_",
}


def dataclass_schema(cls: type, **columns: Any) -> Any:
    """The pyarrow schema of a dataclass's rows: one column per field, in field order, typed
    from the field's annotation (``str``, ``int``, ``float``, ``bool``, optional or not, and
    ``list[...]`` of those); ``columns`` gives the type of a field the annotation does not
    say (a nested struct, a narrower integer). The schema keeps a file's types fixed when its
    first rows hold only ``None`` or empty lists, and a row's fields and its file's columns
    cannot drift apart.

    Example:
        >>> import pyarrow as pa
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Row:
        ...     id: str
        ...     tags: list[str]
        ...     rank: int = 0
        >>> dataclass_schema(Row, rank=pa.int32()).types
        [DataType(string), ListType(list<item: string>), DataType(int32)]
    """
    import dataclasses

    import pyarrow as pa

    def arrow_type(annotation: str) -> Any:
        if annotation.startswith("list[") and annotation.endswith("]"):
            return pa.list_(arrow_type(annotation[5:-1]))
        return getattr(pa, _ARROW_TYPES[annotation])()

    return pa.schema(
        [
            (f.name, columns[f.name] if f.name in columns else arrow_type(str(f.type)))
            for f in dataclasses.fields(cls)
        ]
    )


class ParquetRowWriter:
    """Write a parquet file row group by row group, atomically (as :func:`write_parquet`).

    Rows are buffered up to ``row_group_rows`` and written as one row group, so a file of any
    size is written holding one row group; the file appears (one rename) when the block ends
    without error. Group boundaries depend only on the row count, so the same rows give the
    same bytes, and a file of at most ``row_group_rows`` rows is the file :func:`write_parquet`
    writes. ``schema`` fixes the column types (default: inferred from the first row group).

    Example:
        >>> import tempfile
        >>> from hf_posbias.rows.arrow import ParquetRows
        >>> path = tempfile.mkdtemp() + "/x.parquet"
        >>> with ParquetRowWriter(path, row_group_rows=2) as out:
        ...     out.write({"x": i} for i in range(5))
        >>> rows = ParquetRows([path])
        >>> len(rows), len(rows._groups), rows[4]
        (5, 3, {'x': 4})
    """

    def __init__(
        self, path: str | Path, schema: Any = None, row_group_rows: int = ROW_GROUP_ROWS
    ) -> None:
        self.path = Path(path)
        self.schema = schema
        self.row_group_rows = row_group_rows
        self.rows_written = 0
        self._buffer: list[dict[str, Any]] = []
        self._writer: Any = None
        self._atomic: Any = None

    def __enter__(self) -> ParquetRowWriter:
        self._atomic = atomic_path(self.path)
        self._tmp = self._atomic.__enter__()
        return self

    def write(self, rows: Iterable[dict[str, Any]]) -> None:
        """Add rows; every full row group is written at once."""
        for row in rows:
            self._buffer.append(row)
            if len(self._buffer) >= self.row_group_rows:
                self._flush()

    def write_table(self, table: Any) -> None:
        """Add a ``pyarrow.Table`` as row groups of its own (cast to the file's schema)."""
        self._flush()
        self._write(table)

    def _write(self, table: Any) -> None:
        import pyarrow.parquet as pq

        if self.schema is None:
            self.schema = table.schema
        elif table.schema != self.schema:
            table = table.cast(self.schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                self._tmp, self.schema, compression="zstd", write_statistics=True,
                store_schema=True,
            )  # fmt: skip
        self._writer.write_table(table)
        self.rows_written += table.num_rows

    def _flush(self) -> None:
        import pyarrow as pa

        if self._buffer:
            self._write(pa.Table.from_pylist(self._buffer, schema=self.schema))
            self._buffer = []

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        import pyarrow as pa

        try:
            if kind is None:
                self._flush()
                if self._writer is None:  # no row at all: an empty file of the schema
                    self._write(pa.Table.from_pylist([], schema=self.schema))
            if self._writer is not None:
                self._writer.close()
        except BaseException as err:  # the temporary file goes; the target stays as it was
            self._atomic.__exit__(type(err), err, err.__traceback__)
            raise
        self._atomic.__exit__(kind, value, tb)


def read_manifest(stage_dir: str | Path) -> dict[str, Any] | None:
    """A stage folder's manifest (``None`` when the stage has not run there).

    Example:
        >>> read_manifest("/nonexistent") is None
        True
    """
    path = Path(stage_dir) / MANIFEST
    return read_json(path) if path.is_file() else None


def differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """What differs between two parameter records, one ``key: old → new`` per leaf.

    Example:
        >>> differences({"limit": None, "seed": 1}, {"limit": 300, "seed": 1})
        ['limit: null → 300']
    """
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            out += differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    if json.dumps(old, sort_keys=True, default=str) == json.dumps(new, sort_keys=True, default=str):
        return []
    before, after = json.dumps(old, default=str), json.dumps(new, default=str)
    return [f"{prefix.rstrip('.')}: {before} → {after}"]


class OtherRunError(InputError):
    """A folder holds a run with other parameters: refused before anything was written."""


def other_run_error(folder: str | Path, changes: Sequence[str]) -> OtherRunError:
    """The one refusal of a folder that holds a run with other parameters (a stage folder, or
    a verb's output folder: :func:`hf_posbias.output_folders.claim_output_folder`): one line
    naming what differs (:func:`differences`) and the flag that replaces it.

    Example:
        >>> print(other_run_error("work/corpus", differences({"limit": None}, {"limit": 300})))
        work/corpus holds a run with other parameters (limit: null → 300); rerun with \
--overwrite to replace it, or use a new output folder
    """
    changes = list(changes) or ["fingerprint"]
    return OtherRunError(
        f"{folder} holds a run with other parameters ({'; '.join(changes)}); rerun with "
        f"{flag_name('overwrite')} to replace it, or use a new output folder"
    )


def check_parameters(
    stage_dir: str | Path,
    params: dict[str, Any],
    *,
    overwrite: bool = False,
) -> bool:
    """Whether ``stage_dir`` may hold a run with ``params``; writes nothing.

    Returns ``True`` when the folder is pinned to the same parameters (a resume), ``False``
    when it is new or will be replaced (``overwrite``). A folder pinned to other parameters
    without ``overwrite`` raises the one-line :func:`other_run_error` naming what differs.

    Example:
        >>> check_parameters("/nonexistent/stage", {"seed": 1})
        False
    """
    out = Path(stage_dir)
    found = read_manifest(out)
    if found is None:
        return False
    if found.get("fingerprint") == fingerprint(params):
        return True
    if overwrite:
        return False
    raise other_run_error(out, differences(found.get("params"), params))


def pin_parameters(
    stage_dir: str | Path,
    params: dict[str, Any],
    *,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Record a stage's parameters in ``stage_dir/manifest.json``; refuse a rerun with others.

    ``params`` holds everything the stage's output depends on (its settings and a fingerprint
    of its input). A folder pinned to the same parameters is resumed; one pinned to other
    parameters is refused with a one-line :class:`InputError` naming what differs — unless
    ``overwrite``, which empties the stage folder first. Later stages and ``publish`` read the
    parameters back from here (:func:`stage_parameters`), never from command-line defaults.

    Returns:
        The manifest (``fingerprint`` of the parameters and ``params``).

    Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> pin_parameters(folder, {"seed": 42})["params"]
        {'seed': 42}
        >>> pin_parameters(folder, {"seed": 7})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.shards.OtherRunError: ... holds a run with other parameters (seed: 42 → 7); ...
    """
    out = Path(stage_dir)
    if check_parameters(out, params, overwrite=overwrite):
        return read_manifest(out)  # type: ignore[return-value]
    if read_manifest(out) is not None:
        # Pinned to other parameters and overwrite was asked: the folder is a stage folder
        # (it has our manifest), so its outputs go with it.
        shutil.rmtree(out)
    manifest = {"fingerprint": fingerprint(params), "params": params}
    write_json(out / MANIFEST, manifest)
    return manifest


def stage_parameters(stage_dir: str | Path, command: str) -> dict[str, Any]:
    """The parameters a finished stage recorded (``command`` names the verb that makes it).

    Example:
        >>> stage_parameters("/nonexistent/scored", "posbias data verify")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /nonexistent/scored has no manifest: run `posbias data ...
    """
    found = read_manifest(stage_dir)
    if found is None:
        raise InputError(f"{stage_dir} has no manifest: run `{command}` first")
    return dict(found["params"])


def stage_fingerprint(stage_dir: str | Path, command: str) -> str:
    """The fingerprint of a stage's parameters: what a later stage pins as its input."""
    stage_parameters(stage_dir, command)
    return str(read_manifest(stage_dir)["fingerprint"])  # type: ignore[index]


def run_sharded(
    items: Sequence[T],
    fn: Callable[[list[T]], list[dict[str, Any]]],
    out_dir: str | Path,
    shard_size: int,
    params: dict[str, Any],
    desc: str = "shards",
    schema: Any = None,
    progress: bool = True,
    overwrite: bool = False,
    remote: Callable[[list[int]], None] | None = None,
    merge: bool = True,
) -> list[dict[str, Any]] | Any:
    """Map ``fn`` over ``items`` shard by shard, resumably, and return all rows in item order.

    Args:
        items: the ordered work items (the order must be deterministic across reruns).
        fn: turns one shard's items into output rows.
        out_dir: stage folder; shards go to ``out_dir/shards/``, the manifest beside them.
        shard_size: items per shard (the unit of resumption and of distribution).
        params: everything that changes the output (model, seed, prompts …): pinned in the
            manifest (with the item count and shard size) so a rerun with other parameters is
            refused (:func:`pin_parameters`).
        desc: progress label.
        schema: optional pyarrow schema (keeps empty shards mergeable).
        progress: report progress on the main process (:func:`hf_posbias.progress.progress`).
        overwrite: replace a folder pinned to other parameters instead of refusing.
        remote: instead of ``fn`` here, ``remote(indices)`` makes the missing shards' files
            (:func:`shard_path`) elsewhere, e.g. one executor unit per shard
            (:mod:`hf_posbias.executors.stages`); then the shards are merged as usual.
        merge: return the rows as a list; ``False``: as :func:`shard_rows`, read lazily from
            the shard files (a stage of any size holds one shard at a time). ``items`` may then
            be lazy too (:class:`hf_posbias.rows.arrow.ParquetRows`): only a shard's slice is read.

    Returns:
        The merged rows (every process returns them after a barrier).
    """
    from hf_posbias.progress import progress as progress_bar

    if shard_size < 1:
        raise InputError(f"shard size must be >= 1, got {shard_size}")
    out = Path(out_dir)
    shard_dir = out / "shards"
    proc = process_info()
    if proc.is_main:
        pinned = {**params, "items": len(items), "shard_size": shard_size}
        pin_parameters(out, pinned, overwrite=overwrite)
        shard_dir.mkdir(parents=True, exist_ok=True)
    wait_for_everyone()

    n_shards = (len(items) + shard_size - 1) // shard_size
    mine = [i for i in range(n_shards) if i % proc.count == proc.index]
    todo = [i for i in mine if not shard_path(out, i).exists()]
    done = len(mine) - len(todo)
    if remote is not None:
        if todo:
            remote(todo)
        wait_for_everyone()
        return merge_shards(out, n_shards) if merge else shard_rows(out, n_shards)
    bar = progress_bar(
        total=len(todo),
        desc=f"{desc} ({done} shard(s) already done)" if done else desc,
        unit="shard",
        disable=not (progress and proc.is_main),
    )
    for i in todo:
        write_shard(items, fn, out, i, shard_size, schema=schema)
        bar.update(1)
    bar.close()
    wait_for_everyone()
    return merge_shards(out, n_shards) if merge else shard_rows(out, n_shards)


def shard_path(out_dir: str | Path, index: int) -> Path:
    """Where shard ``index`` of a stage folder is written (its presence: the shard is done).

    Example:
        >>> shard_path("W/candidates", 1).as_posix()
        'W/candidates/shards/shard-00001.parquet'
    """
    return Path(out_dir) / "shards" / f"shard-{index:05d}.parquet"


def shard_items(items: Sequence[T], index: int, shard_size: int) -> list[T]:
    """The items of shard ``index`` (the same cut :func:`run_sharded` makes).

    Example:
        >>> shard_items(list(range(10)), 2, 4)
        [8, 9]
    """
    return list(items[index * shard_size : (index + 1) * shard_size])


def write_shard(
    items: Sequence[T],
    fn: Callable[[list[T]], list[dict[str, Any]]],
    out_dir: str | Path,
    index: int,
    shard_size: int,
    schema: Any = None,
) -> Path:
    """Make shard ``index`` of a stage: ``fn`` over its items (:func:`shard_items`), written to
    :func:`shard_path` — the file :func:`run_sharded` writes for it, here or on a worker.

    Example:
        >>> import tempfile
        >>> path = write_shard(["a", "b", "c"], lambda s: [{"x": x} for x in s], tempfile.mkdtemp(),
        ...                    1, 2)
        >>> path.name, read_parquet_rows(path)
        ('shard-00001.parquet', [{'x': 'c'}])
    """
    path = shard_path(out_dir, index)
    write_parquet(fn(shard_items(items, index, shard_size)), path, schema=schema)
    return path


def shard_files(out_dir: str | Path, n_shards: int | None = None) -> list[Path]:
    """A stage's shard files in shard order (all must be present; ``None``: every one there)."""
    shard_dir = Path(out_dir) / "shards"
    if n_shards is None:
        n_shards = len(list(shard_dir.glob("shard-*.parquet")))
    paths = [shard_path(out_dir, i) for i in range(n_shards)]
    for path in paths:
        if not path.exists():
            raise InputError(f"{path} is missing: rerun the stage to finish it")
    return paths


def shard_rows(out_dir: str | Path, n_shards: int | None = None, convert: Any = None) -> Any:
    """A stage's rows in shard order, read lazily (:class:`hf_posbias.rows.arrow.ParquetRows`).

    Example:
        >>> import tempfile
        >>> out = tempfile.mkdtemp()
        >>> _ = [write_shard(list(range(5)), lambda s: [{"x": x} for x in s], out, i, 2)
        ...      for i in range(3)]
        >>> rows = shard_rows(out)
        >>> len(rows), rows[3], [r["x"] for r in rows]
        (5, {'x': 3}, [0, 1, 2, 3, 4])
    """
    from hf_posbias.rows.arrow import ParquetRows

    return ParquetRows(shard_files(out_dir, n_shards), convert=convert)


def merge_shards(out_dir: str | Path, n_shards: int | None = None) -> list[dict[str, Any]]:
    """Concatenate a stage's shards in shard order (all must be present)."""
    rows: list[dict[str, Any]] = []
    for path in shard_files(out_dir, n_shards):
        rows.extend(read_parquet_rows(path))
    return rows
