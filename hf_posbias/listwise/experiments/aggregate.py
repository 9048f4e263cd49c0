"""Rank aggregation over shuffled inputs (PermSC-style, inference stage): Borda and Kemeny.

Reranking m shuffles of the same list and aggregating the m rankings averages the input-order
effect out (Tang et al. 2024, PermSC, which takes the Kendall-tau central ranking). Two
aggregators, both deterministic (ties by document id):

- :func:`borda` — each ranking gives a document ``n − 1 − rank`` points; sort by total points.
- :func:`kemeny_local_search` — the Kemeny objective (total Kendall-tau distance to the m
  rankings) minimised by local search: start from Borda, move one document to another slot while
  that lowers the distance, until no single move does. Exact Kemeny is NP-hard; local search
  from Borda is the usual practical choice and never does worse than its start.

Example:
    >>> rankings = [["a", "b", "c"], ["b", "a", "c"], ["a", "c", "b"]]
    >>> borda(rankings), kemeny_local_search(rankings)
    (['a', 'b', 'c'], ['a', 'b', 'c'])
    >>> kendall_distance(["a", "b", "c"], rankings)
    2
"""

from __future__ import annotations

from collections.abc import Sequence

from hf_posbias.errors import InputError


def _check(rankings: Sequence[Sequence[str]]) -> list[str]:
    if not rankings:
        raise InputError("aggregation needs at least one ranking")
    items = sorted(rankings[0])
    for ranking in rankings:
        if sorted(ranking) != items or len(set(ranking)) != len(ranking):
            raise InputError("every ranking to aggregate must order the same documents once each")
    return items


def borda(rankings: Sequence[Sequence[str]]) -> list[str]:
    """Borda count: ``n − 1 − rank`` points per ranking; ties by document id."""
    items = _check(rankings)
    n = len(items)
    points = dict.fromkeys(items, 0)
    for ranking in rankings:
        for rank, doc in enumerate(ranking):
            points[doc] += n - 1 - rank
    return sorted(items, key=lambda d: (-points[d], d))


def _preferences(rankings: Sequence[Sequence[str]]) -> dict[str, dict[str, int]]:
    """``w[a][b]`` = number of rankings that put ``a`` ahead of ``b``."""
    w = {a: dict.fromkeys(rankings[0], 0) for a in rankings[0]}
    for ranking in rankings:
        for i, a in enumerate(ranking):
            for b in ranking[i + 1 :]:
                w[a][b] += 1
    return w


def kendall_distance(ranking: Sequence[str], rankings: Sequence[Sequence[str]]) -> int:
    """Total Kendall-tau distance (discordant pairs) from ``ranking`` to each of ``rankings``."""
    _check([ranking, *rankings])
    w = _preferences(rankings)
    return sum(w[b][a] for i, a in enumerate(ranking) for b in ranking[i + 1 :])


def kemeny_local_search(
    rankings: Sequence[Sequence[str]], start: Sequence[str] | None = None, max_moves: int = 10_000
) -> list[str]:
    """Kemeny aggregation by best-improvement insertion moves, from ``start`` (Borda)."""
    _check(rankings)
    w = _preferences(rankings)
    current = list(start) if start is not None else borda(rankings)
    _check([current, *rankings])
    n = len(current)
    for _ in range(max_moves):
        best_delta, best_move = 0, None
        for i in range(n):
            x = current[i]
            delta = 0
            # Move x up to slot j < i: x now precedes every y in current[j:i].
            for j in range(i - 1, -1, -1):
                y = current[j]
                delta += w[y][x] - w[x][y]
                if delta < best_delta:
                    best_delta, best_move = delta, (i, j)
            delta = 0
            # Move x down to slot j > i: every y in current[i+1:j+1] now precedes x.
            for j in range(i + 1, n):
                y = current[j]
                delta += w[x][y] - w[y][x]
                if delta < best_delta:
                    best_delta, best_move = delta, (i, j)
        if best_move is None:
            break
        i, j = best_move
        current.insert(j, current.pop(i))
    return current
