"""rank_llm's sliding window and lockstep reranking of many lists."""

from __future__ import annotations

import pytest

from hf_posbias.errors import InputError
from hf_posbias.rerankers.records import Passage, WindowRanking, order_by_score
from hf_posbias.rerankers.window import rerank_lists, window_spans


def rank_llm_spans(n: int, size: int, stride: int) -> list[tuple[int, int]]:
    """rank_llm's loop (``sliding_windows``), written out as the reference."""
    end, start = n, max(n - size, 0)
    spans, prev = [], None
    while end > start and prev != 0:
        spans.append((start, end))
        prev = start
        end, start = end - stride, max(start - stride, 0)
    return spans


@pytest.mark.parametrize("n", [1, 5, 19, 20, 21, 25, 30, 40, 100])
def test_spans_match_rank_llm(n):
    assert window_spans(n, 20, 10) == rank_llm_spans(n, 20, 10)
    assert window_spans(n, 4, 3) == rank_llm_spans(n, 4, 3)


def test_bad_window_refused():
    with pytest.raises(InputError):
        window_spans(10, 4, 5)


class ByScore:
    """A fake reranker ranking by the number in each passage; records its calls."""

    name = "by-score"

    def __init__(self, window_size):
        self.window_size = window_size
        self.calls: list[int] = []

    def rank_windows(self, windows):
        self.calls.append(len(windows))
        out = []
        for _, passages in windows:
            scores = [float(p.text) for p in passages]
            out.append(WindowRanking(order_by_score(scores, [p.doc_id for p in passages]), scores))
        return out

    def describe(self):
        return {"name": self.name}


def test_back_to_front_brings_the_best_to_the_top_and_batches_lists():
    values = [3, 9, 1, 7, 30, 2, 8, 5, 6, 4, 0, 11, 12, 10, 13, 31]
    lists = [
        ("q", [Passage(f"d{i}", str(v)) for i, v in enumerate(values)]),
        ("q", [Passage(f"e{i}", str(v)) for i, v in enumerate(values[:6])]),
    ]
    reranker = ByScore(window_size=6)
    together = rerank_lists(reranker, lists, step=3)
    assert reranker.calls[0] == 2  # both lists' first windows went in one call
    alone = [rerank_lists(ByScore(6), [lst], step=3)[0] for lst in lists]
    assert [r.ranking for r in together] == [r.ranking for r in alone]
    top = together[0].ranking[:3]
    assert top == ["d15", "d4", "d14"]  # the 3 best bubble up from anywhere (step = 3)
    assert together[0].windows == len(window_spans(16, 6, 3))
    assert together[1].ranking == [f"e{i}" for i in (4, 1, 3, 0, 5, 2)]
