"""``--executor ray``: each unit a Ray task with the GPUs and CPUs it needs.

Without ``--ray-address`` Ray starts on this machine and uses its GPUs (one unit per GPU with
the default ``--gpus-per-task auto``, none on a machine without GPUs: units then run on CPU);
with it, the driver joins that cluster (every node must see the output
folder). A task that raises or whose worker dies is retried ``--retries`` times by Ray. Ready
units are submitted in :func:`~hf_posbias.executors.units.schedule_order` (longest projected
chain first), so Ray starts the longest runs first as GPUs free up.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from hf_posbias.errors import InputError, first_line
from hf_posbias.executors.driver import WAITING_REPORT_S, PendingWatch, drive
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


POLL_S = 5.0
"""How often the driver looks at units Ray has not started yet."""


def describe_resources(resources: dict[str, float]) -> str:
    """``{"GPU": 2, "CPU": 1}`` → ``2 GPU, 1 CPU`` (GPUs first; other resources left out).

    Example:
        >>> describe_resources({"CPU": 16.0, "GPU": 0.0, "memory": 1e9})
        '0 GPU, 16 CPU'
    """
    return ", ".join(f"{resources.get(k, 0):g} {k}" for k in ("GPU", "CPU"))


def check_placeable(request: dict[str, float], nodes: Sequence[dict[str, Any]]) -> None:
    """One :class:`InputError` line when no live node of the cluster (``ray.nodes()``) offers
    ``request``: Ray would queue such a unit as infeasible and wait forever, silently.

    Example:
        >>> nodes = [{"Alive": True, "Resources": {"CPU": 2.0, "GPU": 1.0}}]
        >>> check_placeable({"GPU": 1, "CPU": 1}, nodes)
        >>> try:
        ...     check_placeable({"GPU": 2, "CPU": 1}, nodes)
        ... except InputError as err:
        ...     print(str(err).split("but ")[1])
        no node of the Ray cluster offers that (1 node; the largest offers 1 GPU, 2 CPU)
    """
    offers = [n.get("Resources", {}) for n in nodes if n.get("Alive", True)]
    if any(all(o.get(k, 0) >= v for k, v in request.items() if v) for o in offers):
        return
    largest = max(offers, key=lambda o: (o.get("GPU", 0), o.get("CPU", 0)), default={})
    raise InputError(
        f"--executor ray: a unit asks for {describe_resources(request)} (--gpus-per-task, "
        f"--cpus-per-task), but no node of the Ray cluster offers that ({len(offers)} node"
        f"{'s' if len(offers) != 1 else ''}; the largest offers {describe_resources(largest)})"
    )


def pending_reason(ray: Any, request: dict[str, float]) -> str:
    """Ray's side of a unit it has not started: what the unit waits for and what is free now."""
    free, total = ray.available_resources(), ray.cluster_resources()
    have = ", ".join(f"{free.get(k, 0):g}/{total.get(k, 0):g} {k}" for k in ("GPU", "CPU"))
    return f"Ray: pending until {describe_resources(request)} are free; free now {have}"


def run_ray(
    todo: Sequence[Unit],
    out: str,
    settings: ExecutorSettings,
    echo: Callable[[str], None],
    ray: Any,
    *,
    waiting_report_s: float = WAITING_REPORT_S,
) -> None:
    """Run ``todo`` as Ray tasks (see the module docstring). The GPUs each unit asks for come
    from ``--gpus-per-task`` (``auto``: one where the cluster has GPUs, none where it has
    none); a request no node can meet is refused before any unit starts, and a unit Ray has not
    started after ``waiting_report_s`` seconds is reported with Ray's reason."""
    remote = ray.remote(_execute)
    gpus_total = ray.cluster_resources().get("GPU", 0)
    unit_gpus = settings.unit_gpus(gpus_total)
    needs_gpus = any(u.gpus for u in todo)
    # the largest request of any unit: a training or evaluation unit's when there is one
    check_placeable(
        {"GPU": unit_gpus if needs_gpus else 0, "CPU": settings.cpus_per_task}, ray.nodes()
    )
    if needs_gpus and not unit_gpus:
        echo("ray: no GPU in the cluster: training and evaluation units run on CPU")
    watch = PendingWatch(out, echo, after_s=waiting_report_s)
    handles: dict[Any, Unit] = {}

    def request(unit: Unit) -> dict[str, float]:
        return {"GPU": unit_gpus if unit.gpus else 0, "CPU": settings.cpus_per_task}

    def start(unit: Unit) -> Any:
        ref = remote.options(
            num_gpus=request(unit)["GPU"],
            num_cpus=settings.cpus_per_task,
            max_retries=settings.retries,
            retry_exceptions=True,
            name=unit.id,
        ).remote(unit, out)
        handles[ref] = unit
        watch.handed(unit)
        return ref

    def wait(refs: list[Any]) -> tuple[Any, float | BaseException]:
        while True:
            ready, _ = ray.wait(refs, num_returns=1, timeout=min(POLL_S, waiting_report_s))
            if ready:
                break
            watch.check([handles[r] for r in refs], lambda u: pending_reason(ray, request(u)))
        handles.pop(ready[0], None)
        try:
            return ready[0], ray.get(ready[0])
        except Exception as err:  # RayTaskError wraps the unit's own exception
            cause = getattr(err, "cause", None)
            return ready[0], cause if isinstance(cause, BaseException) else err

    slots = int(gpus_total / unit_gpus) if gpus_total and unit_gpus else 0
    parallel = slots or int(ray.cluster_resources().get("CPU", 1) // settings.cpus_per_task)
    where = f"ray ({os.environ.get('RAY_ADDRESS') or settings.ray_address or 'local'})"
    # Ray retried each task already: the driver does not retry again.
    drive(todo, out, start, wait, echo=echo, parallel=max(parallel, 1), where=where)
