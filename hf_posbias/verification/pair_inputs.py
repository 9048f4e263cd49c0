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

import numpy as np

_PROBE = ("alpha beta gamma", "delta epsilon")
"""Two short texts tokenized as a pair once, to read the tokenizer's pair template off."""

CACHE_LIMIT = 50_000
"""Distinct texts kept tokenized per encoder (int32: 200 MB for 50,000 texts of 1,000 tokens);
the cache is emptied when it would grow past this."""


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
        >>> ids, _ = encoder.pair("position bias", "a long passage about position bias")
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
        self.pad_left = getattr(tokenizer, "padding_side", "right") == "left"
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.pad_type = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)
        self.with_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
        self._cache: dict[str, np.ndarray] = {}

    def token_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids (no special tokens) of each text; each distinct text is tokenized once and
        kept (int32) for later calls, up to :data:`CACHE_LIMIT` texts."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            if len(self._cache) + len(missing) > CACHE_LIMIT:
                self._cache.clear()
            encoded = self.tokenizer(missing, add_special_tokens=False, verbose=False)["input_ids"]
            self._cache.update((t, np.asarray(e, dtype=np.int32)) for t, e in zip(missing, encoded))
        cache = self._cache
        return [cache[t] for t in texts]

    def cut(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The parts of two texts' ids that ``longest_first`` truncation keeps (views)."""
        n1, n2 = longest_first_lengths(len(a), len(b), self.budget)
        if n1 < len(a):
            a = a[len(a) - n1 :] if self.left else a[:n1]
        if n2 < len(b):
            b = b[len(b) - n2 :] if self.left else b[:n2]
        return a, b

    def encode(
        self, firsts: Sequence[str], seconds: Sequence[str]
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """The kept ids of the pairs ``(firsts[i], seconds[i])``, in order (:meth:`batch` adds
        the special tokens and the padding)."""
        return [self.cut(a, b) for a, b in zip(self.token_ids(firsts), self.token_ids(seconds))]

    def length(self, pair: tuple[np.ndarray, np.ndarray]) -> int:
        """Tokens of an encoded pair, special tokens included."""
        return self.template.n_special + len(pair[0]) + len(pair[1])

    def batch(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
        """Padded ``input_ids``, ``attention_mask`` (and ``token_type_ids`` where the tokenizer
        returns them) of encoded pairs, as the tokenizer pads a batch (int64 arrays)."""
        t = self.template
        lengths = [self.length(p) for p in pairs]
        width = max(lengths, default=0)
        ids = np.full((len(pairs), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(pairs), width), dtype=np.int64)
        types = np.full((len(pairs), width), self.pad_type, dtype=np.int64)
        for row, ((a, b), n) in enumerate(zip(pairs, lengths)):
            at = width - n if self.pad_left else 0
            mask[row, at : at + n] = 1
            for part, part_types in (
                (t.prefix, t.prefix_types),
                (a, t.a_type),
                (t.middle, t.middle_types),
                (b, t.b_type),
                (t.suffix, t.suffix_types),
            ):
                ids[row, at : at + len(part)] = part
                types[row, at : at + len(part)] = part_types
                at += len(part)
        out = {"input_ids": ids, "attention_mask": mask}
        if self.with_types:
            out["token_type_ids"] = types
        return out

    def pair(self, first: str, second: str) -> tuple[list[int], list[int]]:
        """``(input_ids, token_type_ids)`` of one pair, unpadded (``[]`` types where the
        tokenizer returns none): what ``tokenizer([(first, second)], truncation=...)`` gives."""
        features = self.batch(self.encode([first], [second]))
        types = features.get("token_type_ids")
        return features["input_ids"][0].tolist(), [] if types is None else types[0].tolist()


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
