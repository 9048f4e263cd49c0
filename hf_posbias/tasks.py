"""Public home of the position tasks: ``from hf_posbias.tasks import get_task, SQuADPosQ``.

A thin re-export of :mod:`hf_posbias.evaluation.tasks` (mteb is imported only when a task class
is first used, so importing this module stays instant).

Example:
    >>> from hf_posbias.tasks import task_names
    >>> task_names()[:2]
    ['SQuAD-PosQ', 'SQuAD-PosQ-tiny']
"""

from __future__ import annotations

from typing import Any

from hf_posbias.evaluation.tasks import (
    CARDS,
    CLASS_NAMES,
    TaskCard,
    build_metadata,
    get_task,
    named_task_class,
    position_task_class,
    task_names,
)

__all__ = [
    "CARDS",
    "CLASS_NAMES",
    "TaskCard",
    "build_metadata",
    "get_task",
    "named_task_class",
    "position_task_class",
    "task_names",
    # Built lazily by __getattr__ (they subclass mteb's AbsTaskRetrieval):
    "PositionRetrievalTask",  # noqa: F822
    "SQuADPosQ",  # noqa: F822
    "SQuADPosQTiny",  # noqa: F822
    "FineWebPosQ",  # noqa: F822
    "FineWebPosQTiny",  # noqa: F822
    "PosIR",  # noqa: F822
    "SciFactEvidence",  # noqa: F822
    "ClimateFEVEREvidence",  # noqa: F822
]


def __getattr__(attr: str) -> Any:
    # Task classes subclass mteb's AbsTaskRetrieval; build them on first access only.
    from hf_posbias.evaluation import tasks as _tasks

    return getattr(_tasks, attr)
