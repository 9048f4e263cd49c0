"""hf-posbias: measure and control position bias in dense retrievers.

The face, in the shape of ``mteb``: one call per job, loaded on first use (PEP 562), so
``import hf_posbias`` loads no torch, mteb, datasets or transformers and ``posbias --help``
stays instant. The calls live in :mod:`hf_posbias.api`.

Example:
    >>> import hf_posbias as pb
    >>> pb.POSITIONS
    ('begin', 'middle', 'end')
    >>> pb.psi([0.5, 0.5, 0.5])
    0.0
    >>> "evaluate" in dir(pb) and "evaluate" in pb.__all__
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hf_posbias.positions import POSITIONS
from hf_posbias.version import __version__

__all__ = [
    "POSITIONS",
    "__version__",
    "evaluate",
    "compare",
    "get_task",
    "list_benchmarks",
    "load_model",
    "load_training_set",
    "train",
    "run_study",
    "psi",
    "evidence_moving",
]

_FACE = tuple(__all__[2:])
"""The calls of :mod:`hf_posbias.api` (a test keeps the two equal)."""

if TYPE_CHECKING:
    from hf_posbias.api import (
        evidence_moving,
        get_task,
        list_benchmarks,
        load_model,
        load_training_set,
        psi,
        run_study,
        train,
    )
    from hf_posbias.evaluation.compare import compare_runs as compare
    from hf_posbias.evaluation.runs.results_cache import evaluate


def __getattr__(name: str) -> Any:
    """``hf_posbias.evaluate`` and the rest of the face: imported on first use."""
    if name in _FACE:
        import importlib

        value = getattr(importlib.import_module("hf_posbias.api"), name)
        globals()[name] = value  # the next access is a plain attribute
        return value
    raise AttributeError(f"module 'hf_posbias' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
