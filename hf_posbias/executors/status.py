"""What state every unit of a folder is in: done, running, failed or waiting.

``done`` comes from the unit's own markers (for a unit that reruns every time, like the
report: its last run finished and its inputs are all done); ``running`` and ``failed`` from the
record its last attempt left in ``<out>/units/`` (a ``running`` record on this host whose
process is gone is a unit that died: ``failed``); anything else is ``waiting``. A failure shows
its error's first line and the last line of its log.

Example:
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> units = [Unit("train/a", "train", print, done=lambda: True),
    ...          Unit("eval/a/t", "eval", print)]
    >>> [(s.unit.id, s.state) for s in unit_states(units, out)]
    [('train/a', 'done'), ('eval/a/t', 'waiting')]
    >>> status_lines(unit_states(units, out))[0]
    '1 done, 0 running, 0 failed, 1 waiting (2 units)'
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hf_posbias.executors.units import Unit, UnitRecord, read_record, read_waiting
from hf_posbias.locks import process_alive

STATES: tuple[str, ...] = ("done", "running", "failed", "waiting")


@dataclass
class UnitState:
    """One unit's state and, when it failed, why."""

    unit: Unit
    state: str
    detail: str = ""


def last_log_line(out: str | Path, record: UnitRecord) -> str:
    """The last non-empty line of the record's log ('' without one)."""
    if not record.log or not (Path(out) / record.log).is_file():
        return ""
    lines = [x.strip() for x in (Path(out) / record.log).read_text(errors="replace").splitlines()]
    return next((x for x in reversed(lines) if x), "")


def unit_state(unit: Unit, out: str | Path, deps_done: bool = True) -> UnitState:
    """The state of ``unit`` in ``out`` (``deps_done``: whether its inputs are all there: a unit
    is only asked for its markers then)."""
    record = read_record(out, unit)
    if deps_done and (unit.done() or (unit.rerun and record and record.state == "done")):
        return UnitState(unit, "done")
    waiting = read_waiting(out, unit)
    if waiting is not None and (record is None or record.started < waiting.since):
        age = max(waiting.checked - waiting.since, 0.0)
        return UnitState(unit, "waiting", f"queued {age:.0f} s by then: {waiting.reason}")
    if record is None or record.state == "done":
        return UnitState(unit, "waiting")  # done once, but its inputs changed since
    where = f"{record.host} pid {record.pid}, attempt {record.attempt}"
    if record.state == "running":
        if record.host == socket.gethostname() and not process_alive(record.pid):
            return UnitState(unit, "failed", f"died while running ({where}: process gone)")
        return UnitState(unit, "running", where)
    last = last_log_line(out, record)
    detail = f"{record.error} ({where})" + (f"; log: {last}" if last else "")
    return UnitState(unit, "failed", detail)


def unit_states(units: Sequence[Unit], out: str | Path) -> list[UnitState]:
    """Every unit's state, in the graph's order."""
    states: dict[str, UnitState] = {}
    for unit in units:
        deps_done = all(states[d].state == "done" for d in unit.deps if d in states)
        states[unit.id] = unit_state(unit, out, deps_done)
    return [states[u.id] for u in units]


def status_lines(states: Sequence[UnitState]) -> list[str]:
    """A count per state, then one line per unit that is not done."""
    counts = {s: sum(x.state == s for x in states) for s in STATES}
    lines = [", ".join(f"{counts[s]} {s}" for s in STATES) + f" ({len(states)} units)"]
    for state in ("failed", "running", "waiting"):
        for item in states:
            if item.state == state:
                detail = f": {item.detail}" if item.detail else ""
                lines.append(f"{state:8} {item.unit.id}{detail}")
    return lines
