"""The kinds of reranker argument: :class:`RerankerKind`, and the built-in kinds.

A kind says how to recognise a reranker argument (``matches(name, options)``), how to load it
(``load(name, options, corpus_texts)``: a
:class:`~hf_posbias.rerankers.base.ListwiseReranker`), what mteb files its results under
(``identity``), and its place in the one table of kinds (``order``) that
:func:`hf_posbias.rerankers.loading.resolve_reranker_kind` tries in order (the order and the
table are documented there). The built-in kinds are the objects below (:data:`BM25` …
:data:`REGISTRY`); a new kind is a :class:`RerankerKind` in a module of its own, registered by
one line in :data:`hf_posbias.rerankers.loading.BUILTIN_KINDS` or, from a third party's package,
by an entry point of the group ``hf_posbias.rerankers`` (docs/extending.md).

Example:
    >>> from hf_posbias.rerankers.options import RerankerOptions
    >>> options = RerankerOptions()
    >>> BM25.matches("BM25", options), LISTWISE_ENDPOINT.matches("openai:m", options)
    (True, True)
    >>> LISTWISE_ENDPOINT.identity("openai:m", RerankerOptions(base_url="http://h/v1"))
    ('openai/m', 'endpoint-http://h/v1')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from hf_posbias.errors import InputError, ModelLoadError
from hf_posbias.modeling.resolve import ENDPOINT_PREFIX
from hf_posbias.rerankers.base import ListwiseReranker
from hf_posbias.rerankers.options import RerankerOptions


def no_revision(name: str, options: RerankerOptions) -> tuple[str, str]:
    """The default :attr:`RerankerKind.identity`: the name itself, no revision."""
    return name, "no_revision_available"


@dataclass(frozen=True, kw_only=True)
class RerankerKind:
    """One kind of reranker argument: how to recognise it and how to load it.

    Attributes:
        name: the kind's name (listings; ``reranker_kind`` in mteb's experiment settings).
        help: one line for listings: which arguments it takes.
        matches: ``(name, options) -> bool``: whether a reranker argument is of this kind.
        load: ``(name, options, corpus_texts) -> reranker``: a
            :class:`~hf_posbias.rerankers.base.ListwiseReranker` (``corpus_texts``: the task's
            document texts, or ``None`` where the caller has none).
        identity: ``(name, options) -> (mteb name, revision)`` of what it loads, which mteb
            files ``posbias evaluate``'s results under (default: the name, no revision).
        needs_corpus: ``load`` needs ``corpus_texts`` (``posbias evaluate`` loads one per task).
        order: its place in the table (:mod:`hf_posbias.rerankers.loading`).
    """

    name: str
    help: str
    matches: Callable[[str, RerankerOptions], bool]
    load: Callable[[str, RerankerOptions, Iterable[str] | None], ListwiseReranker]
    identity: Callable[[str, RerankerOptions], tuple[str, str]] = no_revision
    needs_corpus: bool = False
    order: int = 25


# ------------------------------------------------------------------------------ bm25


def _is_bm25(name: str, options: RerankerOptions) -> bool:
    from hf_posbias.bm25.analyzer import is_bm25

    return is_bm25(name)


def _load_bm25(
    name: str, options: RerankerOptions, corpus_texts: Iterable[str] | None
) -> ListwiseReranker:
    if corpus_texts is None:
        raise InputError("the bm25 reranker needs the corpus for its statistics")
    from hf_posbias.rerankers.pointwise import bm25_reranker

    return bm25_reranker(corpus_texts)


BM25 = RerankerKind(
    name="bm25",
    help="bm25: the pointwise BM25 control",
    matches=_is_bm25,
    load=_load_bm25,
    identity=lambda name, options: ("local/bm25-reranker", "bm25"),
    needs_corpus=True,
    order=10,
)

# ------------------------------------------------------------------------------ endpoint


def _is_served(name: str, options: RerankerOptions) -> bool:
    from hf_posbias.modeling.loaders import is_cross_encoder

    if name.startswith(ENDPOINT_PREFIX):
        return True
    return options.base_url is not None and not is_cross_encoder(name)


def _served_model(name: str) -> str:
    model = name.removeprefix(ENDPOINT_PREFIX).strip()
    if not model:
        raise ModelLoadError(f"{name!r}: give the endpoint's model as {ENDPOINT_PREFIX}<model>")
    return model


def _load_served(
    name: str, options: RerankerOptions, corpus_texts: Iterable[str] | None
) -> ListwiseReranker:
    from hf_posbias.generation.backends import OpenAIChatBackend
    from hf_posbias.rerankers.generative import EndpointReranker

    backend = OpenAIChatBackend(
        _served_model(name), base_url=options.base_url, api_key_env=options.api_key_env
    )
    return EndpointReranker(
        backend,
        mode=options.mode,
        style=options.identifiers,
        window_size=options.window,
        passage_tokens=options.passage_tokens,
    )


def _served_identity(name: str, options: RerankerOptions) -> tuple[str, str]:
    model = _served_model(name)
    return model if "/" in model else f"openai/{model}", f"endpoint-{options.base_url or 'openai'}"


LISTWISE_ENDPOINT = RerankerKind(
    name="listwise-endpoint",
    help=f"{ENDPOINT_PREFIX}<model> (or any name but a cross-encoder with a listwise verb's "
    "--base-url): a listwise LLM behind an OpenAI-compatible chat endpoint",
    matches=_is_served,
    load=_load_served,
    identity=_served_identity,
    order=20,
)

# ------------------------------------------------------------------------------ config.json


def _config_names(name: str, suffix: str) -> bool:
    """Whether the ``architectures`` of a model's ``config.json`` name a ``*<suffix>`` class: the
    config of a local folder, a packaged model or the Hub cache; for a Hub id that mteb's
    registry does not hold as a reranker, downloaded."""
    return any(a.endswith(suffix) for a in _architectures(name))


def _architectures(name: str) -> list[str]:
    """The ``architectures`` of :func:`_config_names`."""
    from hf_posbias.modeling.loaders import config_architectures
    from hf_posbias.modeling.mteb_registry import registry_reranker
    from hf_posbias.modeling.resolve import is_local_model

    try:
        known = config_architectures(name)
    except ModelLoadError:  # a packaged name whose package is missing
        return []
    if known or is_local_model(name) or registry_reranker(name) is not None:
        return known
    return config_architectures(name, download=True)


def _is_causal_lm(name: str, options: RerankerOptions) -> bool:
    from hf_posbias.modeling.loaders import CROSS_ENCODER_PREFIX
    from hf_posbias.modeling.resolve import PACKAGED_CHAT_MODELS

    if name in PACKAGED_CHAT_MODELS:
        return True
    return not name.startswith(CROSS_ENCODER_PREFIX) and _config_names(name, "ForCausalLM")


def _load_causal_lm(
    name: str, options: RerankerOptions, corpus_texts: Iterable[str] | None
) -> ListwiseReranker:
    from hf_posbias.devices import default_device, device_info, resolve_inference_dtype
    from hf_posbias.modeling.causal_lm import load_causal_lm
    from hf_posbias.rerankers.identifiers import identifier_labels

    identifier_labels(options.window, options.identifiers)  # a bad style fails before loading
    device = options.device or default_device()
    dtype = resolve_inference_dtype(options.dtype, device_info(device))
    model, tokenizer = load_causal_lm(name, dtype=dtype, device=device, padding_side="left")
    common = {
        "name": name,
        "style": options.identifiers,
        "window_size": options.window,
        "passage_tokens": options.passage_tokens,
        "batch_size": options.batch_size,
    }
    if options.mode == "generate":
        from hf_posbias.rerankers.generative import LocalGenerationReranker

        return LocalGenerationReranker(model, tokenizer, **common)
    from hf_posbias.rerankers.first import FirstReranker

    return FirstReranker(model, tokenizer, **common)


def _causal_lm_identity(name: str, options: RerankerOptions) -> tuple[str, str]:
    """A local or packaged causal LM's files are hashed (a fine-tuned checkpoint differs from its
    base only in its weights); a Hub id is its own name."""
    from hf_posbias.hashing import folder_digest, folder_fingerprint
    from hf_posbias.modeling.causal_lm import resolve_chat_model
    from hf_posbias.modeling.resolve import model_display_name

    folder, gguf = resolve_chat_model(name)
    if not Path(folder).exists():
        return name, "no_revision_available"
    if gguf:  # a packaged GGUF file: hash that file only, not the package's code
        return name, f"local-{folder_digest(folder, names=[gguf], sample_bytes=4 << 20)[:12]}"
    return model_display_name(name), f"local-{folder_fingerprint(folder)}"


LISTWISE = RerankerKind(
    name="listwise",
    help="a causal LM (the packaged smollm2-135m, a folder such as a posbias listwise train "
    "checkpoint, a Hub id) scored FIRST's way or writing its permutation",
    matches=_is_causal_lm,
    load=_load_causal_lm,
    identity=_causal_lm_identity,
    order=30,
)


def _is_sequence_classifier(name: str, options: RerankerOptions) -> bool:
    from hf_posbias.modeling.loaders import CROSS_ENCODER_PREFIX

    return name.startswith(CROSS_ENCODER_PREFIX) or _config_names(name, "ForSequenceClassification")


def _load_cross_encoder(
    name: str, options: RerankerOptions, corpus_texts: Iterable[str] | None
) -> ListwiseReranker:
    from hf_posbias.modeling.loaders import CROSS_ENCODER_PREFIX
    from hf_posbias.rerankers.pointwise import cross_encoder_reranker

    model = name.removeprefix(CROSS_ENCODER_PREFIX)
    return cross_encoder_reranker(model, device=options.device, batch_size=options.batch_size)


CROSS_ENCODER = RerankerKind(
    name="cross-encoder",
    help="cross-encoder:NAME or a *ForSequenceClassification model: the pointwise control",
    matches=_is_sequence_classifier,
    load=_load_cross_encoder,
    order=40,
)


def _is_registry_reranker(name: str, options: RerankerOptions) -> bool:
    from hf_posbias.modeling.mteb_registry import registry_reranker

    return registry_reranker(name) is not None


REGISTRY = RerankerKind(
    name="registry",
    help="a reranker of mteb's model registry (posbias evaluate loads it with mteb's loader)",
    matches=_is_registry_reranker,
    load=_load_cross_encoder,
    order=50,
)
