"""rank_llm's sliding window: size 20, step 10, from the back of the list to the front.

The last window is ranked first; its best passages move up into the next window, so the best
passages of the whole list can bubble to the top in one pass. :func:`rerank_lists` runs the
windows of many lists in lockstep so that each step is one batched reranker call. A list shorter
than the window is ranked as one window of its own length, and :func:`rerank_lists` says so (a
:class:`WindowLargerThanList` warning naming the window, once per window size; at the default
window, rank_llm's 20, a debug line: short lists are what it is run on).

Example:
    >>> window_spans(30, 20, 10)
    [(10, 30), (0, 20)]
    >>> window_spans(20, 20, 10)
    [(0, 20)]
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence

from hf_posbias.errors import InputError
from hf_posbias.rerankers.base import ListwiseReranker, Window
from hf_posbias.rerankers.records import RerankedList, WindowCounts

logger = logging.getLogger(__name__)

DEFAULT_WINDOW = 20
DEFAULT_STEP = 10


class WindowLargerThanList(UserWarning):
    """A list shorter than the window: it is ranked as one window of its own length."""


def window_spans(n: int, size: int, step: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each window over a list of ``n``, back to front (rank_llm's order).

    Example:
        >>> window_spans(25, 20, 10)
        [(5, 25), (0, 15)]
    """
    if size < 1 or not 0 < step <= size:
        raise InputError(f"the window needs size >= 1 and 0 < step <= size (got {size}, {step})")
    spans: list[tuple[int, int]] = []
    end, start = n, max(n - size, 0)
    while end > start:
        spans.append((start, end))
        if start == 0:
            break
        end, start = end - step, max(start - step, 0)
    return spans


def rerank_lists(
    reranker: ListwiseReranker,
    lists: Sequence[Window],
    *,
    window: int | None = None,
    step: int | None = None,
) -> list[RerankedList]:
    """Rerank each ``(query, passages)`` list with sliding windows, all lists in lockstep.

    ``window`` defaults to the reranker's own window size (``None`` there: one window per
    list); ``step`` to half the window (10 for 20).

    Example:
        >>> from hf_posbias.rerankers.records import Passage, WindowRanking
        >>> class ByLength:
        ...     name, window_size = "len", 2
        ...     def rank_windows(self, windows):
        ...         out = []
        ...         for _, ps in windows:
        ...             s = [float(len(p.text)) for p in ps]
        ...             out.append(WindowRanking(sorted(range(len(ps)), key=lambda i: -s[i]), s))
        ...         return out
        ...     def describe(self):
        ...         return {}
        >>> ps = [Passage(str(i), "x" * i) for i in (1, 2, 3)]
        >>> rerank_lists(ByLength(), [("q", ps)], step=1)[0].ranking  # the best bubbles up
        ['3', '1', '2']
    """
    size = window if window is not None else reranker.window_size
    current = [list(passages) for _, passages in lists]
    shortest = min((len(ps) for ps in current if ps), default=0)
    if size and 0 < shortest < size:
        message = (
            f"window {size} is larger than a list to rerank: a list of fewer than {size} "
            "passages is ranked as one window of its own length"
        )
        if size == DEFAULT_WINDOW:
            # rank_llm's window over a short list (listwise test's 1…k slots) is how the
            # default works, not news: a debug line (`posbias -v`).
            logger.debug(message)
        else:
            # A window chosen larger than the lists: said once per window size (Python's
            # default filter), not per query.
            warnings.warn(message, WindowLargerThanList, stacklevel=2)
    plans = [
        window_spans(len(ps), size or max(len(ps), 1), step or max((size or 2) // 2, 1))
        if ps
        else []
        for ps in current
    ]
    results = [RerankedList(ranking=[], scores={}) for _ in lists]
    for t in range(max((len(p) for p in plans), default=0)):
        todo = [i for i, plan in enumerate(plans) if t < len(plan)]
        batch: list[Window] = []
        for i in todo:
            start, end = plans[i][t]
            batch.append((lists[i][0], current[i][start:end]))
        answers = reranker.rank_windows(batch)
        if len(answers) != len(batch):
            raise RuntimeError(f"{reranker.name} answered {len(answers)} of {len(batch)} windows")
        for i, (_, passages), answer in zip(todo, batch, answers):
            start, end = plans[i][t]
            current[i][start:end] = [passages[j] for j in answer.order]
            result = results[i]
            for j, passage in enumerate(passages):
                result.scores[passage.doc_id] = float(answer.scores[j])
            result.add(WindowCounts.of_window(answer, len(passages)))
    for result, passages in zip(results, current):
        result.ranking = [p.doc_id for p in passages]
    return results
