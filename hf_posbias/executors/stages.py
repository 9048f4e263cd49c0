"""The shards of a sharded stage as units of work (``posbias data build|generate|verify
--executor``).

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

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from hf_posbias.executors import run_units
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.executors.units import Unit
from hf_posbias.shards import shard_path

_SESSION: ContextVar[list[Any] | None] = ContextVar("executor_session", default=None)
"""Inside :func:`executor_session`: the Ray module the session started (empty until then)."""


@contextlib.contextmanager
def executor_session() -> Iterator[None]:
    """Keep Ray, once a stage's units started it, for the verb's later stages, and stop it when
    the block ends (a verb of several sharded stages starts Ray once, and only if a shard is
    left to make; an already running Ray is left running).

    Example:
        >>> with executor_session():
        ...     _SESSION.get()
        []
    """
    started: list[Any] = []
    token = _SESSION.set(started)
    try:
        yield
    finally:
        _SESSION.reset(token)
        for ray in started:
            ray.shutdown()


def _join_session(settings: ExecutorSettings) -> None:
    session = _SESSION.get()
    if session is not None and not session and settings.executor == "ray":
        from hf_posbias.executors.ray import connect

        ray, started = connect(settings)
        if started:
            session.append(ray)


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
    run under ``settings.executor`` (state and logs under ``records_dir``); inside
    :func:`executor_session`, Ray is started once for all the stages."""

    def run(indices: list[int]) -> None:
        _join_session(settings)
        units = shard_units(kind, call, args, stage_dir, indices, gpus=gpus)
        run_units(units, str(records_dir), settings, echo)

    return run
