"""The executor setting, declared once: ``--executor local|ray|slurm`` and its options.

A verb that fans out work takes these fields (the study spec inherits them, so each is both a
flag of ``posbias study run`` and a spec key). ``local`` runs the units one after another in this
process (the default); ``ray`` places them on a Ray cluster (this machine's GPUs, or the cluster
at ``--ray-address``); ``slurm`` submits one Slurm job per unit through submitit.

Example:
    >>> ExecutorSettings(executor="ray", gpus_per_task=1).executor
    'ray'
    >>> ExecutorSettings(executor="dask")
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: executor must be one of local, ray, slurm, got 'dask'
    >>> ExecutorSettings(retries=-1)
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: retries must be >= 0, got -1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hf_posbias.setting_values import at_least
from hf_posbias.settings import Settings, check_choice, setting

EXECUTORS: tuple[str, ...] = ("local", "ray", "slurm")
SUBMITIT_CLUSTERS: tuple[str, ...] = ("slurm", "local", "debug")


def _gpus_setting(value: object) -> float | str:
    """``--gpus-per-task`` as given (a flag's text, a spec's number): ``auto`` or a number (its
    range is the field's: checked with every other range).

    Example:
        >>> _gpus_setting("0.5"), _gpus_setting("auto"), _gpus_setting(1)
        (0.5, 'auto', 1.0)
        >>> _gpus_setting("all")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --gpus-per-task must be auto or a number, got 'all'
    """
    from hf_posbias.errors import InputError

    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        if isinstance(value, bool):
            raise TypeError(value)
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"--gpus-per-task must be auto or a number, got {value!r}") from None


@dataclass(kw_only=True)
class ExecutorSettings(Settings):
    """Where the units of work run, and with what resources."""

    executor: Literal["local", "ray", "slurm"] = setting(
        "where the units of work run: local (one after another in this process), ray (a Ray "
        "cluster: this machine's GPUs or --ray-address), slurm (one job per unit via submitit)",
        default="local",
    )
    ray_address: str | None = setting(
        "ray: join this cluster (e.g. 10.0.0.1:6379, or auto); unset: start Ray on this machine",
        default=None,
        metavar="ADDR",
    )
    gpus_per_task: float | Literal["auto"] = setting(
        "ray/slurm: GPUs per training or evaluation unit: auto (one where the Ray cluster or "
        "the Slurm partition has GPUs, none where it has none) or a number",
        default="auto",
        range=at_least(0),
    )
    cpus_per_task: int = setting("ray/slurm: CPU cores per unit", default=1, range=at_least(1))
    retries: int = setting(
        "ray/slurm: times a failed or preempted unit is started again",
        default=2,
        range=at_least(0),
    )
    slurm_partition: str | None = setting("slurm: partition (sbatch -p)", default=None)
    slurm_account: str | None = setting("slurm: account (sbatch -A)", default=None)
    slurm_time: int = setting(
        "slurm: time limit per job in minutes", default=24 * 60, range=at_least(1)
    )
    slurm_gpus_per_job: int | None = setting(
        "slurm: GPUs per job (default: --gpus-per-task rounded up)",
        default=None,
        range=at_least(1),
    )
    slurm_options: list[str] = setting(
        "slurm: extra sbatch options as KEY=VALUE (e.g. qos=high constraint=a100)",
        default_factory=list,
    )
    slurm_cluster: Literal["slurm", "local", "debug"] = setting(
        "slurm: submitit's cluster: slurm (sbatch), local (submitit's LocalExecutor: processes "
        "on this machine, no sbatch; for tests), debug (in this process)",
        default="slurm",
    )

    def __post_init__(self) -> None:
        self.gpus_per_task = _gpus_setting(self.gpus_per_task)
        super().__post_init__()
        check_choice("executor", self.executor, EXECUTORS)
        check_choice("slurm_cluster", self.slurm_cluster, SUBMITIT_CLUSTERS)
        self.slurm_options = list(self.slurm_options)
        for option in self.slurm_options:
            if "=" not in option:
                from hf_posbias.errors import InputError

                raise InputError(f"--slurm-options takes KEY=VALUE, got {option!r}")

    def unit_gpus(self, offered: float) -> float:
        """GPUs per training or evaluation unit on a cluster that offers ``offered`` GPUs in
        all: ``auto`` takes one where there are GPUs and none where there are none; a number is
        taken as it is (a request the cluster cannot meet is refused before any unit starts).

        Example:
            >>> ExecutorSettings().unit_gpus(0), ExecutorSettings().unit_gpus(8)
            (0.0, 1.0)
            >>> ExecutorSettings(gpus_per_task=2).unit_gpus(0)
            2.0
        """
        if self.gpus_per_task == "auto":
            return 1.0 if offered > 0 else 0.0
        return float(self.gpus_per_task)

    def sbatch_options(self) -> dict[str, str]:
        """``--slurm-options`` as a mapping (submitit's ``slurm_additional_parameters``).

        Example:
            >>> ExecutorSettings(slurm_options=["qos=high"]).sbatch_options()
            {'qos': 'high'}
        """
        return dict(o.split("=", 1) for o in self.slurm_options)
