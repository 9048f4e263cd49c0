"""``--executor ray``: each unit a Ray task with the GPUs and CPUs it needs.

Without ``--ray-address`` Ray starts on this machine and uses its GPUs (one unit per GPU with
``--gpus-per-task 1``); with it, the driver joins that cluster (every node must see the output
folder). A task that raises or whose worker dies is retried ``--retries`` times by Ray. Ready
units are submitted in :func:`~hf_posbias.executors.units.schedule_order` (longest projected
chain first), so Ray starts the longest runs first as GPUs free up.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from hf_posbias.errors import InputError, first_line
from hf_posbias.executors.driver import drive
from hf_posbias.executors.options import ExecutorSettings
from hf_posbias.executors.units import Unit, check_importable, execute_unit, python_path


def _execute(unit: Unit, out: str) -> float:
    return execute_unit(unit, out)


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """One :class:`InputError` line when nothing listens at ``host:port`` (Ray would retry for
    a minute before saying so).

    Example:
        >>> check_reachable("nowhere")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --ray-address must be HOST:PORT or auto, got 'nowhere'
    """
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--ray-address must be HOST:PORT or auto, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise InputError(f"--executor ray: no Ray cluster at {address} ({err})") from None


def connect(settings: ExecutorSettings) -> tuple[Any, bool]:
    """``(ray, started_here)``: Ray initialised (joined at ``--ray-address``, or started on this
    machine); one :class:`InputError` line when it cannot start. An already initialised Ray (a
    test's, a notebook's) is used as it is."""
    ray = check_importable("ray", "ray")
    if ray.is_initialized():
        return ray, False
    env = {"env_vars": {"PYTHONPATH": python_path()}}
    try:
        if settings.ray_address:
            ray.init(address=settings.ray_address, runtime_env=env, log_to_driver=False)
        else:
            ray.init(runtime_env=env, log_to_driver=False)
    except Exception as err:  # ConnectionError, ValueError, RuntimeError: all the user's setup
        where = settings.ray_address or "this machine"
        raise InputError(
            f"--executor ray: cannot start Ray on {where}: {first_line(err)}"
        ) from None
    return ray, True


def run_ray(
    todo: Sequence[Unit],
    out: str,
    settings: ExecutorSettings,
    echo: Callable[[str], None],
    ray: Any,
) -> None:
    """Run ``todo`` as Ray tasks (see the module docstring)."""
    remote = ray.remote(_execute)
    gpus_total = ray.cluster_resources().get("GPU", 0)

    def start(unit: Unit) -> Any:
        gpus = settings.gpus_per_task if unit.gpus else 0
        return remote.options(
            num_gpus=gpus,
            num_cpus=settings.cpus_per_task,
            max_retries=settings.retries,
            retry_exceptions=True,
            name=unit.id,
        ).remote(unit, out)

    def wait(refs: list[Any]) -> tuple[Any, float | BaseException]:
        ready, _ = ray.wait(refs, num_returns=1)
        try:
            return ready[0], ray.get(ready[0])
        except Exception as err:  # RayTaskError wraps the unit's own exception
            cause = getattr(err, "cause", None)
            return ready[0], cause if isinstance(cause, BaseException) else err

    per_gpu = settings.gpus_per_task or 1
    slots = int(gpus_total / per_gpu) if gpus_total and settings.gpus_per_task else 0
    parallel = slots or int(ray.cluster_resources().get("CPU", 1) // settings.cpus_per_task)
    where = f"ray ({os.environ.get('RAY_ADDRESS') or settings.ray_address or 'local'})"
    # Ray retried each task already: the driver does not retry again.
    drive(todo, out, start, wait, echo=echo, parallel=max(parallel, 1), where=where)
