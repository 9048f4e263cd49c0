"""A listwise window larger than the list: the list is ranked as one window of its length, and
rerank_lists says so (once per window size, not once per query; at the default window, a debug
line only)."""

from __future__ import annotations

import logging
import warnings

import pytest

from hf_posbias.rerankers.records import Passage, WindowRanking
from hf_posbias.rerankers.window import DEFAULT_WINDOW, WindowLargerThanList, rerank_lists


class Reverse:
    name, window_size = "reverse", 25

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def rank_windows(self, windows):
        self.sizes += [len(ps) for _, ps in windows]
        return [WindowRanking(list(reversed(range(len(ps)))), [0.0] * len(ps)) for _, ps in windows]

    def describe(self):
        return {}


def _list(n: int) -> tuple[str, list[Passage]]:
    return ("q", [Passage(f"p{i}", f"text {i}") for i in range(n)])


def test_a_short_list_is_one_window_and_the_adjustment_is_stated():
    reranker = Reverse()
    with pytest.warns(WindowLargerThanList, match="window 25 is larger than a list to rerank"):
        [result] = rerank_lists(reranker, [_list(7)])
    assert reranker.sizes == [7] and result.windows == 1
    assert result.ranking == [f"p{i}" for i in reversed(range(7))]


def test_the_statement_is_made_once_per_window_size():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for n in (5, 6, 7):
            rerank_lists(Reverse(), [_list(n)])
    assert sum(issubclass(w.category, WindowLargerThanList) for w in caught) == 1


@pytest.mark.parametrize("n", [25, 35])
def test_lists_at_least_a_window_long_say_nothing(n):
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowLargerThanList)
        [result] = rerank_lists(Reverse(), [_list(n)])
    assert result.windows == (1 if n == 25 else 2)


def test_at_the_default_window_a_short_list_is_a_debug_line_not_a_warning(caplog):
    with warnings.catch_warnings(), caplog.at_level(logging.DEBUG, "hf_posbias.rerankers"):
        warnings.simplefilter("error", WindowLargerThanList)
        [result] = rerank_lists(Reverse(), [_list(7)], window=DEFAULT_WINDOW)
    assert result.windows == 1
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "window 20 is larger than a list" in caplog.records[0].getMessage()
