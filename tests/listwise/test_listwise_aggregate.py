"""Borda and Kemeny local search, and shuffle-eval with aggregation."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.aggregate import borda, kemeny_local_search, kendall_distance


def test_borda_counts_points_and_breaks_ties_by_id():
    assert borda([["b", "a"], ["a", "b"]]) == ["a", "b"]
    assert borda([["c", "a", "b"], ["c", "b", "a"], ["a", "c", "b"]]) == ["c", "a", "b"]
    with pytest.raises(InputError):
        borda([["a", "b"], ["a", "c"]])


def test_kemeny_local_search_never_worse_than_borda_and_optimal_on_small_cases():
    rng = random.Random(0)
    items = list("abcde")
    for _ in range(30):
        rankings = [rng.sample(items, len(items)) for _ in range(rng.randint(2, 6))]
        found = kemeny_local_search(rankings)
        assert sorted(found) == items
        assert kendall_distance(found, rankings) <= kendall_distance(borda(rankings), rankings)
        best = min(kendall_distance(list(p), rankings) for p in itertools.permutations(items))
        # Local optimum of insertion moves: at most a little above the exact optimum here.
        assert kendall_distance(found, rankings) <= best + 2
    # A Condorcet order is found exactly.
    assert kemeny_local_search([list("abcd"), list("abdc"), list("bacd")]) == list("abcd")


def test_shuffle_eval_with_a_pointwise_reranker_is_order_free(beir_task, tmp_path, capsys):
    out = tmp_path / "se"
    code = main(
        [
            "listwise",
            "shuffle-eval",
            "--reranker",
            "bm25",
            "--task",
            str(beir_task),
            "--k",
            "6",
            "--shuffles",
            "3",
            "--aggregate",
            "4",
            "--out",
            str(out),
            "--no-progress",
            "--n-resamples",
            "100",
        ]
    )
    assert code == 0
    data = json.loads((out / "shuffle_eval.json").read_text())
    scores = data["ndcg_at_10"]
    assert set(scores) == {"first_stage", "original", "shuffled", "borda", "kemeny"}
    assert scores["original"] == scores["shuffled"] == scores["borda"] == scores["kemeny"]
    assert data["per_shuffle_ndcg_at_10"] == [scores["original"]] * 3
    test = data["tests"]["shuffled_vs_original"]
    assert test["delta"] == 0.0 and test["n_queries"] == 4
    rows = [json.loads(x) for x in (out / "rankings.jsonl").read_text().splitlines()]
    assert len(rows) == 4 * (1 + 4) + 4 * 2  # original + 4 shuffles, + borda and kemeny
    per_query = [json.loads(x) for x in (out / "per_query.jsonl").read_text().splitlines()]
    assert len(per_query) == 4 and "kemeny" in per_query[0]


def test_shuffle_eval_refuses_a_single_aggregate(beir_task, tmp_path, capsys):
    code = main(
        [
            "listwise",
            "shuffle-eval",
            "--reranker",
            "bm25",
            "--task",
            str(beir_task),
            "--k",
            "6",
            "--aggregate",
            "1",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2 and "--aggregate" in capsys.readouterr().err
