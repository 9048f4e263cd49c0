"""A Ray started inside a test process with the resources the test declares (no dashboard, a
small object store, workers' logs kept off the driver): the executor tests' fixtures."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest


@contextlib.contextmanager
def local_ray(*, num_cpus: int = 2, num_gpus: int = 0) -> Iterator[Any]:
    """``ray`` initialised here with ``num_cpus`` CPUs and ``num_gpus`` logical GPUs (a CPU
    machine's Ray takes any number it is told); shut down after."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False,
             object_store_memory=80 << 20, log_to_driver=False, logging_level="ERROR")  # fmt: skip
    try:
        yield ray
    finally:
        ray.shutdown()
