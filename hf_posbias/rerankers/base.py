"""The reranker protocol every listwise reranker implements (FIRST, generation, pointwise).

A reranker ranks *windows*: ``rank_windows([(query, passages), …])`` returns one
:class:`~hf_posbias.rerankers.records.WindowRanking` per window, in order, so that an
implementation can batch all windows of one call. ``window_size`` is the most passages one
window may hold (``None``: any number — pointwise scorers take a whole list at once, so their
output cannot depend on input order); :mod:`hf_posbias.rerankers.window` slides windows
over
longer lists.

Example:
    >>> from hf_posbias.rerankers.records import Passage, WindowRanking
    >>> class Reverse:
    ...     name, window_size = "reverse", None
    ...     def rank_windows(self, windows):
    ...         return [WindowRanking(list(range(len(p)))[::-1], [0.0] * len(p))
    ...                 for _, p in windows]
    ...     def describe(self):
    ...         return {"name": self.name}
    >>> isinstance(Reverse(), ListwiseReranker)
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from hf_posbias.rerankers.records import Passage, WindowRanking

Window = tuple[str, Sequence[Passage]]
"""One window: the query and its passages in input order."""


@runtime_checkable
class ListwiseReranker(Protocol):
    """Ranks windows of passages for a query; see the module docstring."""

    name: str
    window_size: int | None

    def rank_windows(self, windows: Sequence[Window]) -> list[WindowRanking]: ...

    def describe(self) -> dict[str, Any]: ...
