"""The one loop every executor runs: start the ready units, best first; report each that
finishes; start what it unblocked; retry a failure up to ``retries`` times.

An engine (:mod:`~hf_posbias.executors.ray`, :mod:`~hf_posbias.executors.slurm`) gives two
functions: ``start(unit)`` returns a handle (a Ray object ref, a submitit job), ``wait(handles)``
blocks until one of them is finished and returns it with its seconds or its exception. Placement
on GPUs, CPUs and nodes is the engine's; the order in which ready units are handed to it is
:func:`~hf_posbias.executors.units.schedule_order`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hf_posbias.errors import PosbiasError, first_line
from hf_posbias.executors.units import ProgressLines, Unit, read_record

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
