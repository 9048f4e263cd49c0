"""The listwise prompt (RankZephyr / FIRST shape) and passage truncation to a token budget.

One user message holds the query, the window's passages labelled ``[A]``…``[T]`` and the
instruction to answer ``[] > []``; the system message is RankLLM's. The wording is the
published RankZephyr/FIRST prompt (rank_llm's ``rank_GPT`` mode), so checkpoints trained on it
(FIRST, RankZephyr, DebiasFirst) see the text they were trained on. Brackets inside passages
are rewritten ``[x]`` → ``(x)`` so that a passage cannot contain a fake identifier.

:class:`ListwisePrompt` renders the chat template (or a minimal fallback for tokenizers without
one) and returns token ids: :meth:`~ListwisePrompt.prompt_ids` ends with the assistant turn's
opening, :meth:`~ListwisePrompt.scoring_ids` appends ``[`` so the next token is the first
identifier — the position FIRST reads and the position the training loss reads.

Example:
    >>> from hf_posbias.rerankers.records import Passage
    >>> text = user_message("why?", [Passage("d1", "because [1] so"), Passage("d2", "no")])
    >>> print(text.splitlines()[2])
    [A] because (1) so
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rerankers.identifiers import OPEN, identifier_labels, identifier_token_ids
from hf_posbias.rerankers.records import Passage

SYSTEM_MESSAGE = (
    "You are RankLLM, an intelligent assistant that can rank passages based on their "
    "relevancy to the query."
)
"""RankLLM's system message (RankZephyr, FIRST)."""

_INNER_BRACKETS = re.compile(r"\[(\w{1,3})\]")


def _describe(style: str) -> str:
    return "alphabetical" if style == "letters" else "numerical"


def user_message(query: str, passages: Sequence[Passage], style: str = "letters") -> str:
    """The user turn: prefix, ``[A] passage`` lines, and the answer-format instruction."""
    labels = identifier_labels(len(passages), style)
    num = len(passages)
    example = "[B] > [A]" if style == "letters" else "[2] > [1]"
    lines = [
        f"I will provide you with {num} passages, each indicated by a {_describe(style)} "
        f"identifier []. Rank the passages based on their relevance to the search query: "
        f"{query}.",
        "",
    ]
    for label, passage in zip(labels, passages):
        content = _INNER_BRACKETS.sub(r"(\1)", " ".join(passage.content().split()))
        lines.append(f"[{label}] {content}")
    lines.append(
        f"Search Query: {query}.\nRank the {num} passages above based on their relevance to the "
        "search query. All the passages should be included and listed using identifiers, in "
        f"descending order of relevance. The output format should be [] > [], e.g., {example}, "
        "Only respond with the ranking results, do not say any word or explain."
    )
    return "\n".join(lines)


def messages(
    query: str, passages: Sequence[Passage], style: str = "letters", system: str | None = None
) -> list[dict[str, str]]:
    """Chat messages: RankLLM's system message (unless ``system=""``) and the user turn.

    Example:
        >>> [m["role"] for m in messages("q", [Passage("d", "t")])]
        ['system', 'user']
    """
    system = SYSTEM_MESSAGE if system is None else system
    out = [{"role": "system", "content": system}] if system else []
    out.append({"role": "user", "content": user_message(query, passages, style)})
    return out


def truncate_text(text: str, budget: int, tokenizer: Any = None) -> str:
    """The first ``budget`` tokens of ``text`` (whitespace words when ``tokenizer`` is None).

    The title counts against the budget (the rendered content is cut). Without a tokenizer
    (an HTTP endpoint) the budget is in words, as rank_llm's ``max_passage_words``.

    Example:
        >>> truncate_text("a b c d", 2)
        'a b'
    """
    if tokenizer is None:
        return " ".join(text.split()[:budget])
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) <= budget:
        return text
    return str(tokenizer.decode(ids[:budget])).strip()


@dataclass(eq=False)
class ListwiseMessages:
    """Chat messages of listwise windows: identifier style, system message, passages cut.

    The one home of a listwise prompt's settings, for a local model (:class:`ListwisePrompt`) and
    an HTTP endpoint alike.

    Args:
        tokenizer: cut passages to ``passage_tokens`` of its tokens (``None``: whitespace words,
            as rank_llm's ``max_passage_words``, for an endpoint whose tokenizer is not local).
        style: identifier style (``letters`` or ``numbers``).
        passage_tokens: keep at most this many tokens of each passage (``None``: no cut). The cut
            is made on the passage's own tokens and decoded back to text, as rank_llm cuts words.
        system: system message (``None``: RankLLM's; ``""``: none).

    Example:
        >>> words = ListwiseMessages(passage_tokens=2, system="")
        >>> words.messages("q", [Passage("d", "one two three")])[0]["content"].splitlines()[2]
        '[A] one two'
    """

    tokenizer: Any = None
    _: KW_ONLY
    style: str = "letters"
    passage_tokens: int | None = None
    system: str | None = None

    def __post_init__(self) -> None:
        self._cut: dict[tuple[str, str, str], Passage] = {}

    def describe(self) -> dict[str, Any]:
        """What pins the prompt (for manifests)."""
        return {
            "style": self.style,
            "passage_tokens": self.passage_tokens,
            "system": SYSTEM_MESSAGE if self.system is None else self.system,
        }

    def truncate(self, passage: Passage) -> Passage:
        """``passage`` with its content cut to ``passage_tokens`` tokens (cached per passage)."""
        if self.passage_tokens is None:
            return passage
        key = (passage.doc_id, passage.title, passage.text)
        cached = self._cut.get(key)
        if cached is None:
            cached = Passage(
                passage.doc_id,
                truncate_text(passage.content(), self.passage_tokens, self.tokenizer),
            )
            self._cut[key] = cached
        return cached

    def messages(self, query: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        """Chat messages of one window, passages truncated."""
        cut = [self.truncate(p) for p in passages]
        return messages(query, cut, self.style, self.system)


@dataclass(eq=False)
class ListwisePrompt(ListwiseMessages):
    """Token ids of listwise prompts for one tokenizer, passages cut to ``passage_tokens``.

    Takes :class:`ListwiseMessages`'s arguments; ``tokenizer`` is required: a ``transformers``
    tokenizer (one without a chat template gets the generation package's minimal fallback
    template) that writes ``[`` as one token.

    Example:
        >>> from hf_posbias.testing import build_bpe_tokenizer
        >>> prompt = ListwisePrompt(build_bpe_tokenizer(), passage_tokens=3)
        >>> cut = prompt.truncate(Passage("d", "the quick brown fox jumps over"))
        >>> len(prompt.tokenizer.encode(cut.text))
        3
        >>> ids = prompt.scoring_ids("fox?", [Passage("a", "fox"), Passage("b", "dog")])
        >>> ids[-1] == prompt.open_id
        True
        >>> len(prompt.identifier_ids(3))
        3
    """

    tokenizer: Any = field()  # required here

    def __post_init__(self) -> None:
        super().__post_init__()
        open_ids = self.tokenizer.encode(OPEN, add_special_tokens=False)
        if len(open_ids) != 1:
            raise InputError(f"the tokenizer splits {OPEN!r} into {len(open_ids)} tokens")
        self.open_id: int = open_ids[0]
        self._template = getattr(self.tokenizer, "chat_template", None)
        if not self._template:
            from hf_posbias.generation.backends import FALLBACK_CHAT_TEMPLATE

            self._template = FALLBACK_CHAT_TEMPLATE

    def identifier_ids(self, k: int) -> list[int]:
        """Token ids of the first ``k`` identifiers right after ``[``: where FIRST reads logits
        (:func:`~hf_posbias.rerankers.identifiers.identifier_token_ids`)."""
        return identifier_token_ids(self.tokenizer, k, self.style)

    def prompt_ids(self, query: str, passages: Sequence[Passage]) -> list[int]:
        """Token ids of the rendered chat prompt, ending with the assistant turn's opening."""
        text = self.tokenizer.apply_chat_template(
            self.messages(query, passages),
            chat_template=self._template,
            tokenize=False,
            add_generation_prompt=True,
        )
        # The template already holds any BOS token it wants; do not add a second one.
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def scoring_ids(self, query: str, passages: Sequence[Passage]) -> list[int]:
        """:meth:`prompt_ids` + ``[``: the next token is the first identifier."""
        return self.prompt_ids(query, passages) + [self.open_id]
