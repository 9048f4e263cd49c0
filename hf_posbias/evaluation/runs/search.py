"""Search models for position tasks: BM25 and cross-encoder reranking, usable in ``mteb.evaluate``.

- :class:`SearchModel` is mteb's search protocol (``index``, then ``search``) spelled once: its
  subclasses get the call's :class:`SearchContext` (task, split, subset, encoding options).
- :class:`BM25Model` is the package's one BM25 (:class:`hf_posbias.bm25.index.BM25Index`, the
  language's stop words and Snowball stemmer taken from the task's ``eval_langs``) behind mteb's
  search protocol, named ``mteb/baseline-bm25s``: for a language with a stop-word list it indexes,
  tokenises and retrieves exactly as mteb's own ``BM25Search``, and the listwise first stage
  ranks with the same index. It counts index builds; a missing ``PyStemmer`` is a one-line
  error. mteb calls ``index`` once per ``hf_subset``; a position task evaluates all its queries
  in one subset, so the corpus is indexed once per task.
- :class:`RerankSearch` is a two-stage pipeline: a first stage (BM25, or any mteb encoder)
  retrieves the top ``rerank_k``
  documents, mteb's ``SearchCrossEncoderWrapper`` rescores them with a cross-encoder — the setting
  of Zeng et al. (2025) Table 1 (rerankers over a top-100). Its ``mteb_model_meta`` is the
  reranker's with ``experiment_kwargs`` naming the first stage and ``k``, so mteb's result cache
  files each pipeline separately.

Example:
    >>> from hf_posbias.evaluation.runs.search import BM25Model
    >>> BM25Model().mteb_model_meta.name
    'mteb/baseline-bm25s'
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from hf_posbias.jsonable import JsonRecord

if TYPE_CHECKING:
    from mteb.abstasks.task_metadata import TaskMetadata
    from mteb.models.model_meta import ModelMeta

logger = logging.getLogger(__name__)


@dataclass
class SearchStats(JsonRecord):
    """How often the search model did its expensive work."""

    index_builds: int = 0
    searches: int = 0
    queries: int = 0
    pairs_scored: int = 0


def corpus_batches(corpus: Any, size: int | None = None) -> Iterator[dict[str, list[Any]]]:
    """A corpus as column batches (``{"id": [...], "text": [...], ...}``) of ``size`` documents: a
    ``datasets.Dataset`` (mteb's corpus) through ``Dataset.iter``, a list of row dicts sliced.
    ``size`` defaults to the BM25 index's batch (:data:`hf_posbias.bm25.analyzer.INDEX_BATCH`, read
    at call time: bm25 loads numpy, which ``posbias --help`` must not).

    Example:
        >>> rows = [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "c", "text": "z"}]
        >>> [batch["id"] for batch in corpus_batches(rows, 2)]
        [['a', 'b'], ['c']]
    """
    if size is None:
        from hf_posbias.bm25.analyzer import INDEX_BATCH

        size = INDEX_BATCH
    if hasattr(corpus, "iter") and hasattr(corpus, "column_names"):
        yield from corpus.iter(batch_size=size)
        return
    for start in range(0, len(corpus), size):
        rows = corpus[start : start + size]
        yield {key: [row.get(key) for row in rows] for key in rows[0]}


def _task_language(task_metadata: TaskMetadata, hf_subset: str) -> str:
    """The ISO 639-3 language of a task subset (English when it has several), as mteb's BM25."""
    langs = task_metadata.eval_langs
    codes = {
        lang.split("-")[0]
        for lang in (langs.get(hf_subset, []) if isinstance(langs, dict) else langs)
    }
    return next(iter(codes)) if len(codes) == 1 else "eng"


TopRanked = dict[str, list[str]]
"""Per query id, the documents mteb restricts its search to (``top_ranked``)."""

Scores = dict[str, dict[str, float]]
"""Per query id, document id → score: what a search returns."""


@dataclass(frozen=True)
class SearchContext:
    """What mteb passes a search model besides the queries or the corpus: the task, its split
    and subset, the encoding options and the worker count (one call's context)."""

    task_metadata: TaskMetadata
    hf_split: str
    hf_subset: str
    encode_kwargs: dict[str, Any]
    num_proc: int | None = None

    @classmethod
    def of(cls, keywords: dict[str, Any]) -> SearchContext:
        """The context among the keywords of mteb's ``index`` or ``search`` call (the others,
        such as a ``timer``, are not a search model's business).

        Example:
            >>> SearchContext.of({"task_metadata": None, "hf_split": "test", "hf_subset": "default",
            ...                   "encode_kwargs": {}, "timer": None}).num_proc is None
            True
        """
        return cls(**{f.name: keywords[f.name] for f in fields(cls) if f.name in keywords})

    def as_kwargs(self) -> dict[str, Any]:
        """The context as mteb's keywords (to hand on to another mteb search model)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


class SearchModel:
    """mteb's search protocol, spelled in one place: mteb calls :meth:`index` once per subset,
    then :meth:`search`; a subclass indexes in :meth:`index_corpus` and answers in
    :meth:`search_queries`, each given the call's :class:`SearchContext`."""

    def index_corpus(self, corpus: Any, context: SearchContext) -> None:
        """Index ``corpus`` for the searches of this subset."""
        raise NotImplementedError

    def search_queries(
        self, queries: Any, top_k: int, top_ranked: TopRanked | None, context: SearchContext
    ) -> Scores:
        """Top ``top_k`` documents per query with their scores (among the query's
        ``top_ranked`` documents when given)."""
        raise NotImplementedError

    def index(self, corpus: Any, **keywords: Any) -> None:
        """Index the corpus (mteb calls this once per subset, with the keywords of
        :class:`SearchContext`)."""
        self.index_corpus(corpus, SearchContext.of(keywords))

    def search(
        self, queries: Any, *, top_k: int, top_ranked: TopRanked | None = None, **keywords: Any
    ) -> Scores:
        """Top ``top_k`` documents per query with their scores (among the query's
        ``top_ranked`` documents when given); the other keywords are a :class:`SearchContext`."""
        return self.search_queries(queries, top_k, top_ranked, SearchContext.of(keywords))


class CorpusSearch(SearchModel):
    """A search model over an index of the corpus, scoring every document for every query.

    A subclass builds its index (:meth:`build_index`, returning the document ids in index
    order) and scores every document for every query (:meth:`score_queries`). This class keeps
    the ids, restricts each query to its ``top_ranked`` documents when mteb passes them, and
    cuts at ``top_k``.
    """

    _doc_ids: list[str] | None = None

    def build_index(self, corpus: Any, context: SearchContext) -> list[str]:
        """Index ``corpus``; the document ids in index order."""
        raise NotImplementedError

    def score_queries(
        self, queries: Any, top_k: int, context: SearchContext
    ) -> list[list[tuple[int, float]]]:
        """Per query (in ``queries`` order), ``(document index, score)`` best first: the
        ``top_k`` best or more (:meth:`search` skips those outside a query's ``top_ranked``)."""
        raise NotImplementedError

    def index_corpus(self, corpus: Any, context: SearchContext) -> None:
        self._doc_ids = self.build_index(corpus, context)

    def search_queries(
        self, queries: Any, top_k: int, top_ranked: TopRanked | None, context: SearchContext
    ) -> Scores:
        if self._doc_ids is None:
            raise RuntimeError(f"{type(self).__name__}.index must be called before search")
        rows = self.score_queries(queries, top_k, context)
        out: dict[str, dict[str, float]] = {}
        for qid, row in zip(queries["id"], rows, strict=True):
            allowed = set(top_ranked.get(qid, [])) if top_ranked else None
            kept: dict[str, float] = {}
            for index, score in row:
                doc = self._doc_ids[index]
                if allowed is None or doc in allowed:
                    kept[doc] = float(score)
                if len(kept) >= top_k:
                    break
            out[qid] = kept
        return out


class BM25Model(CorpusSearch):
    """:class:`hf_posbias.bm25.index.BM25Index` as an mteb search model (``mteb.evaluate``-ready).

    Example:
        >>> BM25Model().stats.index_builds
        0
    """

    def __init__(self) -> None:
        import mteb

        self.stats = SearchStats()
        self._index: Any = None
        self._meta = mteb.get_model_meta("mteb/baseline-bm25s")

    @property
    def mteb_model_meta(self) -> ModelMeta:
        """``mteb/baseline-bm25s`` (the name the MTEB leaderboard uses for BM25)."""
        return self._meta

    def build_index(self, corpus: Any, context: SearchContext) -> list[str]:
        """The BM25 index of titles and texts, in the task's language."""
        from hf_posbias.bm25.analyzer import BM25Analyzer, document_text
        from hf_posbias.bm25.index import BM25Index

        language = _task_language(context.task_metadata, context.hf_subset)
        analyzer = BM25Analyzer.for_language(language)
        ids: list[str] = []

        def texts() -> Iterator[str]:
            # Column batches, not rows: a datasets row read costs more than its tokenising, and
            # the corpus text is never held whole (the index is built as batches arrive).
            for batch in corpus_batches(corpus):
                ids.extend(str(i) for i in batch["id"])
                titles = batch.get("title") or [None] * len(batch["text"])
                yield from map(document_text, (t or "" for t in titles), batch["text"])

        self._index = BM25Index(texts(), analyzer)
        self.stats.index_builds += 1
        return ids

    def score_queries(
        self, queries: Any, top_k: int, context: SearchContext
    ) -> list[list[tuple[int, float]]]:
        """BM25's best ``top_k`` per query (an instruction is appended to its query)."""
        self.stats.searches += 1
        self.stats.queries += len(queries)
        texts = list(queries["text"])
        if "instruction" in queries.column_names:
            texts = [
                t + " " + i if i is not None else t
                for t, i in zip(texts, queries["instruction"], strict=True)
            ]
        docs, scores = self._index.retrieve(texts, top_k)
        return [list(zip(d, v, strict=True)) for d, v in zip(docs, scores, strict=True)]


def _as_search_model(model: Any) -> Any:
    """A first stage as a search model: encoders get mteb's own ``SearchEncoderWrapper``."""
    from mteb.models import SearchEncoderWrapper, SearchProtocol

    if isinstance(model, SearchProtocol) and hasattr(model, "index"):
        return model
    return SearchEncoderWrapper(model)


class RerankSearch(SearchModel):
    """First-stage retrieval of ``rerank_k`` candidates, reordered by a second stage (here a
    cross-encoder).

    Args:
        first_stage: a search model (:class:`BM25Model`) or an mteb encoder.
        reranker: an mteb ``CrossEncoderProtocol`` (e.g. ``mteb.models.CrossEncoderWrapper``).
        rerank_k: candidates per query handed to the reranker (Z25: 100); the first stage's
            documents below them follow in first-stage order.
        first_stage_name: how the first stage is named in the results.
        meta: the reranker's mteb metadata (default: ``reranker.mteb_model_meta``).

    Subclasses change what reorders the candidates by overriding :meth:`rerank` (and
    :meth:`_search_wrapper`): the listwise stage's
    :class:`~hf_posbias.evaluation.runs.listwise_stage.ListwiseRerankSearch`.

    Example:
        >>> # RerankSearch(BM25Model(), CrossEncoderWrapper(ce), rerank_k=100)
    """

    def __init__(
        self,
        first_stage: Any,
        reranker: Any,
        *,
        rerank_k: int = 100,
        first_stage_name: str | None = None,
        meta: ModelMeta | None = None,
    ) -> None:
        if rerank_k < 1:
            raise ValueError(f"rerank_k must be >= 1, got {rerank_k}")
        self.first_stage = _as_search_model(first_stage)
        self.reranker = reranker
        self.rerank_k = rerank_k
        self.stats = self._new_stats()
        first_meta = getattr(first_stage, "mteb_model_meta", None)
        self.first_stage_name = first_stage_name or getattr(first_meta, "name", "first-stage")
        reranker_meta = meta if meta is not None else reranker.mteb_model_meta
        experiment = dict(reranker_meta.experiment_kwargs or {})
        experiment.update(
            {
                "first_stage": self.first_stage_name,
                "first_stage_revision": getattr(first_meta, "revision", None),
                "rerank_k": rerank_k,
            }
        )
        self._meta = reranker_meta.model_copy(update={"experiment_kwargs": experiment})
        self._rerank_search = self._search_wrapper(reranker)

    def _new_stats(self) -> SearchStats:
        return SearchStats()

    def _search_wrapper(self, reranker: Any) -> Any:
        """mteb's ``SearchCrossEncoderWrapper`` around the cross-encoder (what :meth:`rerank`
        and :meth:`index` talk to)."""
        from mteb.models import SearchCrossEncoderWrapper

        return SearchCrossEncoderWrapper(reranker)

    @property
    def mteb_model_meta(self) -> ModelMeta:
        """The reranker's metadata, with the first stage and ``k`` as experiment settings."""
        return self._meta

    def index_corpus(self, corpus: Any, context: SearchContext) -> None:
        """Index for the first stage; the reranker reads documents from the same corpus."""
        self.first_stage.index(corpus, **context.as_kwargs())
        self._rerank_search.index(corpus, **context.as_kwargs())

    def search_queries(
        self, queries: Any, top_k: int, top_ranked: TopRanked | None, context: SearchContext
    ) -> Scores:
        """Rerank the first stage's top ``rerank_k``; the first stage's documents below it follow
        in their first-stage order (scored below the reranked ones). At most ``top_k`` per query.
        """
        from hf_posbias.tasks.position_scoring import ranked

        first = self.first_stage.search(
            queries, top_k=max(self.rerank_k, top_k), **context.as_kwargs()
        )
        lists = {qid: [doc for doc, _ in ranked(docs)] for qid, docs in first.items()}
        candidates = {qid: docs[: self.rerank_k] for qid, docs in lists.items()}
        self.stats.searches += 1
        self.stats.queries += len(queries)
        self.stats.pairs_scored += sum(len(v) for v in candidates.values())
        reranked = self.rerank(queries, candidates, **context.as_kwargs())
        out: dict[str, dict[str, float]] = {}
        for qid, docs in lists.items():
            head = ranked(reranked.get(qid, {}))[:top_k]
            floor = min((score for _, score in head), default=0.0)
            tail = [d for d in docs[self.rerank_k :] if d not in reranked.get(qid, {})]
            out[qid] = dict(head)
            for i, doc in enumerate(tail[: top_k - len(head)]):
                out[qid][doc] = floor - 1.0 - i
        return out

    def rerank(
        self,
        queries: Any,
        candidates: dict[str, list[str]],
        **context: Any,
    ) -> dict[str, dict[str, float]]:
        """Score each query's candidates (first-stage order) with the cross-encoder: mteb's
        ``SearchCrossEncoderWrapper`` over ``top_ranked``. ``context`` is mteb's search context.
        """
        return self._rerank_search.search(
            queries, top_k=self.rerank_k, top_ranked=candidates, **context
        )
