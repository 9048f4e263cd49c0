"""The pure parts of Z25's FineWeb-PosQ recipe: passages, chunks, Algorithm 1, FAQ replies, filters.

Everything here is deterministic and model-free, so each filter can be tested against a
hand-worked example; :mod:`hf_posbias.construction.build` runs them as stages.

- :func:`cut_passages` — records → passages of ``min_words``–``max_words`` words. A record in
  range is one passage; a longer one is, with ``cut_long``, cut at paragraph breaks into
  consecutive windows (greedy: paragraphs are added while the window stays ≤ ``max_words``; a
  window is kept when it reaches ``min_words``); everything else is counted, never silently lost.
- :func:`split_recursive` — a recursive character splitter (paragraph, line, sentence, word
  separators, as LangChain's ``RecursiveCharacterTextSplitter``) measuring length in words;
  returns character spans.
- :func:`position_tag` — Algorithm 1 on character offsets.
- :func:`parse_faq` — the FAQ JSON list ``{question, answer, type}``.
- :func:`stage1_reranker_keep`, :func:`downsample`, :func:`stage1_judge_keep`,
  :func:`prelabel_positive`, :func:`false_negative` — the filters.

Example:
    >>> position_tag(0, 10, 30), position_tag(10, 20, 30), position_tag(20, 30, 30)
    ('begin', 'middle', 'end')
    >>> text = "one two three. four five six.\\n\\nseven eight nine."
    >>> [text[a:b] for a, b in split_recursive(text, 4)]
    ['one two three.', 'four five six.', 'seven eight nine.']
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.positions import POSITIONS

SEPARATORS: tuple[str, ...] = ("\n\n", "\n", ". ", " ")
"""The recursive splitter's separators, coarsest first (a separator stays with the text
before it)."""

FAQ_TYPES: tuple[str, ...] = ("simple", "complicated")


def word_count(text: str) -> int:
    """Whitespace-separated words.

    Example:
        >>> word_count(" a  b\\nc ")
        3
    """
    return len(text.split())


@dataclass
class DropCounts:
    """Counted drops of one step, by reason (nothing is dropped silently)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, reason: str, n: int = 1) -> None:
        """Count ``n`` items dropped for ``reason``."""
        if n:
            self.counts[reason] = self.counts.get(reason, 0) + n


# --------------------------------------------------------------------------- passages


def _paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Non-blank lines/paragraphs of ``text`` as stripped character spans."""
    return [(m.start(), m.end()) for m in re.finditer(r"[^\n]*\S[^\n]*", text)]


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _paragraph_windows(text: str, min_words: int, max_words: int, drops: DropCounts) -> list[str]:
    """Consecutive windows of whole paragraphs of ``min_words``–``max_words`` words (greedy)."""
    windows: list[str] = []
    window: list[tuple[int, int]] = []
    words = 0

    def flush() -> None:
        if window and words >= min_words:
            windows.append(text[window[0][0] : window[-1][1]].strip())
        elif window:
            drops.add(f"leftover shorter than {min_words} words")
        window.clear()

    for start, end in _paragraph_spans(text):
        n_par = word_count(text[start:end])
        if n_par > max_words:
            flush()
            words = 0
            drops.add(f"paragraph longer than {max_words} words")
            continue
        if words + n_par > max_words:
            flush()
            words = 0
        window.append((start, end))
        words += n_par
    flush()
    return windows


def cut_passages(
    records: Iterable[Mapping[str, Any]],
    *,
    min_words: int = 500,
    max_words: int = 1024,
    cut_long: bool = False,
    drops: DropCounts | None = None,
) -> list[dict[str, Any]]:
    """Passages of ``min_words``–``max_words`` words from corpus records ``{id, title, text}``.

    A record in range is one passage (id unchanged). With ``cut_long``, a longer record is cut
    at line/paragraph breaks into consecutive windows of whole paragraphs (ids ``<id>#p<k>``);
    a paragraph longer than ``max_words`` ends the window before it and is itself skipped.
    Out-of-range records and leftovers are counted in ``drops``. A repeated record id is a
    one-line error.

    Example:
        >>> recs = [{"id": "a", "text": "w " * 5}, {"id": "b", "text": "w " * 2},
        ...         {"id": "c", "text": "x " * 3 + "\\n" + "y " * 3 + "\\n" + "z " * 2}]
        >>> drops = DropCounts()
        >>> [p["id"] for p in cut_passages(recs, min_words=3, max_words=6, cut_long=True,
        ...                               drops=drops)]
        ['a', 'c#p0']
        >>> drops.counts
        {'passage shorter than 3 words': 1, 'leftover shorter than 3 words': 1}
    """
    drops = drops if drops is not None else DropCounts()
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for record in records:
        doc_id = str(record["id"])
        if doc_id in seen:
            raise InputError(f"corpus has duplicate id {doc_id!r}: ids must be unique")
        seen.add(doc_id)
        text, title = str(record.get("text") or ""), str(record.get("title") or "")
        n = word_count(text)
        if min_words <= n <= max_words:
            out.append({"id": doc_id, "title": title, "text": text.strip(), "source_id": doc_id})
            continue
        if n < min_words:
            drops.add(f"passage shorter than {min_words} words")
            continue
        if not cut_long:
            drops.add(f"passage longer than {max_words} words")
            continue
        for k, body in enumerate(_paragraph_windows(text, min_words, max_words, drops)):
            out.append({"id": f"{doc_id}#p{k}", "title": title, "text": body, "source_id": doc_id})
    return out


# --------------------------------------------------------------------------- chunks


def _pieces(text: str, start: int, end: int, sep: str) -> list[tuple[int, int]]:
    """``text[start:end]`` split after each ``sep`` (the separator stays with its piece)."""
    out, cursor = [], start
    while cursor < end:
        hit = text.find(sep, cursor, end)
        stop = end if hit < 0 else hit + len(sep)
        out.append((cursor, stop))
        cursor = stop
    return out


def split_recursive(
    text: str,
    chunk_words: int,
    separators: Sequence[str] = SEPARATORS,
    start: int = 0,
    end: int | None = None,
) -> list[tuple[int, int]]:
    """Character spans of chunks of at most ``chunk_words`` words covering ``text[start:end]``.

    The coarsest separator present splits the text; consecutive pieces are merged while the
    merge stays within ``chunk_words``; a piece still too long is split with the next
    separator. Spans are stripped of surrounding whitespace, in text order, non-overlapping.

    Example:
        >>> text = "a b c d e f g"
        >>> [text[s:e] for s, e in split_recursive(text, 3)]
        ['a b c', 'd e f', 'g']
    """
    if chunk_words < 1:
        raise InputError(f"chunk size must be >= 1 word, got {chunk_words}")
    end = len(text) if end is None else end
    if word_count(text[start:end]) <= chunk_words:
        span = _strip_span(text, start, end)
        return [span] if span[1] > span[0] else []
    level = next((i for i, sep in enumerate(separators) if sep in text[start:end]), None)
    if level is None:  # one word longer than any chunk: keep it whole
        span = _strip_span(text, start, end)
        return [span] if span[1] > span[0] else []
    spans: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for p_start, p_end in _pieces(text, start, end, separators[level]):
        if word_count(text[p_start:p_end]) > chunk_words:
            if current is not None:
                spans.append(current)
                current = None
            spans.extend(
                split_recursive(text, chunk_words, separators[level + 1 :], p_start, p_end)
            )
            continue
        if current is not None and word_count(text[current[0] : p_end]) <= chunk_words:
            current = (current[0], p_end)
        else:
            if current is not None:
                spans.append(current)
            current = (p_start, p_end)
    if current is not None:
        spans.append(current)
    stripped = [_strip_span(text, s, e) for s, e in spans]
    return [(s, e) for s, e in stripped if e > s]


# --------------------------------------------------------------------------- Algorithm 1


def position_tag(start: int, end: int, length: int) -> str:
    """Algorithm 1 of Z25 on character offsets: ``third = length // 3``; ``begin`` when the
    chunk ends before ``third``, ``end`` when it starts at or after ``2 * third``, else
    ``middle``.

    ``end`` is exclusive (the chunk's last character is ``end - 1``), so "ends before third"
    means ``end <= third``.

    Example:
        >>> position_tag(0, 33, 100), position_tag(0, 34, 100), position_tag(66, 70, 100)
        ('begin', 'middle', 'end')
        >>> position_tag(65, 100, 100)
        'middle'
    """
    if not 0 <= start < end <= length:
        raise ValueError(f"chunk [{start}, {end}) is not inside a passage of {length} characters")
    third = length // 3
    if end <= third:
        return "begin"
    if start >= 2 * third:
        return "end"
    return "middle"


TAGGINGS = ("single", "two-tag")
"""Algorithm 1's variants: Z25's one tag per chunk, and the 2025 "Myopic Trap" version's two."""


def position_tags(start: int, end: int, length: int, tagging: str = "single") -> list[str]:
    """The tags of a chunk: ``single``: :func:`position_tag`'s one; ``two-tag`` (the "Myopic
    Trap" version of Algorithm 1): every third the chunk overlaps, so a chunk straddling two
    thirds gets both.

    Example:
        >>> position_tags(0, 40, 100), position_tags(0, 40, 100, "two-tag")
        (['middle'], ['begin', 'middle'])
        >>> position_tags(70, 90, 100, "two-tag")
        ['end']
    """
    if tagging == "single":
        return [position_tag(start, end, length)]
    if tagging != "two-tag":
        raise InputError(f"tagging must be one of {', '.join(TAGGINGS)}, got {tagging!r}")
    position_tag(start, end, length)  # validates the span
    return [p for p, (s, e) in zip(POSITIONS, third_spans(length)) if start < e and end > s]


def third_spans(length: int) -> list[tuple[int, int]]:
    """The begin/middle/end segments Algorithm 1 tags against: ``[0, t)``, ``[t, 2t)``,
    ``[2t, length)`` with ``t = length // 3``.

    Example:
        >>> third_spans(10)
        [(0, 3), (3, 6), (6, 10)]
    """
    third = length // 3
    return [(0, third), (third, 2 * third), (2 * third, length)]


# --------------------------------------------------------------------------- FAQ replies


def faq_schema(max_items: int, max_chars: int = 200) -> dict[str, Any]:
    """The FAQ reply under constrained decoding: ``{"faqs": [{question, answer, type}, …]}``.

    Example:
        >>> faq_schema(3)["properties"]["faqs"]["maxItems"]
        3
    """
    text = {"type": "string", "minLength": 1, "maxLength": max_chars}
    return {
        "title": "faq",
        "type": "object",
        "properties": {
            "faqs": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_items,
                "items": {
                    "type": "object",
                    "properties": {
                        "question": text,
                        "answer": text,
                        "type": {"type": "string", "enum": list(FAQ_TYPES)},
                    },
                    "required": ["question", "answer", "type"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["faqs"],
        "additionalProperties": False,
    }


def _faq_list(reply: str) -> list[Any] | None:
    """The FAQ items of a reply: ``{"faqs": [...]}`` (the constrained schema) or a top-level
    JSON list (Zeng et al.'s printed format, App. B.2), whichever the reply's first bracket
    opens."""
    import json

    from hf_posbias.generation.llm import extract_json_object

    start, brace = reply.find("["), reply.find("{")
    if start >= 0 and (brace < 0 or start < brace):
        try:
            value = json.loads(reply[start : reply.rindex("]") + 1])
        except ValueError:
            value = None
        if isinstance(value, list):
            return value
    try:
        items = extract_json_object(reply).get("faqs")
    except ValueError:
        return None
    return items if isinstance(items, list) else None


def parse_faq(reply: str) -> list[dict[str, str]] | None:
    """The usable ``{question, answer, type}`` items of a FAQ reply; ``None`` when the reply
    holds no FAQ list at all. Items without a question ending in ``?``-free text are kept;
    items with an empty question or an unknown type are left out (the caller counts them).

    Example:
        >>> parse_faq('{"faqs": [{"question": "Why?", "answer": "A.", "type": "simple"},'
        ...           ' {"question": "", "answer": "B", "type": "simple"}]}')
        [{'question': 'Why?', 'answer': 'A.', 'type': 'simple'}]
        >>> parse_faq("no json") is None
        True

    Free-form decoding (``--no-constrained``, as Zeng et al. decoded) may answer in the
    paper's printed format, a top-level JSON list of items; it is read the same way:

        >>> parse_faq('FAQ: [{"question": "Why?", "answer": "A.", "type": "simple"}]')
        [{'question': 'Why?', 'answer': 'A.', 'type': 'simple'}]
    """
    items = _faq_list(reply)
    if items is None:
        return None
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        question = " ".join(str(item.get("question") or "").split())
        kind = str(item.get("type") or "").strip().lower()
        if question and kind in FAQ_TYPES:
            out.append(
                {
                    "question": question,
                    "answer": str(item.get("answer") or "").strip(),
                    "type": kind,
                }
            )
    return out


# --------------------------------------------------------------------------- filters


def stage1_reranker_keep(member_scores: Sequence[Sequence[float]], label: str) -> bool:
    """Stage 1, rerankers: kept only if EVERY member scores the labelled segment strictly above
    both others (``member_scores[r]`` = member r's begin/middle/end scores).

    Example:
        >>> stage1_reranker_keep([[0.9, 0.2, 0.1], [0.5, 0.4, 0.4]], "begin")
        True
        >>> stage1_reranker_keep([[0.9, 0.2, 0.1], [0.4, 0.4, 0.1]], "begin")  # a tie
        False
    """
    t = POSITIONS.index(label)
    return all(
        all(scores[t] > scores[j] for j in range(len(scores)) if j != t) for scores in member_scores
    )


def downsample(items: Sequence[Mapping[str, Any]], seed: int) -> list[Mapping[str, Any]]:
    """Every position downsampled to the smallest one's count (seeded; order kept).

    Example:
        >>> rows = [{"id": i, "tag": t} for i, t in enumerate("bbbmme")]
        >>> rows = [dict(r, tag={"b": "begin", "m": "middle", "e": "end"}[r["tag"]]) for r in rows]
        >>> sorted(r["tag"] for r in downsample(rows, seed=1))
        ['begin', 'end', 'middle']
    """
    by_tag: dict[str, list[int]] = {p: [] for p in POSITIONS}
    for i, item in enumerate(items):
        by_tag[item["tag"]].append(i)
    smallest = min(len(v) for v in by_tag.values())
    keep: set[int] = set()
    for pos in POSITIONS:
        keep.update(random.Random(f"{seed}|{pos}").sample(by_tag[pos], smallest))
    return [item for i, item in enumerate(items) if i in keep]


def stage1_judge_keep(
    scores: Sequence[int | None], label: str, min_score: int = 3, min_gap: int = 1
) -> bool:
    """Stage 1, LLM judge: the labelled segment scores ≥ ``min_score`` and at least ``min_gap``
    above every other segment. A missing score (reply outside 0–4) drops the question.

    Example:
        >>> stage1_judge_keep([1, 4, 3], "middle"), stage1_judge_keep([4, 4, 3], "middle")
        (True, False)
        >>> stage1_judge_keep([2, 0, 0], "begin"), stage1_judge_keep([4, None, 0], "begin")
        (False, False)
    """
    if any(s is None for s in scores):
        return False
    t = POSITIONS.index(label)
    target = int(scores[t])  # type: ignore[arg-type]
    others = [int(s) for j, s in enumerate(scores) if j != t]  # type: ignore[arg-type]
    return target >= min_score and all(target - o >= min_gap for o in others)


def prelabel_positive(normalized: Sequence[float], threshold: float = 0.5) -> bool:
    """Stage 2, rerankers: a candidate passage is pre-labelled positive when a strict majority
    of members give a normalised score ≥ ``threshold``.

    Example:
        >>> prelabel_positive([0.6, 0.5, 0.1]), prelabel_positive([0.6, 0.4, 0.1])
        (True, False)
    """
    votes = sum(float(s) >= threshold for s in normalized)
    return 2 * votes > len(normalized)


def false_negative(scores: Sequence[int | None], min_score: int = 3, min_votes: int = 2) -> bool:
    """Stage 2, judges: a candidate is a false negative when at least ``min_votes`` judges score
    it ≥ ``min_score`` (a missing score is no vote).

    Example:
        >>> false_negative([3, 4, 0]), false_negative([3, None, 2]), false_negative([4, 4])
        (True, False, True)
    """
    return sum(s is not None and s >= min_score for s in scores) >= min_votes


def tiny_sample(
    items: Sequence[Mapping[str, Any]], per_position: int, seed: int
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """Up to ``per_position`` items per position (seeded, order kept), and a line for each
    position that has fewer.

    Example:
        >>> rows = [{"tag": "begin"}, {"tag": "middle"}, {"tag": "middle"}, {"tag": "end"}]
        >>> kept, short = tiny_sample(rows, 1, seed=0)
        >>> len(kept), short
        (3, [])
        >>> tiny_sample(rows, 2, seed=0)[1]
        ['tiny: position begin has 1 question(s), fewer than 2', 'tiny: position end has 1 question(s), fewer than 2']
    """  # noqa: E501
    by_tag: dict[str, list[int]] = {p: [] for p in POSITIONS}
    for i, item in enumerate(items):
        by_tag[item["tag"]].append(i)
    keep: set[int] = set()
    short = []
    for pos in POSITIONS:
        ids = by_tag[pos]
        if len(ids) < per_position:
            short.append(
                f"tiny: position {pos} has {len(ids)} question(s), fewer than {per_position}"
            )
        keep.update(random.Random(f"{seed}|tiny|{pos}").sample(ids, min(per_position, len(ids))))
    return [item for i, item in enumerate(items) if i in keep], short


def position_counts(items: Iterable[Mapping[str, Any]], stage: str) -> dict[str, Any]:
    """One ``construction.json`` row: ``{stage, begin, middle, end}``.

    Example:
        >>> position_counts([{"tag": "end"}], "faq")
        {'stage': 'faq', 'begin': 0, 'middle': 0, 'end': 1}
    """
    row: dict[str, Any] = {"stage": stage, **{p: 0 for p in POSITIONS}}
    for item in items:
        row[item["tag"]] += 1
    return row
