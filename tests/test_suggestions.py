"""The one ranking of "did you mean" (hf_posbias.suggestions): flags, verbs, choices, models."""

from __future__ import annotations

import pytest

from hf_posbias.suggestions import closest_names, edit_distance


@pytest.mark.parametrize(
    ("a", "b", "slips"),
    [
        ("modle", "model", 1),  # a swap is one slip, not two changes
        ("modle", "mode", 1),
        ("model", "model", 0),
        ("ab", "ba", 1),
        ("uniforn", "uniform", 1),
        ("bm25", "", 4),
        ("kitten", "sitting", 3),
    ],
)
def test_edit_distance_counts_slips(a: str, b: str, slips: int) -> None:
    assert edit_distance(a, b) == slips
    assert edit_distance(b, a) == slips


@pytest.mark.parametrize(
    ("name", "known", "best"),
    [
        ("--modle", ["--mode", "--model", "--models", "--modes"], "--model"),
        ("--tpo-k", ["--top-k", "--rerank-k", "--step"], "--top-k"),
        ("--seeds", ["--seed", "--scoring", "--sources"], "--seed"),
        ("evalute", ["evaluate", "compare", "leaderboard"], "evaluate"),
        ("smollm2-135n", ["SmolLM2-135M-Instruct", "smollm2-135m"], "smollm2-135m"),
    ],
)
def test_the_name_most_likely_meant_comes_first(name: str, known: list[str], best: str) -> None:
    assert closest_names(name, known, n=3)[0] == best


def test_model_names_rank_with_the_same_function() -> None:
    from hf_posbias.modeling.resolve import suggest_model_names

    assert suggest_model_names("all-MiniLM-L6-v3")[0] == "all-MiniLM-L6-v2"


def test_a_short_or_far_name_gets_no_suggestion() -> None:
    assert closest_names("zz", ["ab", "zzzzz"]) == []
    assert closest_names("--frobnicate", ["--model", "--task"]) == []
