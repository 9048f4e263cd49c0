"""One LLM judge, several prompts: the segment audit's yes/no and the 0–4 relevance grade.

A :class:`JudgePrompt` says everything one kind of judgement needs: the chat messages for a
(query, passage) pair, the JSON schema its reply is decoded under, the token budgets with and
without the schema, and the parser that turns a reply into a verdict (``None`` when the reply
holds none: counted by the caller, never guessed). :func:`judge_pairs` sends any prompt's
requests through a chat backend (:func:`ask_judge`, the one place a judge talks to a model) and
parses them. Two prompts exist:

- :data:`SEGMENT_AUDIT` — YHP26's yes/no audit (``verification.audit``);
- :data:`RELEVANCE_0_4` — Z25's 0–4 relevance grade (prompt B.3), used by the benchmark
  builder's Stage 1 judge and its three-judge false-negative vote
  (``evaluation.construction``).

Example:
    >>> grade = RELEVANCE_0_4.parse
    >>> grade('{"score": 3}'), grade("Score: 4"), grade("7")
    (3, 4, None)
    >>> SEGMENT_AUDIT.parse('{"answer":"no"}'), SEGMENT_AUDIT.messages("q?", "p")[1]["role"]
    (False, 'user')
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_posbias.generation.backends import complete_all, reply_decoding
from hf_posbias.generation.base import stable_seed

if TYPE_CHECKING:
    from hf_posbias.generation.backends import ChatBackend

_YES_NO = re.compile(r"\b(yes|no)\b", re.I)
_DIGIT = re.compile(r"-?\d+")


def parse_yes_no(text: str) -> bool | None:
    """``True``/``False`` for the first yes/no word of a reply, ``None`` when there is none.

    Example:
        >>> parse_yes_no("Yes."), parse_yes_no(" no, it cannot"), parse_yes_no("maybe")
        (True, False, None)
    """
    match = _YES_NO.search(text or "")
    return None if match is None else match.group(1).lower() == "yes"


def _json_field(text: str, key: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is a JSON object (``value`` = its ``key``), else
    ``(False, None)``."""
    try:
        reply = json.loads(text)
    except (TypeError, ValueError):
        return False, None
    if isinstance(reply, dict):
        return True, reply.get(key)
    return False, None


def parse_judge_reply(text: str) -> bool | None:
    """The yes/no judge's answer: the ``answer`` of a :data:`SEGMENT_AUDIT` reply, else the first
    yes/no word (a free-form reply, or an endpoint that fell back to free-form).

    Example:
        >>> parse_judge_reply('{"answer":"yes"}'), parse_judge_reply('{"answer":"maybe"}')
        (True, None)
        >>> parse_judge_reply("No."), parse_judge_reply("")
        (False, None)
    """
    is_json, answer = _json_field(text, "answer")
    if is_json:
        return {"yes": True, "no": False}.get(str(answer or "").strip().lower())
    return parse_yes_no(text)


def parse_relevance_score(text: str, top: int = 4) -> int | None:
    """The 0–``top`` grade of a relevance reply: the ``score`` of a JSON reply, else the first
    integer of a free-form one; ``None`` for anything outside ``0..top``.

    Example:
        >>> parse_relevance_score('{"score": 0}'), parse_relevance_score("I'd say 2/4")
        (0, 2)
        >>> parse_relevance_score('{"score": 5}'), parse_relevance_score("n/a")
        (None, None)
    """
    is_json, value = _json_field(text, "score")
    if not is_json:
        match = _DIGIT.search(text or "")
        value = None if match is None else match.group(0)
    try:
        score = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return score if 0 <= score <= top and str(value).strip().lstrip("-").isdigit() else None


@dataclass(frozen=True)
class JudgePrompt:
    """One kind of judgement: messages, reply schema, token budgets and reply parser."""

    name: str
    """Names the judgement; also seeds its requests (stable across reruns and batch sizes)."""
    system: str
    template: str
    """User message with ``{query}`` and ``{segment}``."""
    schema: dict[str, Any]
    parse: Callable[[str], Any]
    constrained_max_tokens: int
    free_form_max_tokens: int

    def messages(self, query: str, segment: str) -> list[dict[str, str]]:
        """The judge's chat messages for one (query, passage) pair."""
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.template.format(segment=segment, query=query)},
        ]

    def max_tokens(self, constrained: bool) -> int:
        """The reply's token budget with or without the schema."""
        return self.constrained_max_tokens if constrained else self.free_form_max_tokens


SEGMENT_AUDIT = JudgePrompt(
    name="audit",
    system="You are a careful annotator of question answering data.",
    template=(
        "Passage:\n{segment}\n\nQuestion: {query}\n\n"
        "Can the question be answered using only the information in this passage? "
        "Reply with exactly one word: yes or no."
    ),
    schema={
        "title": "segment audit",
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["answer"],
        "additionalProperties": False,
    },
    parse=parse_judge_reply,
    # {"answer":"yes"} is 5–8 tokens in common tokenizers; free-form is one word (YHP26).
    constrained_max_tokens=16,
    free_form_max_tokens=4,
)
"""YHP26's segment audit: can the question be answered from this segment alone (yes/no)."""

RELEVANCE_0_4 = JudgePrompt(
    name="relevance",
    system="You are a careful annotator of search relevance.",
    template=(
        "Passage:\n{segment}\n\nQuestion: {query}\n\n"
        "How well does the passage answer the question? Grade it on this scale:\n"
        "0 = unrelated to the question\n"
        "1 = on the topic, but does not help answer it\n"
        "2 = partly answers it, important information is missing\n"
        "3 = answers it, with minor gaps\n"
        "4 = fully and directly answers it\n"
        'Reply with JSON: {{"score": <0-4>}}.'
    ),
    schema={
        "title": "relevance grade",
        "type": "object",
        "properties": {"score": {"type": "integer", "enum": [0, 1, 2, 3, 4]}},
        "required": ["score"],
        "additionalProperties": False,
    },
    parse=parse_relevance_score,
    constrained_max_tokens=12,
    free_form_max_tokens=8,
)
"""Z25's 0–4 relevance judge (prompt B.3): Stage 1's positional check and Stage 2's votes."""


@dataclass
class JudgeVerdicts:
    """Parsed verdicts of a batch of judge requests, with what could not be parsed."""

    values: list[Any]
    """One verdict per request; ``None`` when the reply held none or the call failed."""
    unparsed: int = 0
    failed: int = 0
    decodings: dict[str, int] = field(default_factory=dict)


def ask_judge(
    backend: ChatBackend,
    requests: Sequence[list[dict[str, str]]],
    *,
    seed: int,
    temperature: float,
    max_tokens: int,
    batch_size: int,
    progress: bool = True,
    json_schema: dict[str, Any] | None = None,
    tag: str = "audit",
) -> list[str | Exception]:
    """Send judge requests through ``backend`` in batches; one reply (or error) each.

    The one place a judge talks to a chat model: each request gets its own seed
    (``stable_seed(tag, seed, i)``), stable across reruns and batch sizes; with ``json_schema``
    every reply is decoded under it.
    """
    return complete_all(
        backend,
        requests,
        [stable_seed(tag, seed, i) for i in range(len(requests))],
        chunk=batch_size,
        desc=f"judge ({tag})",
        unit="call",
        progress=progress,
        temperature=temperature,
        max_tokens=max_tokens,
        json_schema=json_schema,
    )


def judge_pairs(
    backend: ChatBackend,
    prompt: JudgePrompt,
    pairs: Sequence[tuple[str, str]],
    *,
    seed: int = 42,
    temperature: float = 0.0,
    batch_size: int = 8,
    constrained: bool = True,
    progress: bool = True,
) -> JudgeVerdicts:
    """Judge every ``(query, passage)`` pair with ``prompt``; failures and unparsed replies are
    counted and give ``None``.

    Example:
        >>> class Fixed:  # a backend that always answers the same
        ...     def complete_many(self, batch, **kw):
        ...         return ['{"score": 3}'] * len(batch)
        >>> verdicts = judge_pairs(Fixed(), RELEVANCE_0_4, [("q", "p"), ("q", "r")],
        ...                        progress=False)
        >>> verdicts.values, verdicts.unparsed
        ([3, 3], 0)
    """
    replies = ask_judge(
        backend,
        [prompt.messages(q, p) for q, p in pairs],
        seed=seed,
        temperature=temperature,
        max_tokens=prompt.max_tokens(constrained),
        batch_size=batch_size,
        progress=progress,
        json_schema=prompt.schema if constrained else None,
        tag=prompt.name,
    )
    verdicts = JudgeVerdicts(values=[])
    for reply in replies:
        if isinstance(reply, Exception):
            verdicts.failed += 1
            verdicts.values.append(None)
            continue
        decoding = reply_decoding(reply)
        verdicts.decodings[decoding] = verdicts.decodings.get(decoding, 0) + 1
        value = prompt.parse(reply)
        verdicts.unparsed += value is None
        verdicts.values.append(value)
    return verdicts
