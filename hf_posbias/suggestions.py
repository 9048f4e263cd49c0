"""Did you mean: the closest known names to a name that resolves nowhere.

Every resolver that can meet a misspelt name (models, rerankers, first stages, tasks, remedies,
configurations, flags, verbs) appends :func:`suggest`'s text to its one-line error, so a typo is
answered with the names the user probably meant.

Example:
    >>> suggest("all-MiniLM-L6-v3", ["all-MiniLM-L6-v2", "bm25", "smollm2-135m"])
    'did you mean all-MiniLM-L6-v2?'
    >>> suggest("smollm2-135n", ["smollm2-135m", "SmolLM2-135M-Instruct", "bm25"])
    'did you mean smollm2-135m or SmolLM2-135M-Instruct?'
    >>> suggest("zzz", ["bm25"])
    ''
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_SUGGESTIONS = 3
"""At most this many names are suggested."""


def closest_names(name: str, known: Iterable[str], n: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to ``n`` names of ``known`` closest to ``name``, best first.

    Names are compared without case; where nothing is close and ``name`` has an organisation
    (``org/model``), the parts after the last ``/`` are compared too, so a misspelt model of one
    organisation still finds its namesake of another.

    Example:
        >>> closest_names("intfloat/e5-smal-v2", ["intfloat/e5-small-v2", "BAAI/bge-m3"])
        ['intfloat/e5-small-v2']
        >>> closest_names("acme/MiniLM-L6-v2", ["all-MiniLM-L6-v2", "BAAI/bge-m3"])
        ['all-MiniLM-L6-v2']
    """
    by_lower: dict[str, str] = {}
    for item in known:
        by_lower.setdefault(str(item).lower(), str(item))
    text = str(name).lower()
    hits = difflib.get_close_matches(text, list(by_lower), n=n, cutoff=0.6)
    if not hits and "/" in text:
        tails: dict[str, str] = {}
        for lower, item in by_lower.items():
            tails.setdefault(lower.rsplit("/", 1)[-1], item)
        tail_hits = difflib.get_close_matches(text.rsplit("/", 1)[-1], list(tails), n=n)
        return [tails[h] for h in tail_hits]
    return [by_lower[h] for h in hits]


def suggest(name: str, known: Iterable[str]) -> str:
    """``"did you mean A or B?"`` for the names of ``known`` closest to ``name``; ``""`` when
    none is close (append it to an error line only when it is not empty).

    Example:
        >>> suggest("--tasks", ["--task", "--model", "--out"])
        'did you mean --task?'
    """
    close = closest_names(name, known)
    return f"did you mean {' or '.join(close)}?" if close else ""
