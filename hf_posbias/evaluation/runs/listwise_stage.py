"""A listwise reranker as the second stage of ``posbias evaluate``: retrieve, then rerank.

:class:`ListwiseRerankSearch` is a :class:`~hf_posbias.evaluation.runs.search.RerankSearch` whose
second stage is a listwise reranker (:mod:`hf_posbias.rerankers`: the packaged
``smollm2-135m``, a FIRST/DebiasFirst checkpoint, a served model, or the pointwise BM25 control).
The first stage's top ``rerank_k`` documents go to the reranker in first-stage order and are
reordered with rank_llm's sliding window (:func:`hf_posbias.rerankers.window.
rerank_lists`: window 20, step 10, back to front); the first stage's documents below them follow
in first-stage order. Window scores are comparable only within a window, so a reranked list is
scored by rank (``n − rank``): the evaluation reads the order, never the raw logits.

So the position bias of the whole pipeline — where the evidence sits in a *document* — is
measured by the same per-position scoring as a retriever's, in one ``mteb.evaluate`` run.

Example:
    >>> from hf_posbias.rerankers.records import RerankedList
    >>> rank_scores(RerankedList(ranking=["b", "a", "c"], scores={}))
    {'b': 3.0, 'a': 2.0, 'c': 1.0}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_posbias.evaluation.runs.search import RerankSearch, SearchStats
from hf_posbias.rerankers.records import FallbackStats, Passage, RerankedList

if TYPE_CHECKING:
    from mteb.models.model_meta import ModelMeta

    from hf_posbias.rerankers.base import ListwiseReranker

RerankerFactory = Callable[[Sequence[str]], "ListwiseReranker"]
"""Builds a reranker from the task's corpus texts (the BM25 control needs its statistics)."""


@dataclass
class ListwiseSearchStats(SearchStats):
    """A listwise second stage's counters: windows ranked and identifiers appended or cut."""

    windows: int = 0
    windows_with_fallback: int = 0
    appended_identifiers: int = 0
    topn_cut_identifiers: int = 0
    reranker: dict[str, Any] = field(default_factory=dict)


def rank_scores(reranked: RerankedList) -> dict[str, float]:
    """Scores that reproduce a reranked list's order: ``n − rank`` (best ``n``, last 1)."""
    n = len(reranked.ranking)
    return {doc: float(n - rank) for rank, doc in enumerate(reranked.ranking)}


class ListwiseRerankSearch(RerankSearch):
    """A first stage whose top ``rerank_k`` a listwise reranker reorders (see the module).

    Args:
        first_stage: a search model (:class:`~hf_posbias.evaluation.runs.search.BM25Model`) or
            an mteb encoder.
        reranker: a loaded :class:`~hf_posbias.rerankers.base.ListwiseReranker`, or a
            factory called with the corpus texts when a task's corpus is indexed.
        meta: the reranker's mteb metadata (unique name and revision).
        rerank_k: candidates per query handed to the reranker.
        step: sliding-window step (``None``: half the window).
        first_stage_name: how the first stage is named in the results.
    """

    def __init__(
        self,
        first_stage: Any,
        reranker: ListwiseReranker | RerankerFactory,
        *,
        meta: ModelMeta,
        rerank_k: int = 100,
        step: int | None = None,
        first_stage_name: str | None = None,
    ) -> None:
        self.step = step
        self._factory = None if hasattr(reranker, "rank_windows") else reranker
        self._passages: dict[str, Passage] = {}
        super().__init__(
            first_stage,
            None if self._factory else reranker,
            rerank_k=rerank_k,
            first_stage_name=first_stage_name,
            meta=meta,
        )

    def _new_stats(self) -> ListwiseSearchStats:
        return ListwiseSearchStats()

    def _search_wrapper(self, reranker: Any) -> None:
        return None  # the listwise reranker reads passages itself (index keeps them)

    def index(self, corpus: Any, **kwargs: Any) -> None:
        """Index for the first stage; keep the corpus as passages for the reranker."""
        self.first_stage.index(corpus, **kwargs)
        titles = corpus["title"] if "title" in corpus.column_names else [""] * len(corpus)
        self._passages = {
            str(doc_id): Passage(str(doc_id), str(text or ""), str(title or ""))
            for doc_id, text, title in zip(corpus["id"], corpus["text"], titles, strict=True)
        }
        if self._factory is not None:
            self.reranker = self._factory([p.content() for p in self._passages.values()])
        self.stats.reranker = dict(self.reranker.describe())

    def rerank(
        self, queries: Any, candidates: dict[str, list[str]], **context: Any
    ) -> dict[str, dict[str, float]]:
        """Rerank every query's candidates with the sliding window, all queries in lockstep."""
        from hf_posbias.rerankers.window import rerank_lists

        if self.reranker is None:
            raise RuntimeError("ListwiseRerankSearch.index must be called before search")
        texts = {str(q): str(t) for q, t in zip(queries["id"], queries["text"], strict=True)}
        qids = [q for q in candidates if q in texts]
        lists = [(texts[q], [self._passages[d] for d in candidates[q]]) for q in qids]
        results = rerank_lists(self.reranker, lists, step=self.step)
        fallback = FallbackStats()
        out: dict[str, dict[str, float]] = {}
        for qid, reranked in zip(qids, results, strict=True):
            fallback.add(reranked)
            out[qid] = rank_scores(reranked)
        stats = self.stats
        stats.windows += fallback.windows
        stats.windows_with_fallback += fallback.windows_with_fallback
        stats.appended_identifiers += fallback.appended
        stats.topn_cut_identifiers += fallback.cut
        return out
