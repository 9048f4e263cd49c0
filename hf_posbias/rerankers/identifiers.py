"""Passage identifiers of a listwise prompt: labels, the single-token check, permutation strings.

A listwise prompt labels its k passages ``[A]``…``[T]`` (``letters``, as FIRST and RankZephyr's
alpha prompt do) or ``[1]``…``[20]`` (``numbers``, RankZephyr's default). FIRST scoring reads the
logits of the first generated token after ``[`` over the k identifier tokens, which only works
when each identifier is exactly one token right after ``[``: for SmolLM2's tokenizer ``"1"``–``"9"``
are one token but ``"10"``–``"20"`` are two, while ``"A"``–``"T"`` are one each.
:func:`identifier_token_ids` checks this once, at load, and names every identifier that fails.

A generated permutation ``"[C] > [A] > …"`` is parsed by :func:`parse_permutation`: unknown and
repeated identifiers are dropped, and those the model never wrote are appended **in input
order** — the rank_llm convention, and itself a source of position bias, so every appended
identifier is counted.

Example:
    >>> format_permutation([2, 0, 1])
    '[C] > [A] > [B]'
    >>> p = parse_permutation("[C] > [A]", 3)
    >>> p.order, p.appended
    ([2, 0, 1], 1)
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.settings import flag_name

STYLES: tuple[str, ...] = ("letters", "numbers")
"""Identifier styles: ``letters`` ([A]…[Z], at most 26 passages) or ``numbers`` ([1]…[k])."""

OPEN = "["
"""The token after which the first identifier is read (FIRST scoring appends it to the prompt)."""

_IDENT = re.compile(r"\[\s*([A-Za-z]|\d+)\s*\]")


def _check_style(style: str) -> None:
    if style not in STYLES:
        raise InputError(f"unknown identifier style {style!r}: choose {' or '.join(STYLES)}")


def identifier_labels(k: int, style: str = "letters") -> list[str]:
    """The k identifier labels, in input order.

    Example:
        >>> identifier_labels(3, "numbers")
        ['1', '2', '3']
    """
    _check_style(style)
    if k < 1:
        raise InputError(f"a window needs at least one passage, got {k}")
    if style == "letters":
        if k > 26:
            raise InputError(
                f"letter identifiers label at most 26 passages, got a window of {k}: "
                f"use a window of at most 26 ({flag_name('window')}) or "
                f"{flag_name('identifiers')} numbers"
            )
        return list(string.ascii_uppercase[:k])
    return [str(i + 1) for i in range(k)]


def identifier_token_ids(tokenizer: Any, k: int, style: str = "letters") -> list[int]:
    """Token ids of the k identifiers as the model would write them right after ``[``.

    Raises :class:`InputError` naming every identifier that is not exactly one token after
    ``[`` (FIRST scoring reads one token), with the other style as the way out.

    Example:
        >>> from hf_posbias.testing import build_bpe_tokenizer
        >>> ids = identifier_token_ids(build_bpe_tokenizer(), 20)
        >>> len(set(ids))
        20
    """
    labels = identifier_labels(k, style)
    open_ids = tokenizer.encode(OPEN, add_special_tokens=False)
    if len(open_ids) != 1:
        raise InputError(f"the tokenizer splits {OPEN!r} into {len(open_ids)} tokens")
    ids: list[int] = []
    bad: list[str] = []
    for label in labels:
        # The identifier must be one token both on its own and right after "[" (no merge).
        alone = tokenizer.encode(label, add_special_tokens=False)
        after = tokenizer.encode(OPEN + label, add_special_tokens=False)
        if len(alone) != 1 or after != open_ids + alone:
            bad.append(label)
        else:
            ids.append(alone[0])
    if bad:
        other = "numbers" if style == "letters" else "letters"
        raise InputError(
            f"identifier(s) {', '.join(bad)} are not single tokens after '[' for this "
            f"tokenizer, so first-token scoring cannot read them: try {flag_name('identifiers')} "
            f"{other}"
        )
    if len(set(ids)) != len(ids):
        raise InputError("two identifiers map to the same token for this tokenizer")
    return ids


def format_permutation(order: Sequence[int], style: str = "letters") -> str:
    """``"[C] > [A] > …"`` for input indices ``order`` (best first).

    Example:
        >>> format_permutation([1, 0], "numbers")
        '[2] > [1]'
    """
    labels = identifier_labels(max(order) + 1 if order else 1, style)
    return " > ".join(f"[{labels[i]}]" for i in order)


@dataclass(frozen=True)
class ParsedPermutation:
    """A permutation read from text: ``order`` lists input indices best first (complete).

    ``appended`` identifiers were missing and added in input order; ``invalid`` were unknown
    (out of range) and ``repeated`` written more than once — both dropped.
    """

    order: list[int]
    appended: int
    invalid: int
    repeated: int


def parse_permutation(text: str, k: int, style: str = "letters") -> ParsedPermutation:
    """Read ``"[C] > [A] > …"`` into input indices; missing ones appended in input order.

    Example:
        >>> parse_permutation("[B] > [B] > [Z] > [1]", 3)
        ParsedPermutation(order=[1, 0, 2], appended=2, invalid=2, repeated=1)
    """
    labels = identifier_labels(k, style)
    index = {label: i for i, label in enumerate(labels)}
    order: list[int] = []
    seen: set[int] = set()
    invalid = repeated = 0
    for match in _IDENT.finditer(text):
        token = match.group(1)
        token = token.upper() if style == "letters" else token.lstrip("0") or "0"
        i = index.get(token)
        if i is None:
            invalid += 1
        elif i in seen:
            repeated += 1
        else:
            seen.add(i)
            order.append(i)
    missing = [i for i in range(k) if i not in seen]
    return ParsedPermutation(order + missing, len(missing), invalid, repeated)
