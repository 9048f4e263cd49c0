"""BM25's index over a corpus (``bm25s``, Lucene variant), built a batch of documents at a
time with its arrays written in place.

Example:
    >>> from hf_posbias.bm25.index import BM25Index
    >>> index = BM25Index(["cats purr softly", "dogs bark loudly", "a dog runs"])
    >>> found = index.retrieve(["why do dogs bark"], 2)
    >>> found.documents.tolist(), [round(float(s), 3) for s in found.scores[0]]
    ([[1, 2]], [0.549, 0.212])
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from hf_posbias.bm25.analyzer import (
    ENGLISH,
    INDEX_BATCH,
    K1,
    METHOD,
    B,
    BM25Analyzer,
    TermIds,
)
from hf_posbias.errors import InputError


def _column_order(ids: TermIds, first: int, last: int, n_docs: int) -> tuple[np.ndarray, ...]:
    """Documents ``first``..``last - 1``'s distinct (term, document) pairs, ordered by term then
    document (the order of a CSC matrix's entries), with the term's count in the document."""
    lengths = np.diff(ids.offsets[first : last + 1])
    terms = ids.flat[ids.offsets[first] : ids.offsets[last]].astype(np.int64)
    docs = np.repeat(np.arange(first, last, dtype=np.int64), lengths)
    keys, counts = np.unique(terms * n_docs + docs, return_counts=True)
    return keys // n_docs, keys % n_docs, counts


def _csc_scores(bm25: Any, ids: TermIds, n_vocab: int, chunk: int) -> dict[str, Any]:
    """The arrays ``bm25s.BM25.build_index_from_ids`` builds (numpy backend), equal to theirs,
    built ``chunk`` documents at a time into arrays of the index's own size.

    ``bm25s`` holds a (score, document, term) triplet per entry and sorts them, about four
    times the index; here a first pass counts document frequencies (the column sizes), a
    second computes each chunk's scores with ``bm25s``'s own formulas and writes them in place.
    """
    from bm25s.scoring import _build_idf_array, _select_idf_scorer, _select_tfc_scorer

    n_docs = len(ids)
    avg_doc_len = np.diff(ids.offsets).mean()  # bm25s: the mean of the documents' lengths
    df = np.zeros(n_vocab, dtype=np.int64)
    bounds = [*range(0, n_docs, chunk), n_docs]
    for first, last in itertools.pairwise(bounds):
        terms, _, _ = _column_order(ids, first, last, n_docs)
        df += np.bincount(terms, minlength=n_vocab)
    idf = _build_idf_array(
        doc_frequencies=dict(enumerate(df.tolist())),
        n_docs=n_docs,
        compute_idf_fn=_select_idf_scorer(bm25.idf_method),
        dtype=bm25.dtype,
    )
    tfc = _select_tfc_scorer(bm25.method)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    data = np.empty(int(indptr[-1]), dtype=bm25.dtype)
    indices = np.empty(int(indptr[-1]), dtype=bm25.int_dtype)
    heads = indptr[:-1].copy()  # the next free slot of each term's column
    lengths = np.diff(ids.offsets)
    for first, last in itertools.pairwise(bounds):
        terms, docs, counts = _column_order(ids, first, last, n_docs)
        if not len(terms):
            continue  # documents of stop words only: no entries
        # bm25s's per-document arithmetic, element-wise: float32 term counts, float64 lengths.
        scores = idf[terms] * tfc(
            tf_array=counts.astype(bm25.dtype),
            l_d=lengths[docs],
            l_avg=avg_doc_len,
            k1=bm25.k1,
            b=bm25.b,
            delta=bm25.delta,
        )
        starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        sizes = np.diff(np.r_[starts, len(terms)])
        slots = heads[terms] + np.arange(len(terms)) - np.repeat(starts, sizes)
        data[slots] = scores
        indices[slots] = docs
        heads[terms[starts]] += sizes
    return {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}


@functools.cache
def _lean_bm25s() -> type:
    """``bm25s.BM25`` whose index build over :class:`TermIds` holds little beyond the index
    (:func:`_csc_scores`); any other input, or a variant this does not cover, is bm25s's own."""
    import bm25s

    class LeanBM25(bm25s.BM25):  # type: ignore[misc]
        def build_index_from_ids(
            self,
            unique_token_ids: list[int],
            corpus_token_ids: Any,
            show_progress: bool = True,
            leave_progress: bool = False,
        ) -> dict[str, Any]:
            lean = (
                isinstance(corpus_token_ids, TermIds)
                and self.method not in self.methods_requiring_nonoccurrence
                and self.csc_backend == "numpy"
            )
            if not lean:
                return super().build_index_from_ids(
                    unique_token_ids, corpus_token_ids, show_progress, leave_progress
                )
            self.nonoccurrence_array = None
            return _csc_scores(self, corpus_token_ids, len(unique_token_ids), INDEX_BATCH)

    return LeanBM25


class BM25Index:
    """Okapi BM25 (``bm25s``, Lucene variant) over ``texts``, documents addressed by position.

    ``texts`` may be any iterable (a generator over a corpus too large to hold as text): it is
    tokenised ``batch_size`` documents at a time, and only the index is kept (the scores do
    not depend on the batch size).

    Example:
        >>> index = BM25Index(["cats purr", "dogs bark", "dogs run"])
        >>> docs, scores = index.retrieve(["barking dog"], 2)
        >>> docs.tolist()
        [[1, 2]]
    """

    def __init__(
        self,
        texts: Iterable[str],
        analyzer: BM25Analyzer = ENGLISH,
        *,
        k1: float = K1,
        b: float = B,
        batch_size: int = INDEX_BATCH,
    ) -> None:
        import logging

        # bm25s logs every index build at DEBUG on its own handler; the run's report says enough.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.analyzer = analyzer
        # Read in batches (an iterator of texts is never held whole): what stays is the index.
        tokenized = analyzer.tokenize_ids(texts, batch_size=batch_size)
        self.size = len(tokenized.ids)
        if not self.size:
            raise InputError("BM25 needs a non-empty corpus")
        self._bm25 = _lean_bm25s()(k1=k1, b=b, delta=0.5, method=METHOD)
        self._bm25.index(tokenized, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """Every document's score for ``query`` (float32, corpus order)."""
        [tokens] = self.analyzer.tokenize([query])
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        return self._bm25.get_scores(tokens)

    @property
    def index_bytes(self) -> int:
        """Bytes of the index's arrays (the sparse score matrix ``bm25s`` keeps: one float and
        one index per distinct term of each document, plus a pointer per term): what BM25 must
        hold in memory for a corpus, measured by ``benchmarks/scaling.py`` per document.

        Example:
            >>> BM25Index(["cats purr", "dogs bark", "dogs run"]).index_bytes > 0
            True
        """
        arrays = getattr(self._bm25, "scores", {})
        return int(sum(getattr(a, "nbytes", 0) for a in arrays.values()))

    def retrieve(self, queries: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The top ``k`` documents of each query (positions, scores), as mteb's BM25 retrieves."""
        return self._bm25.retrieve(
            self.analyzer.tokenize(queries), k=min(k, self.size), show_progress=False
        )
