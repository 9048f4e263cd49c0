"""Position tasks: the task-folder format, bucketing, the benchmark registry and builders,
plain BEIR folders, per-position scoring and the mteb task classes.

This package's face re-exports :mod:`hf_posbias.tasks.mteb_tasks` (the task base class
:class:`PositionRetrievalTask`, one class per registered task — a plugin's too, by its card's
``class_name`` —, :func:`get_task`) on first use:
mteb is imported when one of those names is read, not when a submodule such as
:mod:`hf_posbias.tasks.taskdata` is imported.

Example:
    >>> from hf_posbias.tasks.mteb_tasks import SciFactEvidence, task_names
    >>> SciFactEvidence.metadata.name, task_names()[:2]
    ('SciFact-Evidence', ['SQuAD-PosQ', 'SQuAD-PosQ-tiny'])
"""
