"""``--executor local``: every unit in this process, one after another, in schedule order.

Example:
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> lines = []
    >>> run_local([Unit("report/r", "report", print, args=("hello",))], out, lines.append)
    hello
    >>> lines[0].startswith("[1/1] report/r: done in")
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hf_posbias.executors.units import ProgressLines, Unit, execute_unit


def run_local(todo: Sequence[Unit], out: str, echo: Callable[[str], None]) -> None:
    """Run ``todo`` (in :func:`~hf_posbias.executors.units.schedule_order`) here; an error
    stops the run as it is raised (its unit is recorded ``failed``)."""
    progress = ProgressLines(total=len(todo))
    for index, unit in enumerate(todo):
        seconds = execute_unit(unit, out, capture=False)
        echo(progress.line(unit, seconds, todo[index + 1 :]))
