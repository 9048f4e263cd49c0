"""First stage for the listwise commands: the top-k document ids of a query.

- :class:`BM25FirstStage` — the package's one BM25 (:class:`hf_posbias.bm25.index.BM25Index`:
  English stop words and Snowball stemmer), the corpus indexed once; every document is scored, so
  any k up to the corpus size is available.
- :class:`DenseFirstStage` — any embedding model the one resolver loads (registry prompts and
  ``openai:`` endpoints included), scored with the model's own similarity function
  (sentence-transformers' ``similarity_fn_name``: a dot-product model such as Contriever ranks
  by dot product; cosine for a model without one), overridable; the corpus encoded once.
- :class:`SparseFirstStage` — a sentence-transformers ``SparseEncoder`` (SPLADE++: ``splade++``,
  ``sparse:<hub id>``, or a local folder saved as a ``SparseEncoder``), scored with its own
  similarity (dot product of the sparse vectors), never cosine-normalised.
- :class:`FusedFirstStage` — reciprocal rank fusion of two or more of them
  (:func:`reciprocal_rank_fusion`, ``--first-stage bm25 all-MiniLM-L6-v2 --rrf-k 60``).

All break score ties as evaluation's runs do (document id descending, trec_eval's rule:
:func:`hf_posbias.tasks.position_scoring.ranked`), so the list never depends on
corpus order
and a BM25 list is the head of ``posbias evaluate --model bm25``'s run for the same query.

Every stage indexes or encodes a document in the retrievers' one form
(:func:`hf_posbias.doctext.retriever_text`: title and text as mteb joins them, what ``posbias
evaluate`` encodes), never the reranker's prompt form (:meth:`Passage.content`); the form's name
(``document_form``) is part of every stage's ``encoding``, so a cache made with another form is
recomputed. A dense list is therefore the head of ``posbias evaluate``'s run of the same model.

Example:
    >>> from hf_posbias.rerankers.records import Passage
    >>> corpus = {d: Passage(d, t) for d, t in
    ...           [("d1", "cats purr softly"), ("d2", "dogs bark loudly"), ("d3", "dogs run")]}
    >>> BM25FirstStage(corpus).top_k("why do dogs bark", 2)
    ['d2', 'd3']
    >>> reciprocal_rank_fusion([["d2", "d3", "d1"], ["d3", "d1", "d2"]])
    ['d3', 'd2', 'd1']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from hf_posbias.doctext import DOCUMENT_FORM, retriever_text
from hf_posbias.errors import InputError
from hf_posbias.rerankers.records import Passage
from hf_posbias.rows.arrow import take_values
from hf_posbias.settings import flag_name

if TYPE_CHECKING:
    from hf_posbias.modeling.resolve import ModelSettings

SIMILARITIES: tuple[str, ...] = ("cosine", "dot", "euclidean", "manhattan")
"""Similarity functions a dense first stage can score with (sentence-transformers' names)."""

SPARSE_PREFIX = "sparse:"
"""First-stage prefix that loads a name (a Hub id) as a sentence-transformers SparseEncoder."""

FIRST_STAGE_ALIASES: dict[str, str] = {
    "splade++": f"{SPARSE_PREFIX}naver/splade-cocondenser-ensembledistil",
}
"""Short names of first stages: Q26's SPLADE++ (the ensemble-distilled CoCondenser SPLADE)."""

RRF_K = 60
"""Reciprocal rank fusion's k (Cormack et al., 2009): a document at rank r adds 1 / (k + r)."""

RRF_DEPTH = 1000
"""How deep each fused first stage's ranking is read (its top ``max(k, RRF_DEPTH)``)."""


class FirstStage(Protocol):
    """Anything that lists the top-k documents of a query."""

    name: str
    size: int
    encoding: dict[str, Any] | None
    """What the ranking depends on besides the name and the corpus (``None``: nothing)."""

    def top_k(self, query: str, k: int) -> list[str]: ...


def _ranked(scores: Any, doc_ids: Sequence[str], k: int) -> list[str]:
    from hf_posbias.tasks.position_scoring import ranked

    return [doc for doc, _ in ranked(dict(zip(doc_ids, map(float, scores))))[:k]]


class BM25FirstStage:
    """BM25 (:class:`hf_posbias.bm25.index.BM25Index`) over a corpus ``{doc_id: Passage}``."""

    name = "bm25"

    def __init__(self, corpus: Mapping[str, Passage]) -> None:
        if not corpus:
            raise InputError("the first stage needs a non-empty corpus")
        self.encoding: dict[str, Any] | None = {"document_form": DOCUMENT_FORM}
        self._corpus = corpus
        self.doc_ids = sorted(corpus)
        self.size = len(self.doc_ids)

    @cached_property
    def _index(self) -> Any:
        """The corpus index, built on the first query (a cached list needs none)."""
        from hf_posbias.bm25.index import BM25Index

        # A stream: the index reads it a batch at a time and never holds the texts.
        return BM25Index(_texts(self._corpus, self.doc_ids))

    def top_k(self, query: str, k: int) -> list[str]:
        """The ``k`` best documents (ties by document id, descending)."""
        return _ranked(self._index.scores(query), self.doc_ids, k)


class _EncodedStage:
    """A model's first stage over a corpus ``{doc_id: Passage}``: its documents in id order."""

    def __init__(self, name: str, corpus: Mapping[str, Passage]) -> None:
        self.name = name
        self.doc_ids = sorted(corpus)
        self.size = len(self.doc_ids)
        self._corpus = corpus

    def _texts(self) -> list[str]:
        return list(_texts(self._corpus, self.doc_ids))


def _texts(corpus: Mapping[str, Passage], doc_ids: Sequence[str]) -> Iterator[str]:
    """The documents in the retrievers' one form (``posbias evaluate``'s), in ``doc_ids`` order,
    read a batch of rows at a time (:func:`~hf_posbias.rows.arrow.take_values`), not one lookup
    each."""
    return (retriever_text(p.title, p.text) for p in take_values(corpus, doc_ids))


class DenseFirstStage(_EncodedStage):
    """Any embedding model the resolver loads (:func:`hf_posbias.embedding.load_embedder`: a
    sentence-transformers folder or Hub id, a packaged model, an mteb registry name with its
    prompts, ``openai:<model>``): the model's own similarity (``similarity``: another one) of
    query and passage embeddings (cosine: unit-norm ones), each side with the model's own
    query/document prompt. The corpus is encoded on the first query: the
    model's ``encoding`` settings (:meth:`hf_posbias.embedding.TextEmbedder.describe`) are known
    before, so a cache of its lists is checked without encoding anything."""

    def __init__(
        self,
        model: str,
        corpus: Mapping[str, Passage],
        *,
        batch_size: int = 64,
        settings: ModelSettings | None = None,
        similarity: str | None = None,
    ) -> None:
        from hf_posbias.embedding import load_embedder

        super().__init__(model, corpus)
        self._model = load_embedder(model, settings=settings, batch_size=batch_size)
        self.similarity = check_similarity(similarity or self._model.similarity_fn_name)
        self.encoding: dict[str, Any] | None = {
            **self._model.describe(),
            "document_form": DOCUMENT_FORM,
        }
        if self.similarity != "cosine":  # cosine lists keep the keys they were cached under
            self.encoding["similarity"] = self.similarity

    @cached_property
    def _embeddings(self) -> Any:
        """The corpus embeddings, encoded once on the first query (unit-norm for cosine)."""
        if self.similarity == "cosine":
            return self._model.embed(self._texts(), "document")
        return self._model.embed(self._texts(), "document", normalize=False)

    def top_k(self, query: str, k: int) -> list[str]:
        """The ``k`` most similar documents (ties by document id, descending)."""
        if self.similarity == "cosine":
            q = self._model.embed([query], "query")[0]
            return _ranked(self._embeddings @ q, self.doc_ids, k)
        q = self._model.embed([query], "query", normalize=False)
        return _ranked(similarity_scores(self.similarity, q, self._embeddings), self.doc_ids, k)


def check_similarity(name: str | None) -> str:
    """A similarity function's name (``None``: cosine), or a one-line error.

    Example:
        >>> check_similarity(None), check_similarity("dot")
        ('cosine', 'dot')
        >>> check_similarity("jaccard")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: unknown first-stage similarity 'jaccard': cosine, dot, \
euclidean, manhattan
    """
    name = name or "cosine"
    if name not in SIMILARITIES:
        raise InputError(f"unknown first-stage similarity {name!r}: {', '.join(SIMILARITIES)}")
    return name


def similarity_scores(name: str, query: Any, documents: Any) -> Any:
    """Scores of one query (a ``1 × d`` array) against documents (``n × d``) with
    sentence-transformers' similarity function ``name`` (distances are negated: higher is
    closer).

    Example:
        >>> import numpy as np
        >>> similarity_scores("dot", np.array([[1.0, 2.0]]), np.array([[1.0, 0.0], [0.0, 3.0]]))
        array([1., 6.], dtype=float32)
    """
    import numpy as np
    import torch
    from sentence_transformers import SimilarityFunction

    fn = SimilarityFunction.to_similarity_fn(name)
    scores = fn(torch.as_tensor(np.asarray(query)), torch.as_tensor(np.asarray(documents)))
    return scores[0].to(torch.float32).numpy()


class SparseFirstStage(_EncodedStage):
    """A sentence-transformers ``SparseEncoder`` (SPLADE): sparse query and document vectors
    compared by the model's own similarity (dot product for SPLADE), without normalisation; the
    corpus is encoded once, as sparse tensors, on the first query. ``model``: a local folder
    saved as a ``SparseEncoder``, or ``sparse:<hub id or folder>``."""

    def __init__(
        self,
        model: str,
        corpus: Mapping[str, Passage],
        *,
        batch_size: int = 32,
        settings: ModelSettings | None = None,
    ) -> None:
        from hf_posbias.embedding import _st_source
        from hf_posbias.modeling.loaders import load_sentence_transformer
        from hf_posbias.modeling.resolve import ModelSettings, model_display_name

        super().__init__(model, corpus)
        self._batch_size = batch_size
        path = model.removeprefix(SPARSE_PREFIX)
        trust = (settings or ModelSettings()).trust_remote_code
        self._model = load_sentence_transformer(path, kind="sparse", trust_remote_code=trust)
        self.encoding: dict[str, Any] | None = {
            "model": model_display_name(path),
            "kind": "sparse",
            "similarity": str(self._model.similarity_fn_name),
            "max_seq_length": self._model.max_seq_length,
            **_st_source(path),
            "document_form": DOCUMENT_FORM,
        }

    @cached_property
    def _embeddings(self) -> Any:
        return self._model.encode_document(
            self._texts(), batch_size=self._batch_size, show_progress_bar=False
        )

    def top_k(self, query: str, k: int) -> list[str]:
        """The ``k`` best documents by the model's similarity (ties by document id, descending)."""
        q = self._model.encode_query([query], show_progress_bar=False)
        scores = self._model.similarity(q, self._embeddings)[0]
        return _ranked(scores.to_dense().float().cpu().numpy(), self.doc_ids, k)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Documents of several rankings by reciprocal rank fusion: Σ 1 / (k + rank) over the
    rankings that hold them (rank from 1), summed exactly (``math.fsum``, so the order of the
    rankings never matters), ties by document id descending.

    Example:
        >>> reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=1)
        ['b', 'a', 'c']
    """
    import math

    from hf_posbias.tasks.position_scoring import ranked

    parts: dict[str, list[float]] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            parts.setdefault(doc, []).append(1.0 / (k + rank))
    return [doc for doc, _ in ranked({d: math.fsum(v) for d, v in parts.items()})]


class FusedFirstStage:
    """Reciprocal rank fusion (:func:`reciprocal_rank_fusion`) of two or more first stages,
    each read to its top ``max(k, RRF_DEPTH)``; its ``encoding`` holds every stage's and k."""

    def __init__(
        self, stages: Sequence[FirstStage], *, rrf_k: int = RRF_K, depth: int = RRF_DEPTH
    ) -> None:
        names = [stage.name for stage in stages]
        if len(set(names)) < 2:
            raise InputError(
                "reciprocal rank fusion needs two or more different first stages, got "
                f"{len(set(names))}: {' '.join(dict.fromkeys(names)) or 'none'}"
            )
        if rrf_k < 1:
            raise InputError(f"{flag_name('rrf_k')} must be at least 1, got {rrf_k}")
        self.stages = list(stages)
        self.rrf_k = rrf_k
        self.depth = depth
        self.name = "rrf(" + " + ".join(names) + ")"
        self.size = min(stage.size for stage in stages)
        self.encoding: dict[str, Any] | None = {
            "rrf_k": rrf_k,
            "depth": depth,
            "stages": [{"name": st.name, "encoding": st.encoding} for st in self.stages],
        }

    def top_k(self, query: str, k: int) -> list[str]:
        """The ``k`` best documents of the fused ranking."""
        lists = [st.top_k(query, min(st.size, max(k, self.depth))) for st in self.stages]
        return reciprocal_rank_fusion(lists, self.rrf_k)[:k]


def first_stage_names(value: str | Sequence[str]) -> list[str]:
    """The first stages a ``--first-stage`` value names (one, or several to fuse).

    Example:
        >>> first_stage_names("bm25"), first_stage_names(["bm25", "all-MiniLM-L6-v2"])
        (['bm25'], ['bm25', 'all-MiniLM-L6-v2'])
        >>> first_stage_names(["bm25", "bm25"])
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: reciprocal rank fusion needs two or more different first \
stages, got 1: bm25
    """
    names = [value] if isinstance(value, str) else [str(v) for v in value]
    if not names or not all(n.strip() for n in names):
        raise InputError(f"{flag_name('first_stage')} needs a first stage (e.g. bm25)")
    if len(names) > 1 and len(set(names)) < 2:
        raise InputError(
            f"reciprocal rank fusion needs two or more different first stages, got 1: {names[0]}"
        )
    return names


def _is_sparse(name: str) -> bool:
    from pathlib import Path

    from hf_posbias.modeling.resolve import encoder_kind, resolve_model

    if name.startswith(SPARSE_PREFIX):
        return True
    resolved = Path(resolve_model(name))
    return resolved.is_dir() and encoder_kind(resolved) == "sparse"


def load_first_stage(
    name: str | Sequence[str],
    corpus: Mapping[str, Passage],
    settings: ModelSettings | None = None,
    *,
    rrf_k: int = RRF_K,
    similarity: str | None = None,
) -> FirstStage:
    """``bm25``, a sparse encoder (:class:`SparseFirstStage`: ``splade++``, ``sparse:<model>``,
    a folder saved as a ``SparseEncoder``) or any embedding model argument
    (:class:`DenseFirstStage`, scored by ``similarity``, default the model's own); several
    names: their :class:`FusedFirstStage` with ``rrf_k``. ``settings`` carry an endpoint's URL
    and key or the remote-code opt-in."""
    from hf_posbias.bm25.analyzer import is_bm25

    names = first_stage_names(name)
    if len(names) > 1:
        stages = [load_first_stage(n, corpus, settings, similarity=similarity) for n in names]
        return FusedFirstStage(stages, rrf_k=rrf_k)
    [one] = names
    target = FIRST_STAGE_ALIASES.get(one, one)
    if is_bm25(target):
        return BM25FirstStage(corpus)
    if _is_sparse(target):
        stage: FirstStage = SparseFirstStage(target, corpus, settings=settings)
    else:
        stage = DenseFirstStage(target, corpus, settings=settings, similarity=similarity)
    stage.name = one
    return stage


def check_k(k: int, corpus_size: int) -> None:
    """Refuse a k larger than the first stage can list (it ranks the whole corpus).

    ``k`` >= 1 is checked by
    :class:`~hf_posbias.listwise.experiments.experiment_settings.ListSource`.

    Example:
        >>> try:
        ...     check_k(30, 20)
        ... except InputError as err:
        ...     print(err)
        --k 30 is larger than the first-stage list: the corpus has 20 document(s)
    """
    if k > corpus_size:
        raise InputError(
            f"{flag_name('k')} {k} is larger than the first-stage list: the corpus has "
            f"{corpus_size} document(s)"
        )
