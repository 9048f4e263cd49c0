"""Did you mean: the closest known names to a name that resolves nowhere.

One helper for every resolver that can meet a misspelt name (models, rerankers, first stages,
tasks, remedies, configurations, spec keys, flags, verbs), so a typo gets the same hint
everywhere: :func:`suggest`'s text is the tail of the one-line error. Names are compared
without case and without the ``-``/``_`` spelling.

Names are ranked by how many slips separate them (:func:`edit_distance`: a letter added,
dropped or changed, or two neighbouring letters swapped), the same length breaking a tie, so
``modle`` is ``model`` (two letters swapped), not ``mode`` (one letter more); difflib's
similarity finds the farther names worth naming (a suffix left out) and orders what is left.

Example:
    >>> suggest("modle", ["mode", "model", "models"])
    " (did you mean 'model'?)"
    >>> suggest("uniforn", ["begin", "middle", "end", "uniform"])
    " (did you mean 'uniform'?)"
    >>> suggest("--tasks", ["--task", "--out", "--model"])
    " (did you mean '--task'?)"
    >>> suggest("smollm2-135n", ["smollm2-135m", "SmolLM2-135M-Instruct", "bm25"], n=3)
    " (did you mean 'smollm2-135m' or 'SmolLM2-135M-Instruct'?)"
    >>> suggest("zzz", ["begin", "end"])
    ''
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6
"""Similarity (difflib ratio, 0…1) a known name needs to be suggested when more than
:func:`slips_allowed` separate it from the name given."""


def _key(name: str) -> str:
    return name.lower().replace("_", "-")


def edit_distance(a: str, b: str) -> int:
    """The slips that turn ``a`` into ``b``: letters added, dropped or changed, and two
    neighbouring letters swapped, each one slip (Damerau's distance, the optimal-alignment form).

    Example:
        >>> edit_distance("modle", "model"), edit_distance("modle", "mode"), edit_distance("", "ab")
        (1, 1, 2)
    """
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, letter in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, other in enumerate(b, 1):
            row[j] = min(
                previous[j] + 1,  # dropped
                row[j - 1] + 1,  # added
                previous[j - 1] + (letter != other),  # changed
            )
            if i > 1 and j > 1 and letter == b[j - 2] and a[i - 2] == other:
                row[j] = min(row[j], previous2[j - 2] + 1)  # swapped
        previous2, previous = previous, row
    return previous[-1]


def slips_allowed(name: str) -> int:
    """How many slips a name of this length may carry and still be suggested on distance alone:
    one per four characters, at least one (none for a name of one or two characters: every
    short name is one slip from it)."""
    return max(1, len(name) // 4) if len(name) > 2 else 0


def _ranked(text: str, keys: list[str], n: int) -> list[str]:
    """Up to ``n`` of ``keys`` close to ``text``, best first: the fewest slips, then the same
    length, then difflib's similarity."""
    limit = slips_allowed(text)
    close = set(difflib.get_close_matches(text, keys, n=max(n, 10), cutoff=CUTOFF))
    slips = {}
    for key in keys:
        if key in close or abs(len(key) - len(text)) <= limit:
            slips[key] = edit_distance(text, key)
    found = [key for key, d in slips.items() if key in close or d <= limit]

    def rank(key: str) -> tuple[int, int, float]:
        similarity = difflib.SequenceMatcher(None, text, key).ratio()
        return slips[key], abs(len(key) - len(text)), -similarity

    return sorted(found, key=rank)[:n]


def closest_names(name: str, known: Iterable[str], n: int = 1) -> list[str]:
    """Up to ``n`` names of ``known`` closest to ``name``, best first (none close: ``[]``).

    Where nothing is close and ``name`` has an organisation (``org/model``), the parts after the
    last ``/`` are compared too, so a misspelt model of one organisation still finds its
    namesake of another.

    Example:
        >>> closest_names("max_step", ["max_steps", "seed", "warmup_steps"])
        ['max_steps']
        >>> closest_names("intfloat/e5-smal-v2", ["intfloat/e5-small-v2", "BAAI/bge-m3"])
        ['intfloat/e5-small-v2']
        >>> closest_names("acme/MiniLM-L6-v2", ["all-MiniLM-L6-v2", "BAAI/bge-m3"])
        ['all-MiniLM-L6-v2']
    """
    by_key: dict[str, str] = {}
    for candidate in known:
        by_key.setdefault(_key(str(candidate)), str(candidate))
    text = _key(str(name))
    hits = [by_key[h] for h in _ranked(text, list(by_key), n)]
    if not hits and "/" in text:
        tails: dict[str, str] = {}
        for key, candidate in by_key.items():
            tails.setdefault(key.rsplit("/", 1)[-1], candidate)
        tail = text.rsplit("/", 1)[-1]
        hits = [tails[h] for h in _ranked(tail, list(tails), n)]
    return [hit for hit in hits if hit != name]


def suggest(name: str, known: Iterable[str], n: int = 1) -> str:
    """`` (did you mean 'x'?)`` for the up to ``n`` known names closest to ``name``, or ``""``:
    the tail of a one-line error."""
    found = closest_names(name, known, n=n)
    return f" (did you mean {' or '.join(map(repr, found))}?)" if found else ""
