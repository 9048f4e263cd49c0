"""``--executor slurm``: one Slurm job per unit, through submitit.

Each job runs one unit (:func:`~hf_posbias.executors.units.execute_unit`) with
``--slurm-partition``, ``--slurm-account``, ``--slurm-time``, ``--slurm-gpus-per-job`` and any
``--slurm-options``; its logs go to ``<out>/slurm/<job id>_*``. On real Slurm every job is
submitted at once, in schedule order, an evaluation with ``--dependency=afterok:<its training
job>`` and the report after every evaluation; a preempted or timed-out job requeues itself
(submitit's checkpointing), a failed one is resubmitted ``--retries`` times. ``--slurm-cluster
local`` runs the same jobs as processes on this machine through submitit's LocalExecutor (no
``sbatch``; dependencies are then kept by the driver).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import submitit

from hf_posbias.errors import InputError
from hf_posbias.executors.driver import drive
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.executors.units import Unit, execute_unit

LOG_DIR = "slurm"
"""``<out>/slurm/``: submitit's logs and pickles, one set per job."""


class UnitJob(submitit.helpers.Checkpointable):
    """One unit as a submitit job; requeued as it is on preemption or timeout (the unit's own
    markers make the rerun skip what its first attempt finished)."""

    def __init__(self, unit: Unit, out: str) -> None:
        self.unit, self.out = unit, out

    def __call__(self) -> float:
        return execute_unit(self.unit, self.out)


def check_cluster(settings: ExecutorSettings) -> None:
    """One line when a real Slurm cluster is not there: no ``sbatch`` on PATH, or a controller
    that ``sinfo`` cannot reach."""
    if settings.slurm_cluster != "slurm":
        return
    hint = "run on a Slurm login node, or --slurm-cluster local to run the jobs on this machine"
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        raise InputError(f"--executor slurm: sbatch not found on PATH ({hint})")
    try:
        proc = subprocess.run(
            ["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"--executor slurm: sinfo timed out ({hint})") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise InputError(f"--executor slurm: no Slurm controller ({why}; {hint})")


def job_parameters(unit: Unit, settings: ExecutorSettings) -> dict[str, Any]:
    """submitit parameters of ``unit``'s job (the sbatch options it gets).

    Example:
        >>> s = ExecutorSettings(executor="slurm", slurm_partition="gpu", gpus_per_task=1)
        >>> p = job_parameters(Unit("train/a", "train", print, gpus=1), s)
        >>> p["slurm_partition"], p["gpus_per_node"], p["timeout_min"]
        ('gpu', 1, 1440)
    """
    gpus = settings.slurm_gpus_per_job or math.ceil(settings.gpus_per_task)
    params: dict[str, Any] = {
        "name": unit.id.replace("/", ":"),
        "timeout_min": settings.slurm_time,
        "cpus_per_task": settings.cpus_per_task,
        "gpus_per_node": gpus if unit.gpus and gpus else None,
        "slurm_partition": settings.slurm_partition,
        "slurm_account": settings.slurm_account,
        "slurm_additional_parameters": settings.sbatch_options(),
    }
    return {k: v for k, v in params.items() if v is not None}


def describe_jobs(units: Sequence[Unit], settings: ExecutorSettings) -> list[str]:
    """The jobs ``--dry-run`` prints: one per unit, in submission order, with its options and
    the jobs it waits for.

    Example:
        >>> s = ExecutorSettings(executor="slurm", slurm_partition="gpu")
        >>> units = [Unit("train/a", "train", print, gpus=1),
        ...          Unit("eval/a/t", "eval", print, deps=("train/a",), gpus=1)]
        >>> describe_jobs(units, s)[1]
        'job 2/2: eval/a/t  -p gpu --time 1440 --cpus-per-task 1 --gpus 1 --dependency afterok:job1'
    """
    lines = []
    number = {u.id: i for i, u in enumerate(units, start=1)}
    for unit in units:
        p = job_parameters(unit, settings)
        opts = [f"-p {p['slurm_partition']}"] if "slurm_partition" in p else []
        opts += [f"-A {p['slurm_account']}"] if "slurm_account" in p else []
        opts += [f"--time {p['timeout_min']}", f"--cpus-per-task {p['cpus_per_task']}"]
        opts += [f"--gpus {p['gpus_per_node']}"] if "gpus_per_node" in p else []
        opts += [f"--{k} {v}" for k, v in p["slurm_additional_parameters"].items()]
        deps = [f"job{number[d]}" for d in unit.deps if d in number]
        opts += [f"--dependency afterok:{':'.join(deps)}"] if deps else []
        lines.append(f"job {number[unit.id]}/{len(units)}: {unit.id}  {' '.join(opts)}")
    return lines


def _executor(out: str, settings: ExecutorSettings) -> Any:
    folder = Path(out) / LOG_DIR / "%j"
    return submitit.AutoExecutor(folder=folder, cluster=settings.slurm_cluster)


def _wait(jobs: list[Any]) -> tuple[Any, float | BaseException]:
    while True:
        for job in jobs:
            if job.done():
                try:
                    return job, job.result()
                except Exception as err:  # submitit's FailedJobError: the unit failed
                    return job, err
        time.sleep(0.5)


def run_slurm(
    todo: Sequence[Unit], out: str, settings: ExecutorSettings, echo: Callable[[str], None]
) -> None:
    """Run ``todo`` as one submitit job per unit (see the module docstring)."""
    executor = _executor(out, settings)
    jobs: dict[str, Any] = {}
    real = settings.slurm_cluster == "slurm"

    def start(unit: Unit) -> Any:
        params = job_parameters(unit, settings)
        if real:
            deps = [jobs[d].job_id for d in unit.deps if d in jobs]
            if deps:
                extra = dict(params["slurm_additional_parameters"])
                extra["dependency"] = "afterok:" + ":".join(deps)
                extra["kill-on-invalid-dep"] = "yes"
                params["slurm_additional_parameters"] = extra
        executor.update_parameters(**params)
        jobs[unit.id] = executor.submit(UnitJob(unit, out))
        return jobs[unit.id]

    if real:  # Slurm keeps the dependencies: every job is queued now, in schedule order
        queued = {u.id: start(u) for u in todo}

        def queued_or_again(unit: Unit) -> Any:  # a retry is submitted again
            job = queued.pop(unit.id, None)
            return start(unit) if job is None else job

        drive(todo, out, queued_or_again, _wait, echo=echo, parallel=len(todo) or 1,
              where="slurm", retries=settings.retries)  # fmt: skip
        return
    where = f"submitit {settings.slurm_cluster} executor (no Slurm)"
    drive(todo, out, start, _wait, echo=echo, parallel=1, where=where, retries=settings.retries)
