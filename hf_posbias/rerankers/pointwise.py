"""The position-free control: a pointwise scorer that reads each passage alone.

``--reranker bm25`` (or any cross-encoder) scores every passage of a list on its own and sorts
by score, ties broken by document id. Passages are scored in document-id order, whatever their
input order, so even batching cannot make the output depend on where a passage sat: the
controlled test of such a reranker must give the same nDCG@10 at every input position — the
check that the harness itself adds no position effect.

BM25 is the package's one BM25 (:class:`hf_posbias.bm25.pair.BM25PairScorer`, the first stage's and
evaluation's stop words and stemmer), fitted once on the task corpus; cross-encoders load through
:func:`hf_posbias.modeling.loaders.load_cross_encoder`.

Example:
    >>> from hf_posbias.rerankers.records import Passage
    >>> reranker = bm25_reranker(["cats purr", "dogs bark loudly", "birds sing"])
    >>> ps = [Passage("1", "cats purr"), Passage("2", "dogs bark loudly")]
    >>> reranker.rank_windows([("why do dogs bark", ps)])[0].order
    [1, 0]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hf_posbias.rerankers.base import Window
from hf_posbias.rerankers.records import Passage, WindowRanking, order_by_score

ScoreFn = Callable[[str, Sequence[Passage]], Sequence[float]]
"""``(query, passages) -> one score per passage`` (higher is better)."""


class PointwiseReranker:
    """Scores each passage alone; ``window_size=None`` (a whole list at once)."""

    window_size: int | None = None

    def __init__(self, score: ScoreFn, *, name: str, details: dict[str, Any] | None = None):
        self._score = score
        self.name = name
        self._details = details or {}

    def describe(self) -> dict[str, Any]:
        """What pins this reranker's output."""
        return {"name": self.name, "kind": "pointwise", "scorer": self._details}

    def score(self, query: str, passages: Sequence[Passage]) -> list[float]:
        """One score per passage (input order), each passage scored alone."""
        return [float(s) for s in self._score(query, passages)]

    def rank_windows(self, windows: Sequence[Window]) -> list[WindowRanking]:
        """Score each window's passages in document-id order; sort by score, ties by id."""
        out = []
        for query, passages in windows:
            canonical = sorted(range(len(passages)), key=lambda i: passages[i].doc_id)
            values = list(self._score(query, [passages[i] for i in canonical]))
            scores = [0.0] * len(passages)
            for value, i in zip(values, canonical):
                scores[i] = float(value)
            out.append(WindowRanking(order_by_score(scores, [p.doc_id for p in passages]), scores))
        return out


def bm25_reranker(corpus_texts: Iterable[str]) -> PointwiseReranker:
    """BM25 with collection statistics from ``corpus_texts`` (the task corpus)."""
    from hf_posbias.bm25.analyzer import ENGLISH, K1, B
    from hf_posbias.bm25.pair import BM25PairScorer

    scorer = BM25PairScorer(ENGLISH)
    scorer.fit(corpus_texts)

    def score(query: str, passages: Sequence[Passage]) -> Sequence[float]:
        return scorer.score_pairs([query] * len(passages), [p.content() for p in passages])

    details = {"name": "bm25", "kind": "bm25", "k1": K1, "b": B, **vars(ENGLISH)}
    return PointwiseReranker(score, name="bm25", details=details)


def cross_encoder_reranker(
    name: str, *, device: str | None = None, batch_size: int = 32
) -> PointwiseReranker:
    """Any sentence-transformers cross-encoder as a pointwise reranker."""
    from hf_posbias.modeling.loaders import load_cross_encoder

    model = load_cross_encoder(name, device=device)

    def score(query: str, passages: Sequence[Passage]) -> Sequence[float]:
        pairs = [(query, p.content()) for p in passages]
        return [float(s) for s in model.predict(pairs, batch_size=batch_size)]

    return PointwiseReranker(score, name=name, details={"cross_encoder": name})
