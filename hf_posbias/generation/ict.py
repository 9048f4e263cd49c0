"""Inverse Cloze Task (ICT) pseudo-queries: the offline default query generator.

Lee, Chang and Toutanova (2019), "Latent Retrieval for Weakly Supervised Open Domain Question
Answering" (ACL), pre-train a retriever by treating a sentence drawn from a passage as a
pseudo-query whose positive is the passage's *context* — the passage with the sentence removed
(they keep it in 10% of the examples so that lexical matching is still learned a little).

Why it is a faithful stand-in for YHP26's LLM queries here: what the position study needs is a
query whose evidence lies, by construction, in one chosen third of the document. An ICT query
is drawn from a sentence *inside the target segment*, and the context that makes it answerable
(its neighbouring sentences, which share its entities and topic) stays in that same segment,
because we cut the sentence out of the ORIGINAL segment spans: the boundaries do not move and
the evidence stays in its third. It needs no model, is exactly reproducible, and is a published
retrieval pre-training method.

Limits: an ICT query is a declarative sentence, not a question, and it shares vocabulary with its
context (high lexical overlap), so it is easier than a persona query and favours lexical
matching; it reflects the position of the evidence but not the diversity (persona, difficulty,
length) of YHP26's queries. Verification by the reranker panel still applies.

Example:
    >>> from hf_posbias.corpus.documents import prepare_documents
    >>> from hf_posbias.generation.ict import ICTGenerator
    >>> text = " ".join(f"Fact {i} says the river is {i} miles from the town." for i in range(12))
    >>> doc = prepare_documents([{"id": "r", "text": text}])[0][0]
    >>> cand = ICTGenerator(seed=0).generate(doc).candidates[0]
    >>> cand.query in doc.segments[0].text, cand.query in cand.positive
    (True, False)
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from hf_posbias.corpus.documents import Document
from hf_posbias.errors import InputError
from hf_posbias.generation.base import (
    GenerationFailure,
    GenerationResult,
    make_candidate,
    reject_unknown_options,
    stable_seed,
)
from hf_posbias.positions import POSITIONS
from hf_posbias.setting_values import at_least, between
from hf_posbias.settings import check_number

ICT_OPTIONS: tuple[str, ...] = ("seed", "min_words", "max_words", "keep_probability")
"""The options of :class:`ICTGenerator` (``posbias data generate --generator ict``)."""

# Tokens that end with a period without ending a sentence (lower case, final period dropped).
# fmt: off
ABBREVIATIONS: frozenset[str] = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "no", "nos", "vol",
        "vols", "fig", "figs", "ed", "eds", "p", "pp", "ch", "sec", "e.g", "i.e", "etc", "vs",
        "cf", "al", "approx", "ca", "c", "fl", "inc", "ltd", "co", "corp", "jan", "feb", "mar",
        "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "gen", "col", "lt",
        "capt", "sgt", "gov", "sen", "rep", "rev", "hon", "u.s", "u.k", "a.d", "b.c", "n.b",
        "op", "cit", "viz", "est", "dept", "univ",
    }
)
# fmt: on

# A run of terminal punctuation (plus closing quotes/brackets) followed by whitespace, or a
# line break: the candidate sentence boundaries.
_BOUNDARY = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s)|\n")
_ENDS_LIKE_SENTENCE = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")
_INITIALS = re.compile(r"(?:[a-z]\.)+[a-z]")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Split ``text`` into sentence spans ``(start, end)``, whitespace-trimmed.

    A regex splitter: a sentence ends at ``.``/``!``/``?`` (plus closing quotes or brackets)
    followed by whitespace, or at a line break. A period does not end a sentence after a known
    abbreviation (``Dr.``, ``e.g.``, ``U.S.``), after a single-letter initial (``J. R. Smith``),
    or when the next word starts in lower case.

    Example:
        >>> t = "Dr. Smith met J. R. Jones in the U.S. capital. They talked.\\nHeading"
        >>> [t[s:e] for s, e in split_sentences(t)]
        ['Dr. Smith met J. R. Jones in the U.S. capital.', 'They talked.', 'Heading']
    """
    spans: list[tuple[int, int]] = []
    pos = 0

    def add(start: int, end: int) -> None:
        chunk = text[start:end]
        stripped = chunk.strip()
        if stripped:
            offset = start + (len(chunk) - len(chunk.lstrip()))
            spans.append((offset, offset + len(stripped)))

    for match in _BOUNDARY.finditer(text):
        if match.group() == "\n":
            cut = match.start()
        else:
            if (
                match.group().startswith(".")
                and len(match.group().rstrip("\"'\u201d\u2019)]")) == 1
            ):
                before = text[pos : match.start()].split()
                word = before[-1].lstrip("\"'(\u201c\u2018[").lower() if before else ""
                if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                    continue
                if _INITIALS.fullmatch(word):
                    continue
            following = text[match.end() :].lstrip(" \t")
            if following[:1].islower():
                continue
            cut = match.end()
        add(pos, cut)
        pos = cut
    add(pos, len(text))
    return spans


KEEP_PROBABILITY = between(0, 1)
"""The probability of keeping the query sentence in the positive (``--keep-probability``)."""
MIN_WORDS = at_least(1)
"""The fewest words of a query sentence (``--min-words``)."""


@dataclass
class ICTGenerator:
    """Inverse Cloze Task query generator (Lee et al. 2019), deterministic per (doc, position).

    For each position, one eligible sentence lying entirely inside the target segment is drawn
    with an RNG seeded from ``(seed, doc_id, position)`` (SHA-256, so sharding, resumption and
    document order never change the output). It becomes the query and is removed from the
    positive, except with probability ``keep_probability``. Eligible: at least ``min_words``
    words (and at most ``max_words``), ends like a sentence (skips headings and list lines), and
    leaves at least ``min_words`` words in the target segment once removed.

    Positions without an eligible sentence are skipped (``no_eligible_sentence``); a document
    with no eligible sentence anywhere is excluded (:class:`GenerationFailure`).

    Example:
        >>> ICTGenerator(seed=7).params()
        {'method': 'ict', 'seed': 7, 'min_words': 6, 'max_words': None, 'keep_probability': 0.0}
    """

    seed: int = 0
    min_words: int = 6
    max_words: int | None = None
    keep_probability: float = 0.0
    name: str = "ict"

    def __post_init__(self) -> None:
        check_number("keep_probability", float(self.keep_probability), KEEP_PROBABILITY)
        check_number("min_words", int(self.min_words), MIN_WORDS)
        if self.max_words is not None and int(self.max_words) < int(self.min_words):
            raise InputError(
                f"max_words ({self.max_words}) must be >= min_words ({self.min_words})"
            )

    def params(self) -> dict[str, Any]:
        """Everything that changes the output (pinned in the stage manifest)."""
        return {
            "method": self.name,
            "seed": int(self.seed),
            "min_words": int(self.min_words),
            "max_words": None if self.max_words is None else int(self.max_words),
            "keep_probability": float(self.keep_probability),
        }

    def _eligible(self, text: str, sentence: tuple[int, int], segment_words: int) -> bool:
        words = len(text[sentence[0] : sentence[1]].split())
        if words < self.min_words or (self.max_words is not None and words > self.max_words):
            return False
        if not _ENDS_LIKE_SENTENCE.search(text[sentence[0] : sentence[1]]):
            return False
        return segment_words - words >= self.min_words

    def generate(self, document: Document) -> GenerationResult:
        """One ICT candidate per position of ``document`` (see the class docstring)."""
        positions = tuple(s.position for s in document.segments)
        if positions != POSITIONS:
            raise GenerationFailure(
                "unsegmented_document", f"{document.id}: segments {list(positions)}"
            )
        text = document.text
        sentences = split_sentences(text)
        result = GenerationResult()
        for seg in document.segments:
            segment_words = len(seg.text.split())
            eligible = [
                s
                for s in sentences
                if s[0] >= seg.start and s[1] <= seg.end and self._eligible(text, s, segment_words)
            ]
            if not eligible:
                result.skip("no_eligible_sentence")
                continue
            rng = random.Random(stable_seed("ict", self.seed, document.id, seg.position))
            start, end = eligible[rng.randrange(len(eligible))]
            keep = rng.random() < self.keep_probability
            cut_start, cut_end = (start, start) if keep else _removal_span(text, start, end, seg)
            segments = [s.text for s in document.segments]
            segments[seg.index] = text[seg.start : cut_start] + text[cut_end : seg.end]
            result.candidates.append(
                make_candidate(
                    document,
                    seg.position,
                    text[start:end],
                    segments,
                    generator=self.name,
                    meta={
                        "method": "ict",
                        "sentence_start": start,
                        "sentence_end": end,
                        "removed_start": cut_start,
                        "removed_end": cut_end,
                        "kept": keep,
                        "eligible_sentences": len(eligible),
                    },
                )
            )
        if not result.candidates:
            raise GenerationFailure("no_eligible_sentence", document.id)
        return result


def build_ict_generator(**options: Any) -> ICTGenerator:
    """Build the ``"ict"`` generator from keyword options; an unknown option is an error.

    Example:
        >>> build_ict_generator(seed=3, min_words=4).params()["min_words"]
        4
    """
    return ICTGenerator(**reject_unknown_options(options, ICT_OPTIONS, "ict"))


def _removal_span(text: str, start: int, end: int, seg: Any) -> tuple[int, int]:
    """The span to cut for sentence ``[start, end)``: the sentence plus one side's spacing.

    Taking the spaces after it (or, at the end of a line, the spaces before it) avoids leaving a
    double space; a sentence alone on its line takes one line break with it. The span never
    leaves the segment, so segment boundaries do not move.
    """
    after = end
    while after < seg.end and text[after] in " \t":
        after += 1
    if after > end:
        return start, after
    before = start
    while before > seg.start and text[before - 1] in " \t":
        before -= 1
    if before < start:
        return before, end
    if end < seg.end and text[end] == "\n":
        return start, end + 1
    return start, end
