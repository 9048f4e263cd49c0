"""Query generation: stage 2 of the data pipeline (documents → candidates).

- :mod:`~hf_posbias.generation.base` — ``Candidate``, the ``QueryGenerator`` protocol;
- :mod:`~hf_posbias.generation.generator_registry` — ``make_generator`` (``"ict"`` |
  ``"openai"`` | ``"local-lm"``);
- :mod:`~hf_posbias.generation.ict` — Inverse Cloze Task pseudo-queries, the offline default;
- :mod:`~hf_posbias.generation.llm` — YHP26's two-stage persona prompt;
- :mod:`~hf_posbias.generation.backends` — OpenAI-compatible and local ``transformers`` chat;
- :mod:`~hf_posbias.generation.personas` — PersonaHub personas ranked by similarity;
- :mod:`~hf_posbias.generation.stage` — ``run_generation``, resumable and shardable.

This package imports nothing; torch, openai and sentence-transformers load lazily.

Example:
    >>> from hf_posbias.generation.generator_registry import make_generator
    >>> make_generator("ict").name
    'ict'
"""
