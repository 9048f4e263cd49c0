"""The one BM25 of the package: tokenisation, stemming, the index and the pair scorer.

"bm25" means one ranker everywhere: ``posbias evaluate --model bm25``, the listwise first stage
and the listwise pointwise control all tokenise with :class:`BM25Analyzer` (``bm25s`` word
split, lower-cased, the language's stop words, the language's Snowball stemmer from PyStemmer —
what mteb's ``mteb/baseline-bm25s`` does for a language with a stop-word list) and score with
Okapi BM25, Lucene variant, ``k1 = 1.5``, ``b = 0.75``.

- :class:`BM25Index` — a ``bm25s`` index over a corpus: every document's score for a query
  (:meth:`~BM25Index.scores`) and mteb's top-k retrieval (:meth:`~BM25Index.retrieve`).
- :class:`BM25PairScorer` — collection statistics fitted once, then any ``(query, passage)``
  pair scored directly in ``O(|q| + |d|)``, in float64: for scorers that read passages that
  are not in one index (verification's segments, a reranker's window). Same formula as the
  index (a test checks them against each other).

Verification's panel member keeps ``stemmer=None`` (no stemming): its scores are written into
the published pool and its manifest, and ``posbias build`` must stay byte-identical for the
data already built (see ``docs/architecture.md``).

Example:
    >>> index = BM25Index(["cats purr softly", "dogs bark loudly", "a dog runs"])
    >>> [round(float(s), 3) for s in index.scores("why do dogs bark")]
    [0.0, 0.549, 0.212]
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hf_posbias.errors import InputError, ModelLoadError

BM25_NAMES = frozenset({"bm25", "bm25s", "mteb/baseline-bm25s"})
"""Model arguments that mean BM25."""

K1 = 1.5
B = 0.75
METHOD = "lucene"
INDEX_BATCH = 2_000
"""Documents tokenised at once while an index is built: the texts held at a time."""

LANGUAGES: dict[str, tuple[str, str]] = {
    "eng": ("en", "english"),
    "deu": ("de", "german"),
    "nld": ("nl", "dutch"),
    "fra": ("fr", "french"),
    "spa": ("es", "spanish"),
    "por": ("pt", "portuguese"),
    "ita": ("it", "italian"),
    "rus": ("ru", "russian"),
    "swe": ("sv", "swedish"),
    "nob": ("no", "norwegian"),
    "nno": ("no", "norwegian"),
    "nor": ("no", "norwegian"),
}
"""ISO 639-3 → (``bm25s`` stop-word key, Snowball stemmer): the languages that have both, for
which mteb's BM25 is exactly this analyzer."""


def is_bm25(name: str) -> bool:
    """Whether a model argument names BM25.

    Example:
        >>> is_bm25("BM25"), is_bm25("all-MiniLM-L6-v2")
        (True, False)
    """
    return str(name).strip().lower() in BM25_NAMES


def document_text(title: str, text: str) -> str:
    """What BM25 indexes for a titled document: the retrievers' one form
    (:func:`hf_posbias.doctext.retriever_text`; mteb's BM25 joins with a newline, which gives the
    same words).

    Example:
        >>> document_text("Cat", "It purrs.")
        'Cat It purrs.'
    """
    from hf_posbias.doctext import retriever_text

    return retriever_text(title, text)


@functools.cache
def _stemmer(language: str) -> Any:
    try:
        import Stemmer
    except ModuleNotFoundError:
        raise ModelLoadError("BM25 needs the package 'PyStemmer': pip install PyStemmer") from None
    return Stemmer.Stemmer(language)


@dataclass(frozen=True)
class BM25Analyzer:
    """How BM25 turns text into terms: ``bm25s`` word split, stop words, a Snowball stemmer.

    Args:
        stopwords: a ``bm25s`` stop-word key (``"en"`` …) or ``None`` for none.
        stemmer: a PyStemmer language (``"english"`` …) or ``None`` for no stemming.

    Example:
        >>> BM25Analyzer().tokenize(["The dogs were barking"])
        [['dog', 'were', 'bark']]
        >>> BM25Analyzer(stemmer=None).tokenize(["The dogs were barking"])
        [['dogs', 'were', 'barking']]
    """

    stopwords: str | None = "en"
    stemmer: str | None = "english"

    @classmethod
    def for_language(cls, iso3: str) -> BM25Analyzer:
        """The analyzer of an ISO 639-3 language (one of :data:`LANGUAGES`).

        Example:
            >>> BM25Analyzer.for_language("deu")
            BM25Analyzer(stopwords='de', stemmer='german')
        """
        if iso3 not in LANGUAGES:
            raise InputError(
                f"BM25 has no stop words and stemmer for language {iso3!r}; "
                f"known: {', '.join(sorted(LANGUAGES))}"
            )
        stopwords, stemmer = LANGUAGES[iso3]
        return cls(stopwords, stemmer)

    def _kwargs(self) -> dict[str, Any]:
        return {
            "stopwords": self.stopwords or [],
            "stemmer": _stemmer(self.stemmer) if self.stemmer else None,
            "show_progress": False,
        }

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms, in order (repeated terms repeated)."""
        import bm25s

        if not texts:
            return []
        return bm25s.tokenize(list(texts), return_ids=False, **self._kwargs())

    def tokenize_ids(self, texts: Iterable[str], *, batch_size: int = INDEX_BATCH) -> Any:
        """``bm25s.tokenization.Tokenized`` (term ids and vocabulary), what an index is built on.

        ``texts`` is read ``batch_size`` at a time (an iterator is never held whole), each batch
        tokenised by ``bm25s.tokenize`` as one call over all texts would (a text's terms do not
        depend on the others), its terms numbered in one vocabulary and kept as 4-byte ids
        (:class:`TermIds`), not a Python list per document.

        Example:
            >>> tokenized = ENGLISH.tokenize_ids(iter(["dogs bark", "a dog runs"]), batch_size=1)
            >>> [[tokenized.vocab_words[i] for i in doc] for doc in tokenized.ids]
            [['dog', 'bark'], ['dog', 'run']]
        """
        import bm25s

        vocab: dict[str, int] = {}
        chunks: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        iterator = iter(texts)
        while batch := list(itertools.islice(iterator, batch_size)):
            local = bm25s.tokenize(batch, return_ids=True, **self._kwargs())
            # The batch's own term numbers → the corpus's (sorted: the same ids in every run).
            to_global = np.empty(len(local.vocab), dtype=np.int32)
            for term in sorted(local.vocab):
                to_global[local.vocab[term]] = vocab.setdefault(term, len(vocab))
            sizes = np.fromiter(map(len, local.ids), dtype=np.int64, count=len(local.ids))
            flat = np.fromiter(
                itertools.chain.from_iterable(local.ids), dtype=np.int32, count=int(sizes.sum())
            )
            chunks.append(to_global[flat])
            lengths.append(sizes)
        offsets = np.zeros(sum(len(x) for x in lengths) + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=offsets[1:])
        flat_ids = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)
        return _Tokenized(ids=TermIds(flat_ids, offsets), vocab=vocab)


class TermIds:
    """Every document's term ids, in order, held as one int32 array and its offsets.

    What ``bm25s`` reads while it builds an index (``len`` and iteration, each document a list
    of ints, as ``bm25s.tokenize`` returns them) at 4 bytes per term, where lists of Python
    ints take about 8 more per term and a list object per document.

    Example:
        >>> ids = TermIds(np.array([0, 1, 0, 2], dtype=np.int32), np.array([0, 2, 4]))
        >>> len(ids), list(ids)
        (2, [[0, 1], [0, 2]])
    """

    def __init__(self, flat: np.ndarray, offsets: np.ndarray) -> None:
        self.flat = flat
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __iter__(self) -> Iterator[list[int]]:
        bounds = self.offsets.tolist()
        for start, end in zip(bounds[:-1], bounds[1:]):
            yield self.flat[start:end].tolist()

    @property
    def nbytes(self) -> int:
        """Bytes of the two arrays."""
        return int(self.flat.nbytes + self.offsets.nbytes)


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


@dataclass(frozen=True)
class _Tokenized:
    """``bm25s``'s tokenised-corpus shape (``ids`` and ``vocab``), over :class:`TermIds`."""

    ids: TermIds
    vocab: dict[str, int]

    @property
    def vocab_words(self) -> list[str]:
        """The terms by id."""
        words = [""] * len(self.vocab)
        for word, i in self.vocab.items():
            words[i] = word
        return words


ENGLISH = BM25Analyzer()
"""Stop words ``en``, Snowball ``english``: evaluation's, the listwise first stage's and the
listwise control's analyzer."""


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


class BM25PairScorer:
    """BM25 with statistics fitted on a collection, scoring any ``(query, passage)`` pair.

    ``fit`` counts document frequencies over the unique passages (sorted, so the statistics do
    not depend on their order); ``score_pairs`` then scores a query against any passage in
    ``O(|q| + |d|)``, in float64 — unlike an index lookup, whose cost grows with the collection.

    Example:
        >>> scorer = BM25PairScorer(ENGLISH)
        >>> scorer.fit(["cats purr softly", "dogs bark loudly", "birds sing"])
        >>> scores = scorer.score_pairs(["why do dogs bark"] * 2,
        ...                             ["dogs bark loudly", "cats purr softly"])
        >>> bool(scores[0] > 0 == scores[1])
        True
    """

    def __init__(self, analyzer: BM25Analyzer = ENGLISH, *, k1: float = K1, b: float = B) -> None:
        self.analyzer = analyzer
        self.k1 = k1
        self.b = b
        self._df: Counter[str] = Counter()
        self._n_docs = 0
        self._avgdl = 0.0

    def fit(self, passages: Iterable[str], chunk: int = 4096) -> None:
        """Collection statistics (N, document frequencies, mean length) over unique passages.

        ``passages`` is streamed (repeats allowed: each text counts once) and tokenised
        ``chunk`` new texts at a time; what is held is a 16-byte digest per unique passage and
        the vocabulary's document frequencies. The statistics are sums over the unique
        passages, so they do not depend on the passages' order.
        """
        seen: set[bytes] = set()
        pending: list[str] = []
        self._df = Counter()
        total = 0

        def count(texts: list[str]) -> int:
            n = 0
            for toks in self.analyzer.tokenize(texts):
                self._df.update(set(toks))
                n += len(toks)
            return n

        for text in passages:
            digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
            if digest in seen:
                continue
            seen.add(digest)
            pending.append(text)
            if len(pending) >= chunk:
                total += count(pending)
                pending = []
        if pending:
            total += count(pending)
        if not seen:
            raise InputError("BM25 needs at least one passage to fit its statistics")
        self._n_docs = len(seen)
        # An all-stop-word collection has mean length 0; 1 keeps the formula defined.
        self._avgdl = total / len(seen) or 1.0

    def _idf(self, term: str) -> float:
        df = self._df.get(term, 0)
        return math.log(1 + (self._n_docs - df + 0.5) / (df + 0.5))

    def score_pairs(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """Raw BM25 scores for ``(queries[i], passages[i])`` under the fitted statistics."""
        if self._n_docs == 0:
            raise RuntimeError("BM25PairScorer.fit must be called before score_pairs")
        uq = sorted(set(queries))
        up = sorted(set(passages))
        q_tok = dict(zip(uq, self.analyzer.tokenize(uq)))
        p_tok = {p: Counter(t) for p, t in zip(up, self.analyzer.tokenize(up))}
        p_len = {p: sum(c.values()) for p, c in p_tok.items()}
        out = np.zeros(len(queries), dtype=np.float64)
        for i, (q, p) in enumerate(zip(queries, passages)):
            tf, dl = p_tok[p], p_len[p]
            norm = self.k1 * (1 - self.b + self.b * dl / self._avgdl)
            # Repeated query words count once per occurrence, as in bm25s.get_scores.
            out[i] = sum(
                self._idf(t) * tf[t] / (tf[t] + norm) for t in q_tok[q] if tf.get(t, 0) > 0
            )
        return out
