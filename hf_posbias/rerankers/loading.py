"""One reranker argument → one reranker, through ONE table of reranker kinds.

Every place that takes a reranker — ``posbias evaluate --reranker``
(:func:`hf_posbias.evaluation.runs.mteb_models.load_mteb_model`) and the listwise verbs
(:func:`load_reranker`) — resolves it with :func:`resolve_reranker_kind`: the kinds
(:class:`~hf_posbias.rerankers.kinds.RerankerKind`) are tried by their ``order`` (ties:
registration order), and the first whose ``matches(name, options)`` says yes loads it. The
built-in kinds (:mod:`hf_posbias.rerankers.kinds`), in order:

==  =====================  ================================================================
10  ``bm25``               ``bm25``: the pointwise BM25 control (statistics from the corpus)
20  ``listwise-endpoint``  ``openai:<model>``, or — when ``--base-url`` is given to a listwise
                           verb — any name but a cross-encoder: a listwise LLM served by an
                           OpenAI-compatible chat endpoint
25  (plugins)              the default ``order`` of a plugin's kind: after the explicit
                           spellings, before the kinds that read a model's config
28  ``listt5``             ``listt5:<model>``, or a model whose ``config.json`` names
                           ``FiDT5``: ListT5, a Fusion-in-Decoder T5 ranked by tournament
                           sort (:mod:`hf_posbias.rerankers.listt5`)
30  ``listwise``           a packaged chat model (``smollm2-135m``), or a model whose
                           ``config.json`` names a ``*ForCausalLM``: scored FIRST's way
                           (``mode="first"``) or writing its permutation (``mode="generate"``)
                           over a sliding window; the identifier check runs before any loading
40  ``cross-encoder``      ``cross-encoder:NAME``, or a model whose ``config.json`` names a
                           ``*ForSequenceClassification``: the pointwise control
50  ``registry``           a reranker of mteb's model registry
==  =====================  ================================================================

A ``config.json`` is read from a local folder, a packaged model or the Hub cache; a Hub id that
mteb's registry does not hold as a reranker has its config downloaded (a registry reranker that
is not cached is mteb's to load). A name no kind matches is a one-line
:class:`~hf_posbias.errors.ModelLoadError` naming the closest reranker names.

``posbias evaluate`` reranks with mteb's own cross-encoder pipeline for the ``cross-encoder``
and ``registry`` kinds, and with a kind's ``load`` over a sliding window for every other kind
(plugins included). A new kind is one module defining a
:class:`~hf_posbias.rerankers.kinds.RerankerKind`, registered by one line in
:data:`BUILTIN_KINDS` or, from a third party's package, by an entry point of the group
``hf_posbias.rerankers`` (:data:`RERANKER_REGISTRY`; docs/extending.md).

Example:
    >>> reranker_kind("bm25"), reranker_kind("openai:m"), reranker_kind("cross-encoder:x")
    ('bm25', 'listwise-endpoint', 'cross-encoder')
    >>> [kind.name for kind in reranker_kinds()]
    ['bm25', 'listwise-endpoint', 'listt5', 'listwise', 'cross-encoder', 'registry']
    >>> reranker = load_reranker("bm25", corpus_texts=["a cat", "a dog"])
    >>> reranker.describe()["kind"]
    'pointwise'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hf_posbias.errors import ModelLoadError
from hf_posbias.plugins import GROUPS, Registry
from hf_posbias.rerankers.base import ListwiseReranker
from hf_posbias.rerankers.kinds import (
    BM25,
    CROSS_ENCODER,
    LISTWISE,
    LISTWISE_ENDPOINT,
    REGISTRY,
    RerankerKind,
)
from hf_posbias.rerankers.listt5 import LISTT5
from hf_posbias.rerankers.options import RerankerOptions
from hf_posbias.suggestions import suggest

BUILTIN_KINDS: tuple[RerankerKind, ...] = (
    BM25,
    LISTWISE_ENDPOINT,
    LISTT5,
    LISTWISE,
    CROSS_ENCODER,
    REGISTRY,
)
"""The kinds hf-posbias ships (each with its ``order``)."""

RERANKER_REGISTRY: Registry[RerankerKind] = Registry(
    GROUPS["rerankers"], RerankerKind, what="reranker kind", builtins=lambda: BUILTIN_KINDS
)
"""The reranker-kind registry: :data:`BUILTIN_KINDS`, then the plugins of the entry-point group
``hf_posbias.rerankers``."""


def reranker_kinds() -> list[RerankerKind]:
    """Every kind in the order they are tried (by ``order``, then registration order)."""
    kinds = list(RERANKER_REGISTRY.items().values())
    return sorted(kinds, key=lambda kind: (kind.order, kinds.index(kind)))


def resolve_reranker_kind(name: str, options: RerankerOptions | None = None) -> RerankerKind:
    """The first kind (in :func:`reranker_kinds` order) that matches the reranker ``name``.

    ``options.base_url`` makes any name but ``bm25`` or a cross-encoder an endpoint's model
    (what the listwise verbs' ``--base-url`` means); ``posbias evaluate`` resolves without it,
    so there only ``openai:<model>`` names an endpoint.

    Raises:
        ModelLoadError: an empty name, or a name no kind matches (one line, with the closest
            reranker names).
    """
    from hf_posbias.modeling.hub_probe import hub_state, unknown_model_error
    from hf_posbias.modeling.resolve import known_reranker_names

    opts = options or RerankerOptions()
    if not str(name).strip():
        raise ModelLoadError("reranker name is empty")
    for kind in reranker_kinds():
        if kind.matches(name, opts):
            return kind
    if not Path(name).expanduser().exists():
        raise unknown_model_error("reranker", name, hub_state(name), known_reranker_names())
    where = "its config.json names neither a *ForSequenceClassification nor a *ForCausalLM"
    hint = suggest(name, known_reranker_names(), n=3)
    raise ModelLoadError(f"cannot load reranker {name!r}: {where}{hint}")


def reranker_kind(name: str) -> str:
    """The name of the kind of the reranker argument ``name`` (no ``--base-url``).

    Example:
        >>> reranker_kind("smollm2-135m")
        'listwise'
        >>> reranker_kind("cross-encoder/ms-marco-MiniLM-L6-v2")
        'registry'
    """
    return resolve_reranker_kind(name).name


def is_pointwise(name: str) -> bool:
    """Whether ``name`` is a pointwise reranker (BM25 or a cross-encoder).

    Example:
        >>> is_pointwise("bm25"), is_pointwise("cross-encoder:x"), is_pointwise("smollm2-135m")
        (True, True, False)
    """
    from hf_posbias.bm25.analyzer import is_bm25
    from hf_posbias.modeling.loaders import is_cross_encoder

    return is_bm25(name) or is_cross_encoder(name)


def load_reranker(
    name: str,
    options: RerankerOptions | None = None,
    *,
    corpus_texts: Iterable[str] | None = None,
    **overrides: Any,
) -> ListwiseReranker:
    """Build the reranker ``name`` stands for (see the module docstring).

    ``corpus_texts``: the task's document texts (``bm25`` needs them).

    ``overrides`` replace fields of a copy of ``options`` (``load_reranker(name,
    passage_tokens=48)``); ``options`` itself is left as it was.
    """
    opts = options or RerankerOptions()
    if overrides:
        # A copy (checked again): the caller's options are never written into.
        opts = dataclasses.replace(opts, **overrides)
    return resolve_reranker_kind(name, opts).load(name, opts, corpus_texts)
