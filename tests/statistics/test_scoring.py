"""Per-query IR metrics (hf_posbias.statistics.scoring) against hand-computed values."""

from __future__ import annotations

import math

import pytest

from hf_posbias.errors import InputError
from hf_posbias.statistics.scoring import per_query_metrics, ranking_to_run


def test_ndcg_at_10_by_hand() -> None:
    qrels = {"q": {"d2": 1, "d5": 1}}
    run = {"q": ranking_to_run(["d1", "d2", "d3", "d4", "d5"])}
    ideal = 1 + 1 / math.log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(6)) / ideal
    assert per_query_metrics(run, qrels)["q"]["ndcg_at_10"] == pytest.approx(expected)


def test_relevant_document_below_the_cutoff_scores_zero() -> None:
    ranking = [f"d{i}" for i in range(20)]
    scores = per_query_metrics({"q": ranking_to_run(ranking)}, {"q": {"d15": 1}}, ["ndcg_at_10"])
    assert scores["q"]["ndcg_at_10"] == 0.0


def test_missing_and_empty_rankings_score_zero_not_vanish() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    scores = per_query_metrics({"q1": {"a": 1.0}, "q2": {}}, qrels)
    assert scores == {
        "q1": {"ndcg_at_10": 1.0},
        "q2": {"ndcg_at_10": 0.0},
        "q3": {"ndcg_at_10": 0.0},
    }


def test_queries_without_relevant_documents_are_not_scored() -> None:
    scores = per_query_metrics({"q": {"a": 1.0}}, {"q": {"a": 1}, "z": {"a": 0}})
    assert list(scores) == ["q"]
    with pytest.raises(InputError, match="no relevant"):
        per_query_metrics({"q": {"a": 1.0}}, {"q": {"a": 0}})


def test_unknown_metric_and_duplicate_ranking_are_input_errors() -> None:
    with pytest.raises(InputError, match="unknown metric"):
        per_query_metrics({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["ndcg10"])
    with pytest.raises(InputError, match="twice"):
        ranking_to_run(["a", "a"])
