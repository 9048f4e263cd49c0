"""Search models for position tasks: BM25 and cross-encoder reranking, usable in ``mteb.evaluate``.

- :class:`BM25Model` wraps mteb's own ``BM25Search`` (``mteb/baseline-bm25s``, bm25s with the
  language's stop words and Snowball stemmer taken from the task's ``eval_langs``), quiets its
  progress bars, counts index builds and turns a missing ``PyStemmer`` into a one-line error.
  mteb calls ``index`` once per ``hf_subset``; a position task evaluates all its queries in one
  subset, so the corpus is indexed once per task.
- :class:`RerankSearch` is a two-stage pipeline: a first stage (BM25, or any mteb encoder)
  retrieves the top ``rerank_k``
  documents, mteb's ``SearchCrossEncoderWrapper`` rescores them with a cross-encoder — the setting
  of Zeng et al. (2025) Table 1 (rerankers over a top-100). Its ``mteb_model_meta`` is the
  reranker's with ``experiment_kwargs`` naming the first stage and ``k``, so mteb's result cache
  files each pipeline separately.

Example:
    >>> from hf_posbias.evaluation.search import BM25Model
    >>> BM25Model().mteb_model_meta.name
    'mteb/baseline-bm25s'
"""

from __future__ import annotations

import contextlib
import io
import logging
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import ModelLoadError

if TYPE_CHECKING:
    from mteb.abstasks.task_metadata import TaskMetadata
    from mteb.models.model_meta import ModelMeta

logger = logging.getLogger(__name__)

BM25_NAMES = frozenset({"bm25", "bm25s", "mteb/baseline-bm25s"})
"""Model arguments that mean BM25."""


def is_bm25(name: str) -> bool:
    """Whether a model argument names BM25.

    Example:
        >>> is_bm25("BM25"), is_bm25("all-MiniLM-L6-v2")
        (True, False)
    """
    return str(name).strip().lower() in BM25_NAMES


@dataclass
class SearchStats:
    """How often the search model did its expensive work."""

    index_builds: int = 0
    searches: int = 0
    queries: int = 0
    pairs_scored: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


def _quiet(encode_kwargs: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
    """bm25s draws its own tqdm bars and mteb does not forward ``show_progress``: silence them."""
    if encode_kwargs.get("show_progress_bar", True):
        return contextlib.nullcontext()
    return contextlib.redirect_stderr(io.StringIO())


class BM25Model:
    """mteb's ``BM25Search`` with quiet progress and counters (``mteb.evaluate``-ready).

    Args:
        **bm25_kwargs: passed to ``mteb.models.model_implementations.bm25.BM25Search``
            (``k1``, ``b``, ``method``, ``stopwords``, ``stemmer_language`` …).
    """

    def __init__(self, **bm25_kwargs: Any) -> None:
        import mteb
        from mteb.models.model_implementations.bm25 import BM25Search

        self._search = BM25Search(**bm25_kwargs)
        self.stats = SearchStats()
        meta = mteb.get_model_meta("mteb/baseline-bm25s")
        # Non-default BM25 parameters are an experiment of their own in mteb's result cache.
        self._meta = meta.model_copy(
            update={"experiment_kwargs": dict(bm25_kwargs) if bm25_kwargs else None}
        )

    @property
    def mteb_model_meta(self) -> ModelMeta:
        """``mteb/baseline-bm25s`` (the name the MTEB leaderboard uses for BM25)."""
        return self._meta

    def index(
        self,
        corpus: Any,
        *,
        task_metadata: TaskMetadata,
        hf_split: str,
        hf_subset: str,
        encode_kwargs: dict[str, Any],
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Index the corpus (mteb calls this once per subset)."""
        try:
            with _quiet(encode_kwargs):
                self._search.index(
                    corpus,
                    task_metadata=task_metadata,
                    hf_split=hf_split,
                    hf_subset=hf_subset,
                    encode_kwargs=encode_kwargs,
                    num_proc=num_proc,
                )
        except ModuleNotFoundError as err:
            package = "PyStemmer" if err.name == "Stemmer" else err.name
            raise ModelLoadError(
                f"BM25 needs the package {package!r}: pip install {package}"
            ) from None
        self.stats.index_builds += 1

    def search(
        self,
        queries: Any,
        *,
        task_metadata: TaskMetadata,
        hf_split: str,
        hf_subset: str,
        top_k: int,
        encode_kwargs: dict[str, Any],
        top_ranked: dict[str, list[str]] | None = None,
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> dict[str, dict[str, float]]:
        """Top ``top_k`` documents per query with their BM25 scores."""
        self.stats.searches += 1
        self.stats.queries += len(queries)
        with _quiet(encode_kwargs):
            return self._search.search(
                queries,
                task_metadata=task_metadata,
                hf_split=hf_split,
                hf_subset=hf_subset,
                top_k=top_k,
                encode_kwargs=encode_kwargs,
                top_ranked=top_ranked,
                num_proc=num_proc,
            )


def _as_search_model(model: Any) -> Any:
    """A first stage as a search model: encoders get mteb's own ``SearchEncoderWrapper``."""
    from mteb.models import SearchEncoderWrapper, SearchProtocol

    if isinstance(model, SearchProtocol) and hasattr(model, "index"):
        return model
    return SearchEncoderWrapper(model)


class RerankSearch:
    """First-stage retrieval of ``rerank_k`` candidates, reordered by a cross-encoder.

    Args:
        first_stage: a search model (:class:`BM25Model`) or an mteb encoder.
        reranker: an mteb ``CrossEncoderProtocol`` (e.g. ``mteb.models.CrossEncoderWrapper``).
        rerank_k: candidates per query handed to the reranker (Z25: 100).
        first_stage_name: how the first stage is named in the results.

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
    ) -> None:
        from mteb.models import SearchCrossEncoderWrapper

        if rerank_k < 1:
            raise ValueError(f"rerank_k must be >= 1, got {rerank_k}")
        self.first_stage = _as_search_model(first_stage)
        self.reranker = reranker
        self._rerank_search = SearchCrossEncoderWrapper(reranker)
        self.rerank_k = rerank_k
        self.stats = SearchStats()
        first_meta = getattr(first_stage, "mteb_model_meta", None)
        self.first_stage_name = first_stage_name or getattr(first_meta, "name", "first-stage")
        reranker_meta = reranker.mteb_model_meta
        experiment = dict(reranker_meta.experiment_kwargs or {})
        experiment.update(
            {
                "first_stage": self.first_stage_name,
                "first_stage_revision": getattr(first_meta, "revision", None),
                "rerank_k": rerank_k,
            }
        )
        self._meta = reranker_meta.model_copy(update={"experiment_kwargs": experiment})

    @property
    def mteb_model_meta(self) -> ModelMeta:
        """The reranker's metadata, with the first stage and ``k`` as experiment settings."""
        return self._meta

    def index(self, corpus: Any, **kwargs: Any) -> None:
        """Index for the first stage; the reranker reads documents from the same corpus."""
        self.first_stage.index(corpus, **kwargs)
        self._rerank_search.index(corpus, **kwargs)

    def search(
        self,
        queries: Any,
        *,
        task_metadata: TaskMetadata,
        hf_split: str,
        hf_subset: str,
        top_k: int,
        encode_kwargs: dict[str, Any],
        top_ranked: dict[str, list[str]] | None = None,
        num_proc: int | None = None,
        **kwargs: Any,
    ) -> dict[str, dict[str, float]]:
        """Rerank the first stage's top ``rerank_k``; returns at most ``top_k`` per query."""
        first = self.first_stage.search(
            queries,
            task_metadata=task_metadata,
            hf_split=hf_split,
            hf_subset=hf_subset,
            top_k=self.rerank_k,
            encode_kwargs=encode_kwargs,
            num_proc=num_proc,
        )
        candidates = {
            qid: [doc for doc, _ in sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))][
                : self.rerank_k
            ]
            for qid, docs in first.items()
        }
        self.stats.searches += 1
        self.stats.queries += len(queries)
        self.stats.pairs_scored += sum(len(v) for v in candidates.values())
        reranked = self._rerank_search.search(
            queries,
            task_metadata=task_metadata,
            hf_split=hf_split,
            hf_subset=hf_subset,
            top_k=top_k,
            encode_kwargs=encode_kwargs,
            top_ranked=candidates,
            num_proc=num_proc,
        )
        out: dict[str, dict[str, float]] = {}
        for qid, docs in reranked.items():
            ranked = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k]
            out[qid] = dict(ranked)
        return out
