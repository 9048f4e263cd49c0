"""Typed records shared by the listwise modules: passages, window rankings, reranked lists.

Example:
    >>> w = WindowRanking(order=[1, 0], scores=[0.2, 0.9])
    >>> w.ranked([Passage("d1", "x"), Passage("d2", "y")])
    ['d2', 'd1']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
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
class WindowCounts:
    """What windows of a reranker did, added up: ``windows`` ranked, ``windows_with_fallback``
    (at least one generated identifier left out and ``appended`` in input order), identifiers
    ``appended``, identifiers ``cut`` (left out of an endpoint's top-n logprobs), and
    ``identifiers`` ranked in all.

    Example:
        >>> counts = WindowCounts()
        >>> counts.add(WindowCounts.of_window(WindowRanking([1, 0], [0.0, 1.0], appended=1), 2))
        >>> counts.windows_with_fallback, counts.as_row()
        (1, {'windows': 1, 'windows_with_fallback': 1, 'appended': 1, 'cut': 0, 'identifiers': 2})
    """

    windows: int = 0
    windows_with_fallback: int = 0
    appended: int = 0
    cut: int = 0
    identifiers: int = 0

    @classmethod
    def of_window(cls, answer: WindowRanking, size: int) -> WindowCounts:
        """The counts of one window of ``size`` passages ranked as ``answer``."""
        return cls(1, int(answer.appended > 0), answer.appended, answer.cut, size)

    def add(self, other: WindowCounts) -> None:
        """Add ``other``'s counts (a window's, a list's) to these."""
        for f in fields(WindowCounts):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_row(self) -> dict[str, int]:
        """The counts by name, in declaration order (the listwise run rows' columns)."""
        return {f.name: getattr(self, f.name) for f in fields(WindowCounts)}


@dataclass
class RerankedList(WindowCounts):
    """A reranked candidate list: ``ranking`` (doc ids, best first) and per-doc ``scores``.

    ``scores[d]`` is the score the last window that held ``d`` gave it (raw window scores are
    comparable only within one window; the ranking is what counts). The
    :class:`WindowCounts` add up the windows this list took.
    """

    ranking: list[str] = field(kw_only=True)
    scores: dict[str, float] = field(kw_only=True)

    def ranked_scores(self) -> list[float]:
        """``scores`` in ranking order."""
        return [self.scores[d] for d in self.ranking]


@dataclass
class FallbackStats(WindowCounts):
    """Counts of generated identifiers appended in input order (and top-n cuts), over windows."""

    notes: list[str] = field(default_factory=list)

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
