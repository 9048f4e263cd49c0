"""What both trainers share: the bi-encoder (:mod:`hf_posbias.training`) and DebiasFirst
(:mod:`hf_posbias.listwise.training`) import it; it imports neither.

- :mod:`~hf_posbias.trainer_base.compute` — ``ComputeSettings`` (global batch, precision,
  checkpointing, mini-batching, attention kernel, memory budget, seed) and ``ResolvedCompute``;
- :mod:`~hf_posbias.trainer_base.scaffold` — the skeleton around a model and its loss (output
  folder, seeding, ``TrainingArguments``, the agreed memory plan, ``fit``, saving, the entry);
- :mod:`~hf_posbias.trainer_base.memory` — the GPU preflight, ``cpu_plan``, ``shared_plan``;
- :mod:`~hf_posbias.trainer_base.shapes` — ``ModelShape`` and FLOPs, tiny configs per family;
- :mod:`~hf_posbias.trainer_base.attention` — the attention kernel a checkpoint loads with,
  activation checkpointing;
- :mod:`~hf_posbias.trainer_base.callbacks` — the training progress line.

(Not ``base``: in this project a base is a base model.) Light on import: transformers and torch
load inside the functions that need them.

Example:
    >>> from hf_posbias.trainer_base.compute import ComputeSettings
    >>> ComputeSettings().global_batch
    256
"""
