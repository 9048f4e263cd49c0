"""Typed records shared by the listwise modules: passages, window rankings, reranked lists.

Example:
    >>> w = WindowRanking(order=[1, 0], scores=[0.2, 0.9])
    >>> w.ranked([Passage("d1", "x"), Passage("d2", "y")])
    ['d2', 'd1']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Passage:
    """One candidate passage: its document id, text and (optional) title."""

    doc_id: str
    text: str
    title: str = ""

    def content(self) -> str:
        """What the reranker reads: ``"Title: … Content: …"`` when titled (rank_llm's form)."""
        if self.title.strip():
            return f"Title: {self.title.strip()} Content: {self.text.strip()}"
        return self.text.strip()


@dataclass
class WindowRanking:
    """A reranker's answer for one window of passages.

    ``order`` lists input indices best first (every index exactly once); ``scores[i]`` is the
    reranker's score of the passage at input index ``i`` (identifier logit, pointwise score, or
    ``k − rank`` for a generated permutation); ``appended`` counts identifiers a generated
    permutation left out (added in input order); ``cut`` counts identifiers an endpoint's top-n
    logprobs left out (scored −inf).
    """

    order: list[int]
    scores: list[float]
    appended: int = 0
    cut: int = 0

    def ranked(self, passages: Sequence[Passage]) -> list[str]:
        """The window's document ids, best first."""
        return [passages[i].doc_id for i in self.order]


def order_by_score(scores: Sequence[float], doc_ids: Sequence[str]) -> list[int]:
    """Input indices sorted by score (descending), ties broken by document id — never by input
    position, so a tie cannot add a position effect.

    Example:
        >>> order_by_score([1.0, 2.0, 1.0], ["b", "c", "a"])
        [1, 2, 0]
    """
    return sorted(range(len(scores)), key=lambda i: (-float(scores[i]), str(doc_ids[i])))


@dataclass
class RerankedList:
    """A reranked candidate list: ``ranking`` (doc ids, best first) and per-doc ``scores``.

    ``scores[d]`` is the score the last window that held ``d`` gave it (raw window scores are
    comparable only within one window; the ranking is what counts). ``windows``, ``appended``
    and ``cut`` add up the windows this list took.
    """

    ranking: list[str]
    scores: dict[str, float]
    windows: int = 0
    windows_with_fallback: int = 0
    appended: int = 0
    cut: int = 0
    identifiers: int = 0

    def ranked_scores(self) -> list[float]:
        """``scores`` in ranking order."""
        return [self.scores[d] for d in self.ranking]


@dataclass
class FallbackStats:
    """Counts of generated identifiers appended in input order (and top-n cuts), over windows."""

    windows: int = 0
    windows_with_fallback: int = 0
    appended: int = 0
    cut: int = 0
    identifiers: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, reranked: RerankedList) -> None:
        """Accumulate one reranked list's counts."""
        self.windows += reranked.windows
        self.windows_with_fallback += reranked.windows_with_fallback
        self.appended += reranked.appended
        self.cut += reranked.cut
        self.identifiers += reranked.identifiers

    @property
    def rate(self) -> float:
        """Share of windows where at least one identifier was appended in input order."""
        return self.windows_with_fallback / self.windows if self.windows else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON form with the rates."""
        return {
            "windows": self.windows,
            "windows_with_fallback": self.windows_with_fallback,
            "fallback_rate": self.rate,
            "appended_identifiers": self.appended,
            "appended_identifier_rate": self.appended / self.identifiers
            if self.identifiers
            else 0.0,
            "topn_cut_identifiers": self.cut,
        }
