"""One reranker argument → one reranker: BM25, a cross-encoder, a causal LM, or an endpoint.

- ``bm25`` — the pointwise control (needs the corpus texts for its statistics);
- ``cross-encoder:NAME``, or any model whose config is a ``*ForSequenceClassification`` — the
  pointwise control with a cross-encoder;
- with ``base_url`` — an OpenAI-compatible endpoint serving the model ``NAME``
  (``mode`` ``generate`` or ``first``);
- anything else — a local causal LM (the packaged ``smollm2-135m``, a folder, a Hub id, a
  checkpoint written by training) scored the FIRST way (``mode="first"``, the default) or
  writing its permutation (``mode="generate"``).

The identifier check runs here, before any heavy work.

Example:
    >>> reranker = load_reranker("bm25", corpus_texts=["a cat", "a dog"])
    >>> reranker.describe()["kind"]
    'pointwise'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rerankers.base import ListwiseReranker
from hf_posbias.rerankers.options import RerankerOptions


def is_pointwise(name: str) -> bool:
    """Whether ``name`` is a pointwise reranker (BM25 or a cross-encoder).

    Example:
        >>> is_pointwise("bm25"), is_pointwise("cross-encoder:x"), is_pointwise("smollm2-135m")
        (True, True, False)
    """
    from hf_posbias.bm25 import is_bm25
    from hf_posbias.modeling import is_cross_encoder

    return is_bm25(name) or is_cross_encoder(name)


def load_reranker(
    name: str,
    options: RerankerOptions | None = None,
    *,
    corpus_texts: Iterable[str] | None = None,
    **overrides: Any,
) -> ListwiseReranker:
    """Build the reranker ``name`` stands for (see the module docstring).

    ``overrides`` replace fields of a copy of ``options`` (``load_reranker(name,
    passage_tokens=48)``); ``options`` itself is left as it was.
    """
    opts = options or RerankerOptions()
    if overrides:
        # A copy (checked again): the caller's options are never written into.
        opts = dataclasses.replace(opts, **overrides)
    from hf_posbias.bm25 import is_bm25
    from hf_posbias.modeling import CROSS_ENCODER_PREFIX, is_cross_encoder

    if is_bm25(name):
        if corpus_texts is None:
            raise InputError("the bm25 reranker needs the corpus for its statistics")
        from hf_posbias.rerankers.pointwise import bm25_reranker

        return bm25_reranker(corpus_texts)
    if is_cross_encoder(name):
        from hf_posbias.rerankers.pointwise import cross_encoder_reranker

        model = name.removeprefix(CROSS_ENCODER_PREFIX)
        return cross_encoder_reranker(model, device=opts.device, batch_size=opts.batch_size)
    if opts.base_url:
        from hf_posbias.generation.backends import OpenAIChatBackend
        from hf_posbias.rerankers.generative import EndpointReranker

        backend = OpenAIChatBackend(name, base_url=opts.base_url, api_key_env=opts.api_key_env)
        return EndpointReranker(
            backend,
            mode=opts.mode,
            style=opts.identifiers,
            window_size=opts.window,
            passage_tokens=opts.passage_tokens,
        )
    return _local_llm(name, opts)


def _local_llm(name: str, opts: RerankerOptions) -> ListwiseReranker:
    from hf_posbias.devices import default_device, device_info, resolve_inference_dtype
    from hf_posbias.modeling import load_causal_lm
    from hf_posbias.rerankers.identifiers import identifier_labels

    identifier_labels(opts.window, opts.identifiers)  # a bad style/window fails before loading
    device = opts.device or default_device()
    dtype = resolve_inference_dtype(opts.dtype, device_info(device))
    model, tokenizer = load_causal_lm(name, dtype=dtype, device=device, padding_side="left")
    common = {
        "name": name,
        "style": opts.identifiers,
        "window_size": opts.window,
        "passage_tokens": opts.passage_tokens,
        "batch_size": opts.batch_size,
    }
    if opts.mode == "generate":
        from hf_posbias.rerankers.generative import LocalGenerationReranker

        return LocalGenerationReranker(model, tokenizer, **common)
    from hf_posbias.rerankers.first import FirstReranker

    return FirstReranker(model, tokenizer, **common)
