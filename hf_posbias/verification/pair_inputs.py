"""Cross-encoder inputs assembled from texts tokenized once, exactly as the tokenizer pairs them.

A reranker panel scores many pairs that share texts: every query meets three segments, and in
a benchmark's Stage 2 every question meets a thousand passages that other questions meet too.
A tokenizer called on pairs tokenizes both texts of every pair again. :class:`PairEncoder`
tokenizes each distinct text once (without special tokens) and builds each pair's
``input_ids`` (and ``token_type_ids`` where the tokenizer returns them) itself, with the
tokenizer's own pair template and its ``truncation="longest_first"`` lengths
(:func:`longest_first_lengths`, the rule of the Rust ``tokenizers`` library behind every fast
tokenizer). The tests compare the ids with the tokenizer's on edge cases (either text longer
than the budget, both, odd budgets, left truncation).

Only fast tokenizers with a fixed pair template qualify (:func:`pair_encoder_for` returns
``None`` otherwise, and the member falls back to ``CrossEncoder.predict``).

Example:
    >>> longest_first_lengths(3, 10, 8)    # only the longer text is cut
    (3, 5)
    >>> longest_first_lengths(10, 12, 9)   # both are cut, the second keeps the odd token
    (4, 5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_PROBE = ("alpha beta gamma", "delta epsilon")
"""Two short texts tokenized as a pair once, to read the tokenizer's pair template off."""

CACHE_LIMIT = 200_000
"""Distinct texts kept tokenized per encoder; the cache is emptied when it grows past this."""


def longest_first_lengths(n1: int, n2: int, budget: int) -> tuple[int, int]:
    """Lengths that ``truncation="longest_first"`` keeps of two texts of ``n1``/``n2`` tokens.

    ``budget`` is the maximum length minus the pair template's special tokens. The shorter text
    is kept whole when the longer one can absorb the cut; otherwise both are cut to half the
    budget (the second text keeps the odd token).

    Example:
        >>> longest_first_lengths(4, 4, 8), longest_first_lengths(9, 2, 8)
        ((4, 4), (6, 2))
    """
    if n1 + n2 <= budget:
        return n1, n2
    swap = n1 > n2
    short, long_ = (n2, n1) if swap else (n1, n2)
    long_ = short if short > budget else max(short, budget - short)
    if short + long_ > budget:
        short = budget // 2
        long_ = short + budget % 2
    return (long_, short) if swap else (short, long_)


@dataclass(frozen=True)
class PairTemplate:
    """Where a tokenizer puts its special tokens around a pair ``A``, ``B``.

    ``prefix + A + middle + B + suffix``; ``*_types`` are the token type ids of each part
    (``a_type``/``b_type`` for every token of the texts).
    """

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    prefix_types: tuple[int, ...]
    middle_types: tuple[int, ...]
    suffix_types: tuple[int, ...]
    a_type: int
    b_type: int

    @property
    def n_special(self) -> int:
        """Special tokens the template adds to a pair."""
        return len(self.prefix) + len(self.middle) + len(self.suffix)


def _read_template(tokenizer: Any) -> PairTemplate | None:
    """The pair template of ``tokenizer``, read off one probe pair (``None``: not a template)."""
    a = tokenizer(_PROBE[0], add_special_tokens=False)["input_ids"]
    b = tokenizer(_PROBE[1], add_special_tokens=False)["input_ids"]
    out = tokenizer(*_PROBE, return_token_type_ids=True)
    ids, types = (
        list(out["input_ids"]),
        list(out.get("token_type_ids") or [0] * len(out["input_ids"])),
    )
    n_special = len(ids) - len(a) - len(b)
    if not a or not b or n_special != tokenizer.num_special_tokens_to_add(pair=True):
        return None
    for i in range(len(ids) - len(a) + 1):
        if ids[i : i + len(a)] != a:
            continue
        j0 = i + len(a)
        for j in range(j0, len(ids) - len(b) + 1):
            if ids[j : j + len(b)] != b:
                continue
            end = j + len(b)
            a_types, b_types = set(types[i:j0]), set(types[j:end])
            if len(a_types) != 1 or len(b_types) != 1:
                return None
            return PairTemplate(
                tuple(ids[:i]),
                tuple(ids[j0:j]),
                tuple(ids[end:]),
                tuple(types[:i]),
                tuple(types[j0:j]),
                tuple(types[end:]),
                a_types.pop(),
                b_types.pop(),
            )
    return None


class PairEncoder:
    """Build a fast tokenizer's pair inputs from texts each tokenized once.

    Args:
        tokenizer: a fast (``tokenizers``-backed) Hugging Face tokenizer.
        template: its pair template (:func:`pair_encoder_for` reads it).
        max_length: the truncation length (``None``: the tokenizer's ``model_max_length``).

    Example:
        >>> from hf_posbias.testing import build_wordpiece_tokenizer
        >>> tok = build_wordpiece_tokenizer()
        >>> encoder = pair_encoder_for(tok, max_length=8)
        >>> ids, _ = encoder.encode(["position bias"], ["a long passage about position bias"])[0]
        >>> ids == tok([("position bias", "a long passage about position bias")],
        ...            truncation="longest_first", max_length=8)["input_ids"][0]
        True
        >>> tok.convert_ids_to_tokens(ids)
        ['[CLS]', 'position', 'bias', '[SEP]', 'a', 'long', 'p', '[SEP]']
    """

    def __init__(self, tokenizer: Any, template: PairTemplate, max_length: int | None) -> None:
        self.tokenizer = tokenizer
        self.template = template
        self.max_length = int(max_length if max_length is not None else tokenizer.model_max_length)
        self.budget = self.max_length - template.n_special
        self.left = getattr(tokenizer, "truncation_side", "right") == "left"
        self.with_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
        self._cache: dict[str, list[int]] = {}

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids (no special tokens) of each text; each distinct text is tokenized once."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            if len(self._cache) + len(missing) > CACHE_LIMIT:
                self._cache.clear()
            encoded = self.tokenizer(missing, add_special_tokens=False, verbose=False)["input_ids"]
            self._cache.update(zip(missing, encoded))
        cache = self._cache
        return [cache[t] for t in texts]

    def pair(self, a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        """``(input_ids, token_type_ids)`` of the pair ``a``, ``b`` (token ids of the texts)."""
        t = self.template
        n1, n2 = longest_first_lengths(len(a), len(b), self.budget)
        if n1 < len(a):
            a = a[len(a) - n1 :] if self.left else a[:n1]
        if n2 < len(b):
            b = b[len(b) - n2 :] if self.left else b[:n2]
        ids = [*t.prefix, *a, *t.middle, *b, *t.suffix]
        if not self.with_types:
            return ids, []
        types = [
            *t.prefix_types,
            *([t.a_type] * len(a)),
            *t.middle_types,
            *([t.b_type] * len(b)),
            *t.suffix_types,
        ]
        return ids, types

    def encode(
        self, firsts: Sequence[str], seconds: Sequence[str]
    ) -> list[tuple[list[int], list[int]]]:
        """Inputs of the pairs ``(firsts[i], seconds[i])`` without padding, in order."""
        a_ids = self.token_ids(firsts)
        b_ids = self.token_ids(seconds)
        return [self.pair(a, b) for a, b in zip(a_ids, b_ids)]


def pair_encoder_for(tokenizer: Any, max_length: int | None = None) -> PairEncoder | None:
    """A :class:`PairEncoder` for ``tokenizer``, or ``None`` where its pairs cannot be rebuilt
    exactly (a slow tokenizer, a pair template that is not prefix/A/middle/B/suffix, a budget
    smaller than the special tokens).

    Example:
        >>> from hf_posbias.testing import build_wordpiece_tokenizer
        >>> encoder = pair_encoder_for(build_wordpiece_tokenizer())
        >>> encoder.template.n_special, pair_encoder_for(build_wordpiece_tokenizer(), 3)
        (3, None)
    """
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        return None
    template = _read_template(tokenizer)
    if template is None:
        return None
    encoder = PairEncoder(tokenizer, template, max_length)
    return encoder if encoder.budget > 0 else None
