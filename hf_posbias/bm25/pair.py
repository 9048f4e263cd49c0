"""BM25 for ``(query, passage)`` pairs: collection statistics fitted once, any pair scored.

Example:
    >>> from hf_posbias.bm25.pair import BM25PairScorer
    >>> scorer = BM25PairScorer()
    >>> scorer.fit(["cats purr softly", "dogs bark loudly", "a dog runs"])
    >>> pairs = scorer.score_pairs(["dogs bark"] * 2, ["dogs bark loudly", "cats purr softly"])
    >>> [round(float(s), 3) for s in pairs]
    [0.549, 0.0]
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from hf_posbias.bm25.analyzer import ENGLISH, K1, B, BM25Analyzer
from hf_posbias.errors import InputError


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
