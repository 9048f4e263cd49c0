"""Units of work: what an executor runs, in which order, and what each left in the folder.

A :class:`Unit` is one training run, one evaluation (model × task), one report — anything an
executor places on a worker: a picklable top-level function with its arguments, the ids of the
units it waits for, its projected cost in seconds (``None`` when nothing projects it), the GPUs
it needs, and a check that says whether it is finished (the verb's own markers: state lives in
the output folder, so a rerun skips what finished whatever ran it).

Every executor orders ready units by :func:`schedule_order`: the longest chain of projected work
that still hangs on a unit first ("longest first, with dependencies"); ``benchmarks/
study_scheduling.py`` simulates exactly that order (:func:`simulate`).

Each run of a unit leaves ``<out>/units/<unit>.json`` (``running``/``failed``/``done``, host,
process, seconds, the error's first line) and, when it ran on a worker, its log under
``<out>/logs/``; :mod:`hf_posbias.executors.status` reads them back.

Example:
    >>> a = Unit("train/a", "train", print, cost=10.0)
    >>> b = Unit("train/b", "train", print, cost=30.0)
    >>> e = Unit("eval/a/t", "eval", print, deps=("train/a",), cost=25.0)
    >>> [u.id for u in schedule_order([a, b, e])]
    ['train/a', 'train/b', 'eval/a/t']
    >>> simulate([a, b, e], 2)
    35.0
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError, first_line

UNITS_DIR = "units"
"""``<out>/units/<unit>.json``: the last state each unit reached."""
LOGS_DIR = "logs"
"""``<out>/logs/<unit>.log``: what a unit printed on its worker."""


def _never_done() -> bool:
    return False


@dataclass(frozen=True)
class Unit:
    """One unit of work: ``call(*args)`` once every unit named in ``deps`` is finished."""

    id: str
    """``<kind>/<name>``, unique in a graph; also its state and log file names."""
    kind: str
    call: Callable[..., Any]
    args: tuple[Any, ...] = ()
    deps: tuple[str, ...] = ()
    cost: float | None = None
    """Projected seconds (the training planner's hours); ``None``: not projected."""
    gpus: float = 0.0
    """GPUs the unit needs (0 for the report)."""
    done: Callable[[], bool] = field(default=_never_done, compare=False, repr=False)
    """Whether the unit is finished, from its own markers in the output folder (default: never:
    the unit runs on every invocation, like the report)."""

    @property
    def rerun(self) -> bool:
        """Whether the unit runs on every invocation (it has no markers of its own)."""
        return self.done is _never_done

    @property
    def file_stem(self) -> str:
        """The id as one file name (``train/a`` → ``train--a``)."""
        return self.id.replace("/", "--")


def check_graph(units: Sequence[Unit]) -> None:
    """Unique ids and known dependencies (a bug, not a user mistake, when it fails)."""
    ids = [u.id for u in units]
    if len(set(ids)) < len(ids):
        raise ValueError(f"duplicate unit ids: {sorted(i for i in ids if ids.count(i) > 1)}")
    for unit in units:
        missing = [d for d in unit.deps if d not in ids]
        if missing:
            raise ValueError(f"{unit.id} depends on unknown unit(s) {missing}")


def priorities(units: Sequence[Unit]) -> dict[str, float]:
    """Each unit's projected cost plus the longest chain of projected cost that waits on it
    (its "upward rank"); an unprojected cost counts 0, so order falls back to the graph's."""
    dependents: dict[str, list[str]] = {u.id: [] for u in units}
    for unit in units:
        for dep in unit.deps:
            dependents[dep].append(unit.id)
    by_id = {u.id: u for u in units}
    rank: dict[str, float] = {}

    def visit(uid: str) -> float:
        if uid not in rank:
            below = max((visit(d) for d in dependents[uid]), default=0.0)
            rank[uid] = (by_id[uid].cost or 0.0) + below
        return rank[uid]

    for unit in units:
        visit(unit.id)
    return rank


def schedule_order(units: Sequence[Unit]) -> list[Unit]:
    """Units in the order executors start them: of the units whose dependencies come earlier,
    the highest :func:`priorities` first (ties: the graph's own order)."""
    check_graph(units)
    rank = priorities(units)
    index = {u.id: i for i, u in enumerate(units)}
    waiting = {u.id: set(u.deps) for u in units}
    ready = [(-rank[u.id], index[u.id], u) for u in units if not u.deps]
    heapq.heapify(ready)
    order: list[Unit] = []
    while ready:
        _, _, unit = heapq.heappop(ready)
        order.append(unit)
        for other in units:
            if unit.id in waiting[other.id]:
                waiting[other.id].discard(unit.id)
                if not waiting[other.id]:
                    heapq.heappush(ready, (-rank[other.id], index[other.id], other))
    return order


def simulate(units: Sequence[Unit], workers: int, order: Sequence[Unit] | None = None) -> float:
    """Makespan of ``units`` on ``workers`` identical workers that each take the first ready
    unit of ``order`` (default :func:`schedule_order`) when they free up; costs in seconds."""
    order = list(order if order is not None else schedule_order(units))
    finish: dict[str, float] = {}
    free = [0.0] * workers
    pending = list(order)
    while pending:
        start = min(free)
        ready = [u for u in pending if all(d in finish and finish[d] <= start for d in u.deps)]
        if not ready:  # every free worker waits for the next dependency to finish
            later = [
                finish[d] for u in pending for d in u.deps if d in finish and finish[d] > start
            ]
            free[free.index(start)] = min(later)
            continue
        unit = ready[0]
        pending.remove(unit)
        worker = free.index(start)
        free[worker] = finish[unit.id] = start + (unit.cost or 0.0)
    return max(finish.values(), default=0.0)


@dataclass
class UnitRecord:
    """What ``<out>/units/<unit>.json`` holds."""

    unit: str
    state: str
    """``running``, ``failed`` or ``done``."""
    host: str
    pid: int
    started: float
    seconds: float | None = None
    error: str | None = None
    log: str | None = None
    attempt: int = 1


def state_path(out: str | Path, unit: Unit | str) -> Path:
    """``<out>/units/<unit>.json``."""
    stem = unit.file_stem if isinstance(unit, Unit) else unit.replace("/", "--")
    return Path(out) / UNITS_DIR / f"{stem}.json"


def log_path(out: str | Path, unit: Unit) -> Path:
    """``<out>/logs/<unit>.log``."""
    return Path(out) / LOGS_DIR / f"{unit.file_stem}.log"


def read_record(out: str | Path, unit: Unit | str) -> UnitRecord | None:
    """The last state ``unit`` reached (None: it never started here)."""
    target = state_path(out, unit)
    if not target.is_file():
        return None
    try:
        return UnitRecord(**json.loads(target.read_text()))
    except (ValueError, TypeError):
        return None  # a record cut short by a killed writer: as if never started


def _write_record(out: str | Path, record: UnitRecord) -> None:
    from hf_posbias.shards import write_text_atomic

    target = state_path(out, record.unit)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, json.dumps(record.__dict__, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def _captured(target: Path | None) -> Iterator[None]:
    if target is None:
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with (
        open(target, "a", encoding="utf-8") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        yield


def execute_unit(unit: Unit, out: str | Path, *, capture: bool = True) -> float:
    """Run ``unit`` on this worker, recording its state under ``<out>/units/`` (and with
    ``capture``, its output in ``<out>/logs/``); returns its seconds. An exception is recorded
    (first line, traceback in the log) and raised again, so the executor can retry it."""
    previous = read_record(out, unit)
    waiting_path(out, unit).unlink(missing_ok=True)  # it waits no more
    log = log_path(out, unit) if capture else None
    record = UnitRecord(
        unit=unit.id,
        state="running",
        host=socket.gethostname(),
        pid=os.getpid(),
        started=time.time(),
        log=str(log.relative_to(out)) if log else None,
        attempt=previous.attempt + 1 if previous and previous.state != "done" else 1,
    )
    _write_record(out, record)
    start = time.perf_counter()
    try:
        with _captured(log):
            unit.call(*unit.args)
    except BaseException as err:
        record.state, record.error = "failed", first_line(err)
        record.seconds = time.perf_counter() - start
        if log is not None:
            with open(log, "a", encoding="utf-8") as handle:
                traceback.print_exc(file=handle)
        _write_record(out, record)
        raise
    record.state, record.seconds = "done", time.perf_counter() - start
    _write_record(out, record)
    return record.seconds


@dataclass
class WaitingRecord:
    """What ``<out>/units/<unit>.waiting.json`` holds: a unit handed to the engine that has not
    started after a while, and the engine's reason (Ray's pending state, Slurm's ``Reason``).
    The unit removes it when it starts; ``posbias study status`` shows it."""

    unit: str
    since: float
    """When the unit was handed to the engine (wall-clock seconds)."""
    reason: str
    checked: float
    """When the reason was read."""


def waiting_path(out: str | Path, unit: Unit | str) -> Path:
    """``<out>/units/<unit>.waiting.json``."""
    return state_path(out, unit).with_suffix(".waiting.json")


def write_waiting(out: str | Path, record: WaitingRecord) -> None:
    """Record that ``record.unit`` still waits for the engine to start it, and why."""
    from hf_posbias.shards import write_text_atomic

    target = waiting_path(out, record.unit)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, json.dumps(record.__dict__, indent=2, sort_keys=True) + "\n")


def read_waiting(out: str | Path, unit: Unit | str) -> WaitingRecord | None:
    """The engine's last reason why ``unit`` has not started (None: it never waited long)."""
    target = waiting_path(out, unit)
    try:
        return WaitingRecord(**json.loads(target.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _eta(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


@dataclass
class ProgressLines:
    """One line per finished unit: how many are done, how many are left, and an ETA from what
    was measured, kind by kind: the mean seconds of the finished units of each kind (training,
    evaluation, …) times the units of that kind left, over ``parallel`` workers. A kind left
    with nothing measured yet gives no ETA rather than a guess from another kind (a training
    run takes many evaluations' time); the report, seconds at most, is not counted.

    Example:
        >>> p = ProgressLines(total=4, parallel=1)
        >>> evals = [Unit("eval/a/t", "eval", print), Unit("eval/b/t", "eval", print)]
        >>> p.line(Unit("train/a", "train", print), 10.0, [Unit("train/b", "train", print)])
        '[1/4] train/a: done in 10.0 s (3 left, ETA 10 s)'
        >>> p.line(Unit("train/b", "train", print), 30.0, evals)
        '[2/4] train/b: done in 30.0 s (2 left, ETA n/a: no eval unit measured yet)'
        >>> p.line(evals[0], 2.0, evals[1:])
        '[3/4] eval/a/t: done in 2.0 s (1 left, ETA 2 s)'
    """

    total: int
    parallel: int = 1
    finished: int = 0
    seconds: dict[str, list[float]] = field(default_factory=dict)

    def eta(self, left: Sequence[Unit]) -> str:
        """The ETA of the units ``left``."""
        total = 0.0
        for kind in sorted({u.kind for u in left} - {"report"}):
            seen = self.seconds.get(kind)
            if not seen:
                return f"n/a: no {kind} unit measured yet"
            total += sum(seen) / len(seen) * sum(u.kind == kind for u in left)
        return _eta(total / max(self.parallel, 1))

    def line(self, unit: Unit, seconds: float, left: Sequence[Unit], where: str = "") -> str:
        """The line for ``unit`` finished in ``seconds`` with ``left`` still to run."""
        self.finished += 1
        self.seconds.setdefault(unit.kind, []).append(seconds)
        n_left = self.total - self.finished
        eta = self.eta(left) if n_left else "0 s"
        on = f" on {where}" if where else ""
        return (
            f"[{self.finished}/{self.total}] {unit.id}: done in {seconds:.1f} s{on} "
            f"({n_left} left, ETA {eta})"
        )


def pending_units(units: Sequence[Unit]) -> tuple[list[Unit], list[Unit]]:
    """``(to run, finished)``: a unit is finished when its own markers say so; a unit that
    depends on one still to run is to run too (its inputs will change)."""
    todo: list[Unit] = []
    finished: list[Unit] = []
    redo: set[str] = set()
    for unit in schedule_order(units):
        if any(d in redo for d in unit.deps) or not unit.done():
            todo.append(unit)
            redo.add(unit.id)
        else:
            finished.append(unit)
    return todo, finished


def check_importable(module: str, executor: str, extra: str = "scale") -> Any:
    """Import ``module`` for ``executor`` or one line saying how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(
            f"--executor {executor} needs {module} (pip install 'hf-posbias[{extra}]')"
        ) from None


def python_path() -> str:
    """This interpreter's import path, for workers that start without the driver's."""
    return os.pathsep.join(p for p in sys.path if p)
