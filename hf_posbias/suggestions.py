"""Did you mean: the closest known names to a name that resolves nowhere.

One helper for every resolver that can meet a misspelt name (models, rerankers, first stages,
tasks, remedies, configurations, spec keys, flags, verbs), so a typo gets the same hint
everywhere: :func:`suggest`'s text is the tail of the one-line error. Names are compared
without case and without the ``-``/``_`` spelling.

Example:
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
"""Similarity (difflib ratio, 0…1) a known name needs to be suggested."""


def _key(name: str) -> str:
    return name.lower().replace("_", "-")


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
    hits = [by_key[h] for h in difflib.get_close_matches(text, list(by_key), n=n, cutoff=CUTOFF)]
    if not hits and "/" in text:
        tails: dict[str, str] = {}
        for key, candidate in by_key.items():
            tails.setdefault(key.rsplit("/", 1)[-1], candidate)
        tail = text.rsplit("/", 1)[-1]
        hits = [tails[h] for h in difflib.get_close_matches(tail, list(tails), n=n, cutoff=CUTOFF)]
    return [hit for hit in hits if hit != name]


def suggest(name: str, known: Iterable[str], n: int = 1) -> str:
    """`` (did you mean 'x'?)`` for the up to ``n`` known names closest to ``name``, or ``""``:
    the tail of a one-line error."""
    found = closest_names(name, known, n=n)
    return f" (did you mean {' or '.join(map(repr, found))}?)" if found else ""
