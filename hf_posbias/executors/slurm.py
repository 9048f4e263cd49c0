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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import submitit

from hf_posbias.errors import InputError
from hf_posbias.executors.driver import WAITING_REPORT_S, PendingWatch, drive
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


@dataclass(frozen=True)
class PartitionOffer:
    """What one Slurm partition offers a job: its nodes, and the largest node's CPUs and GPUs
    (``gpu`` gres)."""

    partition: str
    nodes: int
    cpus: int
    gpus: int
    gres: str


def gres_gpus(gres: str) -> int:
    """GPUs in a node's ``sinfo %G`` gres string.

    Example:
        >>> gres_gpus("gpu:a100:4(S:0-1),shard:8"), gres_gpus("gpu:2"), gres_gpus("(null)")
        (4, 2, 0)
    """
    total = 0
    for item in gres.split(","):
        fields = item.split("(")[0].split(":")
        if fields[0] == "gpu":
            total += int(fields[-1]) if fields[-1].isdigit() else 1
    return total


def parse_partitions(sinfo: str, partition: str | None) -> PartitionOffer | None:
    """The offer of ``partition`` (None: the default one, marked ``*``) from the lines of
    ``sinfo -h -o "%P|%D|%c|%G"``; None when sinfo lists no such partition.

    Example:
        >>> lines = "test*|1|2|(null)\\ngpu|4|64|gpu:a100:8\\ngpu|2|32|gpu:a100:4"
        >>> parse_partitions(lines, None)
        PartitionOffer(partition='test', nodes=1, cpus=2, gpus=0, gres='(null)')
        >>> parse_partitions(lines, "gpu").gpus, parse_partitions(lines, "gpu").nodes
        (8, 6)
    """
    rows = []
    for line in sinfo.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 4 or not fields[1].isdigit():
            continue
        name, default = fields[0].rstrip("*"), fields[0].endswith("*")
        if (partition is None and default) or name == partition:
            rows.append((name, int(fields[1]), fields[2], fields[3]))
    if not rows:
        return None
    cpus = max(int(c.split("/")[-1]) if c.split("/")[-1].isdigit() else 0 for _, _, c, _ in rows)
    return PartitionOffer(
        partition=rows[0][0],
        nodes=sum(n for _, n, _, _ in rows),
        cpus=cpus,
        gpus=max(gres_gpus(g) for _, _, _, g in rows),
        gres=",".join(sorted({g for _, _, _, g in rows})),
    )


def partition_offer(settings: ExecutorSettings) -> PartitionOffer:
    """What the partition of ``--slurm-partition`` (or the default one) offers, from ``sinfo``;
    one line when sinfo does not list it."""
    proc = subprocess.run(
        ["sinfo", "-h", "-o", "%P|%D|%c|%G"], capture_output=True, text=True, timeout=30
    )
    offer = parse_partitions(proc.stdout, settings.slurm_partition)
    if offer is None:
        which = (
            f"partition {settings.slurm_partition!r}"
            if settings.slurm_partition
            else ("a default partition")
        )
        raise InputError(f"--executor slurm: sinfo lists no {which}")
    return offer


def slurm_unit_gpus(settings: ExecutorSettings, offer: PartitionOffer | None) -> int:
    """GPUs per training or evaluation job: ``--slurm-gpus-per-job``, else ``--gpus-per-task``
    rounded up (``auto``: one where the partition has GPU gres, none where it has none; with no
    partition to ask — a dry run, submitit's local cluster — one)."""
    if settings.slurm_gpus_per_job:
        return settings.slurm_gpus_per_job
    return math.ceil(settings.unit_gpus(offer.gpus if offer is not None else 1))


def check_partition_fits(units: Sequence[Unit], settings: ExecutorSettings, offer: PartitionOffer,
                    gpus: int) -> None:  # fmt: skip
    """One :class:`InputError` line when a job asks for more GPUs or CPUs than any node of the
    partition offers (Slurm would hold it pending forever, or refuse it after others ran).

    Example:
        >>> offer = PartitionOffer("test", 1, 2, 0, "(null)")
        >>> try:
        ...     check_partition_fits([Unit("train/a", "train", print, gpus=1)], ExecutorSettings(),
        ...                     offer, 1)
        ... except InputError as err:
        ...     print(str(err).split(", but ")[1])
        partition 'test' offers at most 0 GPU and 2 CPU per node (gres: (null); 1 node)
    """
    wants_gpus = gpus if any(u.gpus for u in units) else 0
    if wants_gpus <= offer.gpus and settings.cpus_per_task <= offer.cpus:
        return
    raise InputError(
        f"--executor slurm: a job asks for {wants_gpus} GPU and {settings.cpus_per_task} CPU, "
        f"but partition {offer.partition!r} offers at most {offer.gpus} GPU and {offer.cpus} "
        f"CPU per node (gres: {offer.gres}; {offer.nodes} node{'s' if offer.nodes != 1 else ''})"
    )


def job_parameters(
    unit: Unit, settings: ExecutorSettings, unit_gpus: int | None = None
) -> dict[str, Any]:
    """submitit parameters of ``unit``'s job (the sbatch options it gets); ``unit_gpus``: the
    GPUs of a training or evaluation job (default: :func:`slurm_unit_gpus` with no partition
    asked).

    Example:
        >>> s = ExecutorSettings(executor="slurm", slurm_partition="gpu", gpus_per_task=1)
        >>> p = job_parameters(Unit("train/a", "train", print, gpus=1), s)
        >>> p["slurm_partition"], p["gpus_per_node"], p["timeout_min"]
        ('gpu', 1, 1440)
    """
    gpus = slurm_unit_gpus(settings, None) if unit_gpus is None else unit_gpus
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


def pending_reasons(job_ids: Sequence[str]) -> dict[str, str]:
    """Slurm's state and ``Reason`` of each job of ``job_ids`` still queued (``squeue``)."""
    if not job_ids:
        return {}
    proc = subprocess.run(
        ["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i|%T|%r"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    reasons = {}
    for line in proc.stdout.splitlines():
        job, _, rest = line.strip().partition("|")
        state, _, reason = rest.partition("|")
        reasons[job] = f"Slurm: {state} ({reason})" if reason else f"Slurm: {state}"
    return reasons


class _SqueueReasons:
    """``reason_of(unit)`` for :class:`PendingWatch`: one ``squeue`` call for every job asked
    about in one check."""

    def __init__(self, job_of: dict[str, str]) -> None:
        self.job_of, self.reasons = job_of, None

    def __call__(self, unit: Unit) -> str:
        if self.reasons is None:
            self.reasons = pending_reasons(list(self.job_of.values()))
        return self.reasons.get(self.job_of[unit.id], "Slurm: not in squeue")


def _waiter(watch: PendingWatch | None, units_of: dict[str, Unit]) -> Any:
    """``wait(jobs)`` for the driver: the first finished job; meanwhile units a real Slurm has
    not started are reported with squeue's reason."""

    def wait(jobs: list[Any]) -> tuple[Any, float | BaseException]:
        while True:
            for job in jobs:
                if job.done():
                    try:
                        return job, job.result()
                    except Exception as err:  # submitit's FailedJobError: the unit failed
                        return job, err
            if watch is not None:
                job_of = {units_of[j.job_id].id: j.job_id for j in jobs if j.job_id in units_of}
                queued = [units_of[job] for job in job_of.values()]
                watch.check(queued, _SqueueReasons(job_of))
            time.sleep(0.5)

    return wait


def run_slurm(
    todo: Sequence[Unit],
    out: str,
    settings: ExecutorSettings,
    echo: Callable[[str], None],
    *,
    waiting_report_s: float = WAITING_REPORT_S,
) -> None:
    """Run ``todo`` as one submitit job per unit (see the module docstring). On real Slurm the
    partition is asked first: ``--gpus-per-task auto`` takes one GPU per job where it has GPU
    gres and none where it has none; a job no node can take is refused before any is
    submitted; a job still pending after ``waiting_report_s`` seconds is reported with
    Slurm's ``Reason``."""
    real = settings.slurm_cluster == "slurm"
    offer = partition_offer(settings) if real else None
    unit_gpus = slurm_unit_gpus(settings, offer)
    if offer is not None:
        check_partition_fits(todo, settings, offer, unit_gpus)
        if not unit_gpus and any(u.gpus for u in todo):
            echo(f"slurm: no GPU in partition {offer.partition!r}: units run on CPU")
    executor = _executor(out, settings)
    jobs: dict[str, Any] = {}
    units_of: dict[str, Unit] = {}
    watch = PendingWatch(out, echo, after_s=waiting_report_s) if real else None
    _wait = _waiter(watch, units_of)

    def start(unit: Unit) -> Any:
        params = job_parameters(unit, settings, unit_gpus)
        if real:
            deps = [jobs[d].job_id for d in unit.deps if d in jobs]
            if deps:
                extra = dict(params["slurm_additional_parameters"])
                extra["dependency"] = "afterok:" + ":".join(deps)
                extra["kill-on-invalid-dep"] = "yes"
                params["slurm_additional_parameters"] = extra
        executor.update_parameters(**params)
        jobs[unit.id] = executor.submit(UnitJob(unit, out))
        units_of[jobs[unit.id].job_id] = unit
        if watch is not None:
            watch.handed(unit)
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
