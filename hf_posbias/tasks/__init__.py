"""Position tasks: the task-folder format, bucketing, the benchmark registry and builders,
plain BEIR folders, per-position scoring and the mteb task classes.

This package's face re-exports :mod:`hf_posbias.tasks.mteb_tasks` (the task base class
:class:`PositionRetrievalTask`, one class per registered task — a plugin's too, by its card's
``class_name`` —, :func:`get_task`) on first use:
mteb is imported when one of those names is read, not when a submodule such as
:mod:`hf_posbias.tasks.taskdata` is imported.

Example:
    >>> from hf_posbias.tasks import SciFactEvidence, task_names
    >>> SciFactEvidence.metadata.name, task_names()[:2]
    ('SciFact-Evidence', ['SQuAD-PosQ', 'SQuAD-PosQ-tiny'])
"""

from __future__ import annotations

from typing import Any

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


def __getattr__(name: str) -> Any:
    # Lazy (PEP 562): importing hf_posbias.tasks.<submodule> must not import mteb.
    if name in __all__:
        from hf_posbias.tasks import mteb_tasks

        return getattr(mteb_tasks, name)
    if name[:1].isupper():  # the class of a task registered without one of its own
        from hf_posbias.tasks.registry import cards

        for card in cards().values():
            if card.class_name == name:
                from hf_posbias.tasks.mteb_tasks import task_class

                return task_class(card)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
