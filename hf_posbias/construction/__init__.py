"""Build a position-aware retrieval benchmark from any corpus with Z25's FineWeb-PosQ recipe.

- :mod:`~hf_posbias.construction.recipe` — the model-free parts (passages, the
  recursive splitter, Algorithm 1, FAQ replies, every filter);
- :mod:`~hf_posbias.construction.recipe_settings` — :class:`BenchmarkBuildSettings`, every model,
  threshold and size of the recipe;
- :mod:`~hf_posbias.construction.prompts` — the summary, FAQ and judge prompts (shipped, or a
  user's prompt file);
- :mod:`~hf_posbias.construction.prelabel` — Stage 2's reranker pre-label;
- :mod:`~hf_posbias.construction.outputs` — the task folder, the tiny task and the Hub folder
  with its construction table;
- :mod:`~hf_posbias.construction.build` — the resumable sharded stages
  (:func:`build_benchmark`), behind ``posbias benchmark from-corpus``.

Example:
    >>> from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings
    >>> BenchmarkBuildSettings(corpus="demo", out="t").rerankers
    'bm25,bi:all-MiniLM-L6-v2'
"""
