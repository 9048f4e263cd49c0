"""Position tasks: the task-folder format, bucketing, the benchmark registry and builders,
plain BEIR folders, per-position scoring and the mteb task classes.

The mteb task classes live in :mod:`hf_posbias.tasks.mteb_tasks` (the task base class
``PositionRetrievalTask``, one class per registered task — a plugin's too, by its card's
``class_name`` —, ``get_task``): mteb is imported with that module, not with a module such as
:mod:`hf_posbias.tasks.taskdata`.

Example:
    >>> from hf_posbias.tasks.mteb_tasks import SciFactEvidence, task_names
    >>> SciFactEvidence.metadata.name, task_names()[:2]
    ('SciFact-Evidence', ['SQuAD-PosQ', 'SQuAD-PosQ-tiny'])
"""
