"""Models as ``mteb.evaluate`` runs them: a loaded model wrapped, counted and searched.

Loading itself is :func:`hf_posbias.modeling.loaders.load_model`'s (what a model argument means
and how it loads: ``bm25``, ``openai:<model>``, a folder, a packaged model, an mteb registry
entry, a Hub id). What evaluation adds is here: :func:`load_mteb_model` gives each model a
unique mteb name and revision (the mteb pitfall in docs/contributing-notes.md: every local model
is ``no_model_name/available`` unless named, and mteb's result cache would hand a second
checkpoint the first one's scores; a local folder's revision is a hash of its files, weights
included), builds BM25's index search and the endpoint's encoder, puts a bi-encoder behind an
inference-time remedy, and puts a reranker over a first stage (a reranking pipeline).

Encoders are wrapped in :class:`CountingEncoder`, which forwards every call to mteb's
``SentenceTransformerEncoderWrapper`` unchanged and counts the texts encoded per prompt type:
the summaries report them (each corpus text is encoded once, by mteb itself, since a position
task is one subset).

Example:
    >>> from hf_posbias.evaluation.runs.mteb_models import unique_model_meta
    >>> unique_model_meta(None, "my-model", "local-abc").name
    'local/my-model'
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.jsonable import JsonRecord
from hf_posbias.modeling.loaders import (
    LoadedModel,
    is_sentence_transformers_model,
    load_model,
    loaded_instance,
)
from hf_posbias.modeling.resolve import ModelSettings, check_model_path, model_identity
from hf_posbias.settings import setting_label

if TYPE_CHECKING:
    from mteb.models.model_meta import ModelMeta

    from hf_posbias.evaluation.runs.encode_progress import EvaluationProgress
    from hf_posbias.evaluation.runs.remedies import RemedySettings
    from hf_posbias.evaluation.runs.search import RerankSearch
    from hf_posbias.rerankers.options import RerankerOptions


@dataclass
class EncodeStats(JsonRecord):
    """Texts the model encoded, by prompt type (``query``/``document``)."""

    calls: int = 0
    texts_encoded: int = 0
    encoded_by_type: dict[str, int] = field(default_factory=dict)
    tokens_encoded: int = 0


class CountingEncoder:
    """An mteb encoder that forwards to another and counts what it encodes (no caching).

    Example:
        >>> import numpy as np
        >>> class Toy:
        ...     mteb_model_meta = None
        ...     def encode(self, inputs, **kwargs): return np.ones((len(inputs.dataset), 2))
        ...     def similarity(self, a, b): return a @ b.T
        ...     def similarity_pairwise(self, a, b): return (a * b).sum(-1)
        >>> class Loader:  # what mteb passes: a DataLoader over a dataset
        ...     dataset = ["a", "b"]
        >>> enc = CountingEncoder(Toy())
        >>> enc.encode(Loader(), prompt_type="document").shape, enc.stats.encoded_by_type
        ((2, 2), {'document': 2})
    """

    def __init__(
        self,
        model: Any,
        meta: ModelMeta | None = None,
        token_counter: Callable[[list[str]], int] | None = None,
    ) -> None:
        self.model = model
        self._meta = meta if meta is not None else getattr(model, "mteb_model_meta", None)
        self.stats = EncodeStats()
        self.token_counter = token_counter
        # Set for the length of one run (hf_posbias.evaluation.runs.runner.run_task): told of
        # whole encode calls (unless it counts batches itself) and of every similarity call.
        self.progress: EvaluationProgress | None = None
        self.progress_counts_batches = False

    @property
    def mteb_model_meta(self) -> ModelMeta | None:
        """The metadata mteb files results under (unique name + revision)."""
        return self._meta

    def encode(self, inputs: Any, *, prompt_type: Any = None, **kwargs: Any) -> Any:
        """Forward to the wrapped encoder; count the texts by prompt type."""
        n = len(inputs.dataset)
        kind = "none" if prompt_type is None else str(getattr(prompt_type, "value", prompt_type))
        self.stats.calls += 1
        self.stats.texts_encoded += n
        self.stats.encoded_by_type[kind] = self.stats.encoded_by_type.get(kind, 0) + n
        if self.token_counter is not None and "text" in getattr(inputs.dataset, "column_names", ()):
            self.stats.tokens_encoded += self.token_counter(
                [str(t) for t in inputs.dataset["text"]]
            )
        embeddings = self.model.encode(inputs, prompt_type=prompt_type, **kwargs)
        if self.progress is not None and not self.progress_counts_batches:
            self.progress.encoded(n)
        return embeddings

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Delegates to the wrapped model (queries × documents scored count as progress)."""
        scores = self.model.similarity(embeddings1, embeddings2)
        if self.progress is not None:
            self.progress.scored(queries=len(embeddings1), documents=len(embeddings2))
        return scores

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Delegates to the wrapped model."""
        return self.model.similarity_pairwise(embeddings1, embeddings2)


def unique_model_meta(
    meta: ModelMeta | None, name: str, revision: str, **overrides: Any
) -> ModelMeta:
    """A copy of ``meta`` (or an empty one) with the given unique ``name``/``revision``.

    mteb requires a ``/`` in model names; a bare name gets a ``local/`` prefix.
    """
    from mteb.models.model_meta import ModelMeta

    if "/" not in name:
        name = f"local/{name}"
    update = {"name": name, "revision": revision, **overrides}
    if meta is None:
        return ModelMeta.create_empty(overwrites=update)
    return meta.model_copy(update=update)


@dataclass
class MtebModel:
    """A model ready for ``mteb.evaluate`` plus what the summaries report about it."""

    spec: str
    model: Any
    kind: str
    name: str
    revision: str
    encoder: Any = None
    search: Any = None
    reranker: str | None = None
    first_stage: str | None = None
    rerank_k: int | None = None
    remedy: str | None = None

    @property
    def sentence_transformer(self) -> Any:
        """The SentenceTransformer behind a bi-encoder (``None`` for BM25 and rerankers).

        The analyses (evidence moving, segment profile) need the raw model.
        """
        if self.kind not in ("bi-encoder", "registry") or self.encoder is None:
            return None
        # CountingEncoder → mteb SentenceTransformerEncoderWrapper → SentenceTransformer
        return self.encoder.model.model

    def encode_stats(self) -> dict[str, Any] | None:
        """Texts encoded so far by prompt type (``None`` for BM25)."""
        return self.encoder.stats.to_dict() if self.encoder is not None else None

    def encoded_tokens(self) -> int | None:
        """Tokens the bi-encoder fed through itself so far (queries, documents or passages);
        ``None`` for BM25 and reranking pipelines."""
        if self.kind != "bi-encoder":
            return None
        tokens = int(self.encoder.stats.tokens_encoded)
        if self.remedy:
            tokens += int(self.search.stats.document_tokens)
        return tokens

    def search_stats(self) -> dict[str, Any] | None:
        """Counters of the search model (index builds, pairs reranked …)."""
        return self.search.stats.to_dict() if self.search is not None else None


def _wrap_sentence_transformer(st_model: Any, name: str, revision: str) -> tuple[Any, str]:
    """mteb's wrapper for a loaded sentence-transformers model (dense, sparse, multi-vector)."""
    from sentence_transformers import MultiVectorEncoder, SparseEncoder

    if isinstance(st_model, SparseEncoder):
        from mteb.models.sentence_transformer_wrapper import SparseEncoderWrapper

        wrapper, kind = SparseEncoderWrapper(st_model), "sparse"
    elif isinstance(st_model, MultiVectorEncoder):
        from mteb.models.sentence_transformer_wrapper import MultiVectorWrapper

        wrapper, kind = MultiVectorWrapper(st_model), "multi-vector"
    else:
        from mteb.models import SentenceTransformerEncoderWrapper

        wrapper, kind = SentenceTransformerEncoderWrapper(st_model), "bi-encoder"
    wrapper.mteb_model_meta = unique_model_meta(wrapper.mteb_model_meta, name, revision)
    return wrapper, kind


def _retriever(
    loaded: LoadedModel, remedy: RemedySettings | None = None
) -> tuple[Any, str, str, Any, Any, str]:
    """(mteb model, name, revision, encoder-or-None, search-or-None, kind) of a loaded
    retriever: BM25's index search, the endpoint's encoder, a registry model or a
    sentence-transformers model wrapped for mteb (and behind ``remedy``)."""
    from hf_posbias.evaluation.runs.search import BM25Model

    if loaded.source == "bm25":
        if remedy is not None and remedy.remedy != "none":
            raise InputError(f"{setting_label('remedy')} needs a bi-encoder, not BM25")
        bm25 = BM25Model()
        meta = bm25.mteb_model_meta
        return bm25, str(meta.name), str(meta.revision), None, bm25, "bm25"
    if loaded.source == "endpoint":
        endpoint_encoder, name, revision = load_endpoint_encoder(loaded.name, loaded.settings)
        encoder = CountingEncoder(endpoint_encoder)
        return encoder, name, revision, encoder, None, "endpoint"
    reg = loaded.resolved.meta
    if reg is not None:  # an mteb registry entry, loaded by mteb's own loader
        model = loaded.model
        meta = unique_model_meta(model.mteb_model_meta, str(reg.name), str(reg.revision))
        model.mteb_model_meta = meta
        encoder = CountingEncoder(model, meta=meta)
        kind = "registry"
        return encoder, str(reg.name), str(reg.revision), encoder, None, kind
    st_model = loaded.model
    name, revision = model_identity(loaded.name, st_model)
    wrapper, kind = _wrap_sentence_transformer(st_model, name, revision)
    if kind == "multi-vector":  # mteb searches it itself (MaxSim index): nothing to count
        return wrapper, name, revision, None, None, kind
    if remedy is not None and remedy.remedy != "none":
        from hf_posbias.evaluation.runs.remedies import require_bi_encoder

        require_bi_encoder(kind)
    model, encoder, search = _remedied(st_model, wrapper, remedy)
    return model, name, revision, encoder, search, kind


def _remedied(st_model: Any, wrapper: Any, remedy: RemedySettings | None) -> tuple[Any, Any, Any]:
    """(mteb model, counting encoder, remedy-search-or-None) of a wrapped SentenceTransformer."""
    from hf_posbias.evaluation.runs.remedies import RemedySearch, encoded_token_count

    meta = wrapper.mteb_model_meta
    encoder = CountingEncoder(
        wrapper, meta=meta, token_counter=lambda texts: encoded_token_count(st_model, texts)
    )
    if remedy is None or remedy.remedy == "none":
        return encoder, encoder, None
    search = RemedySearch(st_model, encoder, remedy, meta)
    return search, encoder, search


def with_remedy(loaded: MtebModel, remedy: RemedySettings) -> MtebModel:
    """The same loaded bi-encoder (no reload) behind another remedy, with fresh counters.

    The remedy's settings are checked against the model here, before any encoding.
    """
    if loaded.kind != "bi-encoder" or loaded.encoder is None:
        raise InputError(
            f"{setting_label('remedy')} needs a bi-encoder, not BM25 or a reranking pipeline"
        )
    model, encoder, search = _remedied(loaded.sentence_transformer, loaded.encoder.model, remedy)
    name = remedy.remedy if remedy.remedy != "none" else None
    return replace(loaded, model=model, encoder=encoder, search=search, remedy=name)


def load_endpoint_encoder(spec: str, settings: ModelSettings) -> tuple[Any, str, str]:
    """``(encoder, mteb name, revision)`` for ``openai:<model>``; the revision names the URL."""
    from hf_posbias.evaluation.runs.endpoint import EndpointEncoder, embedding_endpoint

    endpoint = embedding_endpoint(spec, settings)
    model = endpoint.model
    name = model if "/" in model else f"openai/{model}"
    revision = f"endpoint-{endpoint.url}"
    from mteb.models.model_meta import ScoringFunction

    meta = unique_model_meta(None, name, revision, similarity_fn_name=ScoringFunction.COSINE)
    return EndpointEncoder(endpoint, meta), name, revision


def _mteb_cross_encoder(
    spec: str, kind: str, device: str | None, settings: ModelSettings
) -> tuple[Any, str, str]:
    """``(mteb cross-encoder, name, revision)`` of a ``cross-encoder`` or ``registry`` reranker:
    reranked by mteb's own pipeline (:class:`~.search.RerankSearch`)."""
    from mteb.models import CrossEncoderWrapper

    from hf_posbias.modeling.loaders import (
        CROSS_ENCODER_PREFIX,
        load_cross_encoder,
        load_registry_model,
    )
    from hf_posbias.modeling.mteb_registry import registry_reranker

    if kind == "registry":
        meta = registry_reranker(spec)
        ce_wrapper = load_registry_model(
            meta, device=device, trust_remote_code=settings.trust_remote_code
        )
        name, revision = str(meta.name), str(meta.revision)
    else:
        ce_spec = spec.removeprefix(CROSS_ENCODER_PREFIX)
        ce = load_cross_encoder(
            ce_spec, device=device, trust_remote_code=settings.trust_remote_code
        )
        name, revision = model_identity(ce_spec, ce)
        ce_wrapper = CrossEncoderWrapper(ce)
    ce_wrapper.mteb_model_meta = unique_model_meta(ce_wrapper.mteb_model_meta, name, revision)
    return ce_wrapper, name, revision


MTEB_RERANKER_KINDS = ("cross-encoder", "registry")
"""The reranker kinds ``posbias evaluate`` reranks with mteb's cross-encoder pipeline; every
other kind (:mod:`hf_posbias.rerankers.loading`, plugins included) is slid over the list."""


def _load_second_stage(
    spec: str,
    retriever: Any,
    *,
    first_stage_name: str,
    rerank_k: int,
    device: str | None,
    settings: ModelSettings,
    options: RerankerOptions | None,
) -> tuple[RerankSearch, str, str]:
    """``(pipeline, reranker name, revision)``: the reranker ``spec`` (its kind resolved by
    :func:`hf_posbias.rerankers.loading.resolve_reranker_kind`) over the retriever's top
    ``rerank_k``."""
    import dataclasses

    from hf_posbias.evaluation.runs.search import RerankSearch
    from hf_posbias.rerankers.kinds import LISTWISE_ENDPOINT
    from hf_posbias.rerankers.loading import resolve_reranker_kind
    from hf_posbias.rerankers.options import RerankerOptions

    opts = options if options is not None else RerankerOptions()
    # One --base-url: the listwise LLM is served there only when named openai:<model>.
    kind = resolve_reranker_kind(spec, dataclasses.replace(opts, base_url=None))
    if kind.name in MTEB_RERANKER_KINDS:
        ce_wrapper, name, revision = _mteb_cross_encoder(spec, kind.name, device, settings)
        pipeline = RerankSearch(
            retriever, ce_wrapper, rerank_k=rerank_k, first_stage_name=first_stage_name
        )
        return pipeline, name, revision
    from hf_posbias.evaluation.runs.listwise_stage import ListwiseRerankSearch

    opts = dataclasses.replace(
        opts,
        device=opts.device or device,
        base_url=settings.base_url if kind is LISTWISE_ENDPOINT else None,
        api_key_env=settings.api_key_env,
    )
    name, revision = kind.identity(spec, opts)
    if kind.needs_corpus:  # loaded per task, from its corpus
        reranker: Any = lambda texts: kind.load(spec, opts, texts)  # noqa: E731
    else:
        reranker = kind.load(spec, opts, None)
    listed = ("mode", "window", "step", "passage_tokens", "identifiers")
    experiment = {"reranker_kind": kind.name, **{k: getattr(opts, k) for k in listed}}
    meta = unique_model_meta(None, name, revision, experiment_kwargs=experiment)
    pipeline = ListwiseRerankSearch(
        retriever,
        reranker,
        meta=meta,
        rerank_k=rerank_k,
        step=opts.step,
        first_stage_name=first_stage_name,
    )
    return pipeline, str(meta.name), revision


def load_mteb_model(
    model: str | os.PathLike[str] | LoadedModel,
    *,
    reranker: str | None = None,
    first_stage: str | None = None,
    rerank_k: int = 100,
    device: str | None = None,
    settings: ModelSettings | None = None,
    remedy: RemedySettings | None = None,
    reranker_options: RerankerOptions | None = None,
) -> MtebModel:
    """A retriever (``bm25``, an embedding model, an endpoint) or a two-stage reranking
    pipeline, ready for ``mteb.evaluate``.

    ``model`` is a model argument, loaded here by :func:`hf_posbias.modeling.loaders.load_model`
    (with ``device`` and ``settings``), a model loaded by it already (``pb.load_model``: not
    loaded again; ``device`` and ``settings`` then apply only to a reranker loaded here), or a
    sentence-transformers model object (:func:`hf_posbias.modeling.loaders.loaded_instance`).
    ``remedy`` wraps the bi-encoder (the retriever) in an inference-time remedy
    (:class:`hf_posbias.evaluation.runs.remedies.RemedySearch`); checked before any encoding.

    Two spellings of the same pipeline: ``load_mteb_model("bm25", reranker=R)`` and
    ``load_mteb_model(R, first_stage="bm25")`` — the reranker ``R`` (a name, of any kind of
    :mod:`hf_posbias.rerankers.loading`: a cross-encoder, an mteb registry reranker, a listwise
    LLM, the BM25 control or a plugin's kind) reorders the first stage's top ``rerank_k``; a
    listwise reranker is loaded and slid with ``reranker_options`` (window, step, passage
    tokens, dtype, mode: :class:`~hf_posbias.rerankers.options.RerankerOptions`).

    Raises:
        ModelLoadError: a model path that does not exist or a model that cannot load.
        InputError: both ``reranker`` and ``first_stage``; a reranker given as a loaded model.

    Example:
        >>> load_mteb_model("bm25").kind
        'bm25'
    """
    if reranker and first_stage:
        raise InputError("give either a reranker (model = first stage) or a first stage, not both")
    if is_sentence_transformers_model(model):  # an object in memory, not a name
        model = loaded_instance(model)
    if first_stage:
        retriever_spec, reranker_spec = first_stage, model
    else:
        retriever_spec, reranker_spec = model, reranker
    if isinstance(reranker_spec, LoadedModel):
        raise InputError(
            f"a reranker is given by name (it loads as its kind), not as a loaded model: "
            f"{reranker_spec.name}"
        )
    settings = settings or ModelSettings()
    loaded = (
        retriever_spec
        if isinstance(retriever_spec, LoadedModel)
        else load_model(retriever_spec, device=device, settings=settings)
    )
    retriever, name, revision, encoder, search, kind = _retriever(loaded, remedy)
    spec = model.name if isinstance(model, LoadedModel) else str(model)
    remedy_name = remedy.remedy if remedy is not None and remedy.remedy != "none" else None
    if not reranker_spec:
        return MtebModel(
            spec=spec,
            model=retriever,
            kind=kind,
            name=name,
            revision=revision,
            encoder=encoder,
            search=search,
            remedy=remedy_name,
        )
    reranker_spec = str(reranker_spec)
    check_model_path(reranker_spec)
    pipeline, rr_name, rr_revision = _load_second_stage(
        reranker_spec,
        retriever,
        first_stage_name=f"{name}@{revision}",
        rerank_k=rerank_k,
        device=device,
        settings=settings,
        options=reranker_options,
    )
    return MtebModel(
        spec=spec,
        model=pipeline,
        kind="rerank",
        name=rr_name,
        revision=rr_revision,
        encoder=encoder,
        search=pipeline,
        reranker=reranker_spec,
        first_stage=loaded.name,
        rerank_k=rerank_k,
        remedy=remedy_name,
    )
