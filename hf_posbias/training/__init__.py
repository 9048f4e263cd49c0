"""Training position-controlled bi-encoders (YHP26 §4): builder, batching, runs.

Light on import: the heavy libraries load inside the functions that need them. The bases it
trains (the 8 of YHP26 and user-defined ones) are model names, resolved where every model name
is: :mod:`hf_posbias.modeling.bases`.

- :mod:`~hf_posbias.training.builder` — checkpoint → SentenceTransformer (pooling, pad, prompts).
- :mod:`~hf_posbias.training.batching` — single-bin, duplicate-free, DDP-aligned batches.
- :mod:`~hf_posbias.training.train` — :func:`train_model` / ``python -m …train`` (+ ``ips``).
- :mod:`~hf_posbias.training.card` — the bi-encoder's model card (``BI_ENCODER_CARD``).
- :mod:`~hf_posbias.training.matrix` — models × configs runs (resumable, shardable).

Example:
    >>> from hf_posbias.modeling.bases import get_model_spec
    >>> get_model_spec("bert-base").pooling
    'cls'
"""
