"""The shards of a sharded stage as units of work (``posbias build|generate|verify --executor``).

:func:`~hf_posbias.shards.run_sharded` pins the stage's parameters and merges its shards; with
``remote=shard_units_runner(...)`` the shards it is missing are made by one :class:`Unit` each,
under any executor: ``call(*args, index)`` is a picklable top-level function that loads what
it needs from its arguments (folders and settings, never a loaded model) and writes
:func:`~hf_posbias.shards.shard_path` exactly as the local loop does. A shard's file is its
done-check, so a rerun skips finished shards whatever made them; the unit records and logs go
to ``records_dir`` (the work folder), outside the stage folder, which stays as a local run
leaves it.

Example:
    >>> import tempfile
    >>> from hf_posbias.shards import run_sharded, write_parquet, shard_path
    >>> stage = tempfile.mkdtemp()
    >>> def square(out, index):
    ...     write_parquet([{"sq": index * index}], shard_path(out, index))
    >>> runner = shard_units_runner("demo", square, (stage,), stage, stage,
    ...                             ExecutorSettings(), echo=lambda line: None)
    >>> [r["sq"] for r in run_sharded([0, 1, 2], None, stage, 1, {}, remote=runner)]
    [0, 1, 4]
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hf_posbias.executors import run_units
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.executors.units import Unit
from hf_posbias.shards import shard_path


def shard_units(
    kind: str,
    call: Callable[..., Any],
    args: tuple[Any, ...],
    stage_dir: str | Path,
    indices: list[int],
    *,
    gpus: float = 0.0,
) -> list[Unit]:
    """One unit ``<kind>/shard-<index>`` per shard index: ``call(*args, index)``, done when the
    shard's file exists."""
    return [
        Unit(
            f"{kind}/shard-{i:05d}",
            kind,
            call,
            args=(*args, i),
            gpus=gpus,
            done=shard_path(stage_dir, i).is_file,
        )
        for i in indices
    ]


def shard_units_runner(
    kind: str,
    call: Callable[..., Any],
    args: tuple[Any, ...],
    stage_dir: str | Path,
    records_dir: str | Path,
    settings: ExecutorSettings,
    *,
    echo: Callable[[str], None] = print,
    gpus: float = 0.0,
) -> Callable[[list[int]], None]:
    """The ``remote`` of :func:`~hf_posbias.shards.run_sharded`: the missing shards as units
    run under ``settings.executor`` (state and logs under ``records_dir``)."""

    def run(indices: list[int]) -> None:
        units = shard_units(kind, call, args, stage_dir, indices, gpus=gpus)
        run_units(units, str(records_dir), settings, echo)

    return run
