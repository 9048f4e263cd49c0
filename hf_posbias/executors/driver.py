"""The one loop every executor runs: start the ready units, best first; report each that
finishes; start what it unblocked; retry a failure up to ``retries`` times.

An engine (:mod:`~hf_posbias.executors.ray`, :mod:`~hf_posbias.executors.slurm`) gives two
functions: ``start(unit)`` returns a handle (a Ray object ref, a submitit job), ``wait(handles)``
blocks until one of them is finished and returns it with its seconds or its exception. Placement
on GPUs, CPUs and nodes is the engine's; the order in which ready units are handed to it is
:func:`~hf_posbias.executors.units.schedule_order`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_posbias.errors import PosbiasError, first_line
from hf_posbias.executors.units import (
    ProgressLines,
    Unit,
    WaitingRecord,
    read_record,
    waiting_path,
    write_waiting,
)

WAITING_REPORT_S = 60.0
"""A unit the engine has not started after this many seconds is reported, with the engine's
reason, and again every as many seconds while it waits."""

Start = Callable[[Unit], Any]
Wait = Callable[[list[Any]], tuple[Any, "float | BaseException"]]


def drive(
    todo: Sequence[Unit],
    out: str,
    start: Start,
    wait: Wait,
    *,
    echo: Callable[[str], None],
    parallel: int,
    where: str,
    retries: int = 0,
) -> None:
    """Run ``todo`` (in :func:`schedule_order`, every dependency outside it finished) to the end;
    one :class:`PosbiasError` line naming the unit that failed ``retries + 1`` times."""
    waiting = list(todo)
    ids = {u.id for u in todo}
    finished: set[str] = set()
    running: dict[Any, Unit] = {}
    attempts: dict[str, int] = {}
    progress = ProgressLines(total=len(todo), parallel=parallel)

    def start_ready() -> None:
        for unit in list(waiting):
            if all(d not in ids or d in finished for d in unit.deps):
                waiting.remove(unit)
                attempts[unit.id] = attempts.get(unit.id, 0) + 1
                running[start(unit)] = unit

    start_ready()
    while running:
        handle, result = wait(list(running))
        unit = running.pop(handle)
        # The unit removes its waiting record when it starts, but a watch that asked the engine
        # just before may write one after that: whatever the engine said, the unit waits no more.
        waiting_path(out, unit).unlink(missing_ok=True)
        if isinstance(result, BaseException):
            if attempts[unit.id] <= retries:
                echo(
                    f"{unit.id}: failed ({first_line(result)}); retry {attempts[unit.id]}/{retries}"
                )
                attempts[unit.id] += 1
                running[start(unit)] = unit
                continue
            record = read_record(out, unit)
            log = f"; log: {out}/{record.log}" if record and record.log else ""
            raise PosbiasError(
                f"{unit.id} failed after {attempts[unit.id]} attempt(s): {first_line(result)}"
                f"{log} (rerun to resume: finished units are kept)"
            )
        finished.add(unit.id)
        echo(progress.line(unit, float(result), [*waiting, *running.values()], where))
        start_ready()


@dataclass
class PendingWatch:
    """Says which units an engine was handed but has not started after ``after_s`` seconds, with
    the engine's reason: one progress line each (repeated every ``after_s`` while it waits), and
    ``<out>/units/<unit>.waiting.json`` for ``posbias study status``. A unit has started when
    its worker wrote its ``running`` record (:func:`~hf_posbias.executors.units.execute_unit`).

    Example:
        >>> import tempfile
        >>> out, lines = tempfile.mkdtemp(), []
        >>> watch = PendingWatch(out, lines.append, after_s=0.0)
        >>> unit = Unit("train/a", "train", print, gpus=1)
        >>> watch.handed(unit)
        >>> watch.check([unit], lambda u: "Ray: pending until 1 GPU is free")
        >>> lines[0].split(" (")[0]
        'train/a: not started after 0 s'
        >>> lines[0].endswith("(Ray: pending until 1 GPU is free)")
        True
    """

    out: str
    echo: Callable[[str], None]
    after_s: float = WAITING_REPORT_S
    handed_at: dict[str, float] = field(default_factory=dict)
    reported_at: dict[str, float] = field(default_factory=dict)

    def handed(self, unit: Unit) -> None:
        """``unit`` was just handed to the engine."""
        self.handed_at[unit.id] = time.time()
        self.reported_at.pop(unit.id, None)

    def started(self, unit: Unit) -> bool:
        record = read_record(self.out, unit)
        return record is not None and record.started >= self.handed_at.get(unit.id, 0.0) - 1.0

    def check(self, units: Iterable[Unit], reason_of: Callable[[Unit], str]) -> None:
        """Report each of ``units`` that waits longer than ``after_s`` (and was not reported in
        the last ``after_s``), asking ``reason_of(unit)`` for the engine's reason."""
        now = time.time()
        for unit in units:
            since = self.handed_at.get(unit.id)
            if since is None or now - since < self.after_s:
                continue
            last = self.reported_at.get(unit.id)
            if last is not None and now - last < self.after_s:
                continue
            if self.started(unit):
                continue
            reason = reason_of(unit)
            self.reported_at[unit.id] = now
            write_waiting(self.out, WaitingRecord(unit.id, since, reason, now))
            if self.started(unit):  # it started while the engine was asked: not waiting
                waiting_path(self.out, unit).unlink(missing_ok=True)
                continue
            self.echo(f"{unit.id}: not started after {now - since:.0f} s ({reason})")
