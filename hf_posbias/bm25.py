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
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hf_posbias.errors import InputError, ModelLoadError

BM25_NAMES = frozenset({"bm25", "bm25s", "mteb/baseline-bm25s"})
"""Model arguments that mean BM25."""

K1 = 1.5
B = 0.75
METHOD = "lucene"

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

    def tokenize_ids(self, texts: Sequence[str]) -> Any:
        """``bm25s.tokenization.Tokenized`` (term ids and vocabulary), what an index is built on."""
        import bm25s

        return bm25s.tokenize(list(texts), return_ids=True, **self._kwargs())


ENGLISH = BM25Analyzer()
"""Stop words ``en``, Snowball ``english``: evaluation's, the listwise first stage's and the
listwise control's analyzer."""


class BM25Index:
    """Okapi BM25 (``bm25s``, Lucene variant) over ``texts``, documents addressed by position.

    Example:
        >>> index = BM25Index(["cats purr", "dogs bark", "dogs run"])
        >>> docs, scores = index.retrieve(["barking dog"], 2)
        >>> docs.tolist()
        [[1, 2]]
    """

    def __init__(
        self,
        texts: Sequence[str],
        analyzer: BM25Analyzer = ENGLISH,
        *,
        k1: float = K1,
        b: float = B,
    ) -> None:
        import logging

        import bm25s

        if not texts:
            raise InputError("BM25 needs a non-empty corpus")
        # bm25s logs every index build at DEBUG on its own handler; the run's report says enough.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.analyzer = analyzer
        self.size = len(texts)
        self._bm25 = bm25s.BM25(k1=k1, b=b, delta=0.5, method=METHOD)
        self._bm25.index(analyzer.tokenize_ids(texts), show_progress=False)

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
