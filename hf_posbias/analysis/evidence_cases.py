"""The evidence-moving case: a (query, document, evidence) pair and the document variants with its
evidence at ``n`` insertion points (sentence boundaries, else word boundaries), for
:mod:`hf_posbias.analysis.evidence_moving`.

Example:
    >>> doc = "Alpha one. Beta two. Gamma three. Delta four. Epsilon five."
    >>> EvidenceCase.from_text("what is gamma?", doc, "Gamma three.").base
    'Alpha one. Beta two. Delta four. Epsilon five.'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hf_posbias.errors import InputError

if TYPE_CHECKING:
    pass


DEFAULT_SLOTS = 10
"""YHP26 moves the evidence to ten insertion points p1…p10."""


def slot_names(n: int) -> tuple[str, ...]:
    """``('p1', …, 'pn')``.

    Example:
        >>> slot_names(3)
        ('p1', 'p2', 'p3')
    """
    return tuple(f"p{i + 1}" for i in range(n))


def sentence_boundaries(text: str) -> list[int]:
    """Offsets where the evidence may be inserted: 0, every sentence start, ``len(text)``.

    Sentences are the ICT generator's (:func:`hf_posbias.generation.ict.split_sentences`: no
    cut after an abbreviation, an initial, or before a lower-case word).

    Example:
        >>> sentence_boundaries("One. Two? Three e.g. four.\\nFive")
        [0, 5, 10, 27, 31]
        >>> sentence_boundaries("Dr. Smith came. He left.")
        [0, 16, 24]
    """
    from hf_posbias.generation.ict import split_sentences

    return sorted({0, len(text), *(start for start, _ in split_sentences(text))})


def word_boundaries(text: str) -> list[int]:
    """Offsets of 0, every word start after whitespace, and ``len(text)``.

    Example:
        >>> word_boundaries("Short text here.")
        [0, 6, 11, 16]
    """
    cuts = {0, len(text)}
    cuts.update(m.start() for m in re.finditer(r"(?<=\s)\S", text))
    return sorted(cuts)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _choose_slots(boundaries: Sequence[int], length: int, n: int) -> list[int]:
    """Pick ``n`` distinct increasing boundaries closest to the ideal points ``i·length/(n−1)``.

    Dynamic programming over (slot, boundary) minimises the total distance to the ideal points,
    so a cluster of short sentences cannot push later slots off the end (a greedy pick can).
    """
    m = len(boundaries)
    targets = [i * length / (n - 1) for i in range(n)]
    inf = float("inf")
    cost = [[inf] * m for _ in range(n)]
    back = [[-1] * m for _ in range(n)]
    for j in range(m):
        cost[0][j] = abs(boundaries[j] - targets[0])
    for i in range(1, n):
        best, best_j = inf, -1
        for j in range(m):
            # best over j' < j of cost[i-1][j'], maintained as a running minimum
            if j > 0 and cost[i - 1][j - 1] < best:
                best, best_j = cost[i - 1][j - 1], j - 1
            if best_j >= 0:
                cost[i][j] = best + abs(boundaries[j] - targets[i])
                back[i][j] = best_j
    j = min(range(m), key=lambda k: cost[n - 1][k])
    chosen = [j]
    for i in range(n - 1, 0, -1):
        j = back[i][j]
        chosen.append(j)
    return [boundaries[k] for k in reversed(chosen)]


@dataclass(frozen=True)
class Placement:
    """One document variant: the evidence inserted at ``offset`` of the base document.

    ``text[evidence_start:evidence_end]`` is the evidence; removing it and the single space that
    separates it from its neighbour gives back the base document exactly.
    """

    position: str
    offset: int
    text: str
    evidence_start: int
    evidence_end: int


@dataclass(frozen=True)
class EvidenceCase:
    """A query, the document without its evidence (``base``) and the evidence text.

    Args:
        query: the query text.
        base: the document with the evidence removed.
        evidence: the evidence passage (moved as one block).
        boundaries: allowed insertion offsets into ``base``; ``None`` = detected sentence starts
            (datasets that ship sentence lists, like SciFact, pass exact ones).
        id: an identifier for reports.
    """

    query: str
    base: str
    evidence: str
    boundaries: tuple[int, ...] | None = None
    id: str = ""

    def __post_init__(self) -> None:
        if not self.query.strip():
            raise InputError("query is empty")
        if not self.evidence.strip():
            raise InputError("evidence is empty")
        if not self.base.strip():
            raise InputError("document is empty once the evidence is removed")

    @classmethod
    def from_span(
        cls, query: str, document: str, start: int, end: int, id: str = ""
    ) -> EvidenceCase:
        """Cut ``document[start:end]`` out as the evidence.

        Surrounding whitespace inside the span is trimmed; a span that splits a word is an error.

        Example:
            >>> c = EvidenceCase.from_span("q", "First one. Second one. Third one.", 11, 22)
            >>> c.evidence, c.base
            ('Second one.', 'First one. Third one.')
        """
        if not (0 <= start < end <= len(document)):
            raise InputError(
                f"evidence span [{start}, {end}) is outside the document ({len(document)} chars)"
            )
        while start < end and document[start].isspace():
            start += 1
        while end > start and document[end - 1].isspace():
            end -= 1
        if start == end:
            raise InputError("evidence is empty")
        if (
            start > 0 and _is_word_char(document[start - 1]) and _is_word_char(document[start])
        ) or (
            end < len(document)
            and _is_word_char(document[end - 1])
            and _is_word_char(document[end])
        ):
            raise InputError(f"evidence span [{start}, {end}) splits a word")
        left, right = document[:start], document[end:]
        if left.strip() and right.strip():
            # Keep the original separator (a paragraph break stays a paragraph break).
            gap = left[len(left.rstrip()) :] or right[: len(right) - len(right.lstrip())] or " "
            base = left.rstrip() + gap + right.lstrip()
        else:
            base = (left + right).strip()
        return cls(query=query, base=base.strip(), evidence=document[start:end], id=id)

    @classmethod
    def from_text(cls, query: str, document: str, evidence: str, id: str = "") -> EvidenceCase:
        """Find ``evidence`` in ``document`` (first occurrence) and cut it out.

        The match tolerates differences in whitespace (a pasted sentence may have lost a line
        break); an evidence text that does not occur raises "evidence not found in the document".
        """
        if not query.strip():
            raise InputError("query is empty")
        needle = evidence.strip()
        if not needle:
            raise InputError("evidence is empty")
        start = document.find(needle)
        if start >= 0:
            return cls.from_span(query, document, start, start + len(needle), id=id)
        pattern = r"\s+".join(re.escape(word) for word in needle.split())
        match = re.search(pattern, document)
        if match is None:
            raise InputError("evidence not found in the document")
        return cls.from_span(query, document, match.start(), match.end(), id=id)

    def insertion_points(self) -> list[int]:
        """All allowed insertion offsets into :attr:`base` (sorted, distinct)."""
        if self.boundaries is not None:
            points = sorted({0, len(self.base), *self.boundaries})
            return [p for p in points if 0 <= p <= len(self.base)]
        return sentence_boundaries(self.base)

    def slot_unit(self, n: int = DEFAULT_SLOTS) -> str:
        """``"sentence"`` when the document has ``n`` sentence boundaries, else ``"word"``.

        Raises:
            InputError: "document too short for n slots" when even the word boundaries are fewer
                than ``n``.

        Example:
            >>> EvidenceCase("q", "One two three four. Five six.", "Ev.").slot_unit(5)
            'word'
        """
        if n < 2:
            raise InputError(f"need at least 2 slots, got {n}")
        if len(self.insertion_points()) >= n:
            return "sentence"
        words = len(word_boundaries(self.base))
        if words >= n:
            return "word"
        raise InputError(
            f"document too short for {n} slots ({words} word boundaries including start and end)"
        )

    def slots(self, n: int = DEFAULT_SLOTS) -> list[int]:
        """The ``n`` insertion offsets used for ``p1…pn`` (p1 = start, pn = end).

        Sentence boundaries where the document has ``n`` of them, word boundaries otherwise
        (:meth:`slot_unit`).

        Raises:
            InputError: "document too short for n slots" when fewer than ``n`` boundaries exist.
        """
        unit = self.slot_unit(n)
        points = self.insertion_points() if unit == "sentence" else word_boundaries(self.base)
        return _choose_slots(points, len(self.base), n)

    def placements(self, n: int = DEFAULT_SLOTS) -> list[Placement]:
        """The ``n`` document variants, evidence at ``p1…pn``."""
        evidence, base = self.evidence.strip(), self.base
        variants = []
        for name, offset in zip(slot_names(n), self.slots(n)):
            if offset >= len(base):
                text, start = base + " " + evidence, len(base) + 1
            else:
                # Boundaries are sentence starts: base[:offset] already ends with whitespace.
                text, start = base[:offset] + evidence + " " + base[offset:], offset
            variants.append(Placement(name, offset, text, start, start + len(evidence)))
        return variants
