"""Did you mean: the closest known name to a mistyped one, for every error that lists names.

One helper for every resolver (flags, verbs, tasks, remedies, configurations, spec keys), so a
typo gets the same hint everywhere. The comparison ignores case and the ``-``/``_`` spelling.

Example:
    >>> suggest("uniforn", ["begin", "middle", "end", "uniform"])
    " (did you mean 'uniform'?)"
    >>> suggest("--tasks", ["--task", "--out", "--model"])
    " (did you mean '--task'?)"
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


def closest(name: str, known: Iterable[str], *, n: int = 1) -> list[str]:
    """The up to ``n`` known names closest to ``name`` (best first; none close enough: ``[]``).

    Example:
        >>> closest("max_step", ["max_steps", "seed", "warmup_steps"])
        ['max_steps']
    """
    by_key: dict[str, str] = {}
    for candidate in known:
        by_key.setdefault(_key(str(candidate)), str(candidate))
    matches = difflib.get_close_matches(_key(name), list(by_key), n=n, cutoff=CUTOFF)
    return [by_key[m] for m in matches if by_key[m] != name]


def suggest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to ``name``, or ``""``: the tail of a
    one-line error."""
    found = closest(name, known)
    return f" (did you mean {found[0]!r}?)" if found else ""
