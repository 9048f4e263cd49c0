"""Executors: the units of work of a verb run here, on Ray or on Slurm (``--executor``).

A verb builds its :class:`~hf_posbias.executors.units.Unit` graph (the study:
:mod:`hf_posbias.study.units`) and hands it to :func:`run_units`; the state of every unit
lives in the output folder (its own markers, plus ``units/`` and ``logs/``), so a rerun under
any executor skips what finished. See ``docs/scaling.md``.

Example:
    >>> import tempfile
    >>> from hf_posbias.executors.units import Unit
    >>> out, lines = tempfile.mkdtemp(), []
    >>> ran, skipped = run_units([Unit("report/r", "report", len, args=("x",))], out,
    ...                          ExecutorSettings(), lines.append)
    >>> [u.id for u in ran], skipped, lines[0].split(":")[0]
    (['report/r'], [], '[1/1] report/r')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.executors.units import Unit, pending_units

__all__ = ["check_executor", "run_units"]


def check_executor(settings: ExecutorSettings) -> None:
    """One :class:`~hf_posbias.errors.InputError` line when the executor cannot start (its
    library missing, no ``sbatch``), before any work; Ray's address is checked when it joins."""
    from hf_posbias.executors.units import check_importable

    if settings.executor == "ray":
        check_importable("ray", "ray")
        if settings.ray_address and settings.ray_address != "auto":
            from hf_posbias.executors.ray import check_reachable

            check_reachable(settings.ray_address)
    elif settings.executor == "slurm":
        check_importable("submitit", "slurm")
        from hf_posbias.executors.slurm import check_cluster

        check_cluster(settings)


def run_units(
    units: Sequence[Unit],
    out: str,
    settings: ExecutorSettings,
    echo: Callable[[str], None] = print,
) -> tuple[list[Unit], list[Unit]]:
    """Run every unit of ``units`` not finished yet under ``settings.executor``; returns
    ``(run, skipped)``. Ray is started (or joined) before any unit runs and stopped after, unless
    it was running already."""
    check_executor(settings)
    todo, finished = pending_units(units)
    if settings.executor == "ray":
        from hf_posbias.executors.ray import connect, run_ray

        ray, started = connect(settings)
        try:
            if todo:
                run_ray(todo, out, settings, echo, ray)
        finally:
            if started:
                ray.shutdown()
    elif settings.executor == "slurm" and todo:
        from hf_posbias.executors.slurm import run_slurm

        run_slurm(todo, out, settings, echo)
    elif todo:
        from hf_posbias.executors.local import run_local

        run_local(todo, out, echo)
    return todo, finished
