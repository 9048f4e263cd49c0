"""Public home of the position tasks: ``from hf_posbias.tasks import SciFactEvidence, get_task``.

Re-exports :mod:`hf_posbias.evaluation.data.tasks` (importing it imports mteb): the task base class
:class:`PositionRetrievalTask`, one class per registered task, and :func:`get_task`.

Example:
    >>> from hf_posbias.tasks import SciFactEvidence, task_names
    >>> SciFactEvidence.metadata.name, task_names()[:2]
    ('SciFact-Evidence', ['SQuAD-PosQ', 'SQuAD-PosQ-tiny'])
"""

from __future__ import annotations

from hf_posbias.evaluation.data.tasks import (
    NAMED_TASKS,
    ClimateFEVEREvidence,
    FEVEREvidence,
    FineWebPosQ,
    FineWebPosQTiny,
    HotpotQAEvidence,
    PosIR,
    PositionRetrievalTask,
    SciFactEvidence,
    SQuADPosQ,
    SQuADPosQTiny,
    build_metadata,
    get_task,
    named_task_class,
    task_names,
)

__all__ = [
    "NAMED_TASKS",
    "ClimateFEVEREvidence",
    "FEVEREvidence",
    "FineWebPosQ",
    "FineWebPosQTiny",
    "HotpotQAEvidence",
    "PosIR",
    "PositionRetrievalTask",
    "SQuADPosQ",
    "SQuADPosQTiny",
    "SciFactEvidence",
    "build_metadata",
    "get_task",
    "named_task_class",
    "task_names",
]
