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

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.base import ListwiseReranker
from hf_posbias.listwise.window import DEFAULT_WINDOW

MODES: tuple[str, ...] = ("first", "generate")
CROSS_ENCODER_PREFIX = "cross-encoder:"


@dataclass
class RerankerOptions:
    """Options shared by the listwise commands (their CLI flags)."""

    mode: str = "first"
    dtype: str = "auto"
    device: str | None = None
    batch_size: int = 8
    passage_tokens: int | None = None
    identifiers: str = "letters"
    window: int = DEFAULT_WINDOW
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"


def _is_cross_encoder_folder(name: str) -> bool:
    config = Path(name).expanduser() / "config.json"
    if not config.is_file():
        return False
    try:
        architectures = json.loads(config.read_text()).get("architectures") or []
    except (OSError, json.JSONDecodeError):
        return False
    return any(str(a).endswith("ForSequenceClassification") for a in architectures)


def is_pointwise(name: str) -> bool:
    """Whether ``name`` is a pointwise reranker (BM25 or a cross-encoder).

    Example:
        >>> is_pointwise("bm25"), is_pointwise("cross-encoder:x"), is_pointwise("smollm2-135m")
        (True, True, False)
    """
    from hf_posbias.bm25 import is_bm25

    return is_bm25(name) or name.startswith(CROSS_ENCODER_PREFIX) or _is_cross_encoder_folder(name)


def load_reranker(
    name: str,
    options: RerankerOptions | None = None,
    *,
    corpus_texts: Iterable[str] | None = None,
    **overrides: Any,
) -> ListwiseReranker:
    """Build the reranker ``name`` stands for (see the module docstring).

    ``overrides`` replace fields of ``options`` (``load_reranker(name, passage_tokens=48)``).
    """
    opts = options or RerankerOptions()
    for key, value in overrides.items():
        if not hasattr(opts, key):
            raise TypeError(f"unknown reranker option {key!r}")
        setattr(opts, key, value)
    if opts.mode not in MODES:
        raise InputError(f"unknown --mode {opts.mode!r}: choose {' or '.join(MODES)}")
    if opts.window < 1:
        raise InputError(f"--window must be at least 1, got {opts.window}")
    from hf_posbias.bm25 import is_bm25

    if is_bm25(name):
        if corpus_texts is None:
            raise InputError("the bm25 reranker needs the corpus for its statistics")
        from hf_posbias.listwise.pointwise import bm25_reranker

        return bm25_reranker(corpus_texts)
    if name.startswith(CROSS_ENCODER_PREFIX) or _is_cross_encoder_folder(name):
        from hf_posbias.listwise.pointwise import cross_encoder_reranker

        model = name.removeprefix(CROSS_ENCODER_PREFIX)
        return cross_encoder_reranker(model, device=opts.device, batch_size=opts.batch_size)
    if opts.base_url:
        from hf_posbias.generation.backends import OpenAIChatBackend
        from hf_posbias.listwise.generative import EndpointReranker

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
    from hf_posbias.listwise.identifiers import identifier_labels
    from hf_posbias.modeling import load_causal_lm

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
        from hf_posbias.listwise.generative import LocalGenerationReranker

        return LocalGenerationReranker(model, tokenizer, **common)
    from hf_posbias.listwise.first import FirstReranker

    return FirstReranker(model, tokenizer, **common)
