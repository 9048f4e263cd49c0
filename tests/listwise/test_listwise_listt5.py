"""ListT5 (Q26's third baseline): the tournament sort of the reference code, Fusion-in-Decoder
passes of a tiny random T5, the checkpoint layout of the released models, and a run in the
harness."""

from __future__ import annotations

import random

import pytest

from hf_posbias.cli import main
from hf_posbias.rerankers.listt5 import Tournament, listt5_inputs, top_indices
from hf_posbias.rerankers.records import Passage


def judge(relevance, calls=None):
    """A perfect ListT5: writes a pass's positions from the least to the most relevant."""

    def generate(index):
        if calls is not None:
            calls.append(list(index))
        order = sorted(range(len(index)), key=lambda j: relevance[index[j]])
        return " ".join(str(j + 1) for j in order)

    return generate


@pytest.mark.parametrize("n", [3, 5, 6, 12, 20, 23])
def test_a_perfect_judge_finds_the_true_top_10_and_leaves_the_rest_in_input_order(n):
    rng = random.Random(n)
    for _ in range(3):
        relevance = list(range(n))
        rng.shuffle(relevance)
        ranking = Tournament(n, judge(relevance)).ranking()
        best = sorted(range(n), key=lambda i: -relevance[i])
        top = min(10, n) if n > 5 else n  # a list of five or fewer is one pass, fully ordered
        assert ranking[:top] == best[:top]
        assert ranking[top:] == sorted(ranking[top:])  # the rest: input order
        assert sorted(ranking) == list(range(n))


def test_every_pass_shows_five_passages_in_input_order_and_no_set_is_judged_twice():
    calls: list[list[int]] = []
    relevance = list(range(20))
    random.Random(1).shuffle(relevance)
    tournament = Tournament(20, judge(relevance, calls))
    tournament.ranking()
    assert all(len(c) == 5 and c == sorted(c) for c in calls)
    assert len({frozenset(c) for c in calls}) == len(calls) == tournament.passes
    # The first round is the four groups of five in input order.
    assert calls[:4] == [list(range(s, s + 5)) for s in (0, 5, 10, 15)]
    assert tournament.passes < 60  # the cache: far fewer than ten fresh tournaments (10 × 5)


def test_an_unreadable_answer_reads_as_the_first_passage_and_is_counted():
    assert top_indices("3 1 4 2 5", 2) == ([2, 5], False)
    assert top_indices("[C] > [A]", 2) == ([1, 1], True)
    tournament = Tournament(7, lambda index: "not numbers")
    ranking = tournament.ranking()
    assert sorted(ranking) == list(range(7)) and tournament.unreadable == tournament.passes > 0


def test_the_fid_input_of_a_passage_is_query_index_and_title_then_text():
    passages = [Passage("a", "Paris is big.", "France"), Passage("b", "Untitled text.")]
    assert listt5_inputs("capital?", passages) == [
        "Query: capital?, Index: 1, Context: France Paris is big.",
        "Query: capital?, Index: 2, Context: Untitled text.",
    ]


def test_a_released_layout_checkpoint_loads_the_weights_of_the_plain_t5_layout(
    tiny_listt5, tmp_path
):
    import torch

    from hf_posbias.modeling.seq2seq import load_fid_t5
    from hf_posbias.rerankers.loading import reranker_kind
    from hf_posbias.testing import build_tiny_listt5

    fid = tiny_listt5  # seed 0, as ListT5's FiDT5 saves it
    plain = build_tiny_listt5(tmp_path / "plain", seed=0, fid_layout=False)
    a, _ = load_fid_t5(fid, device="cpu")
    b, _ = load_fid_t5(plain, device="cpu")
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    assert reranker_kind(fid) == "listt5"  # its config names FiDT5
    assert reranker_kind(f"listt5:{plain}") == "listt5"


def test_fusion_in_decoder_encodes_each_passage_alone(tiny_listt5):
    """A passage's encoding does not see the other passages of its pass: only the decoder
    reads them together."""
    from hf_posbias.rerankers.loading import load_reranker

    reranker = load_reranker(f"listt5:{tiny_listt5}", dtype="float32", device="cpu")
    one = listt5_inputs("q", [Passage("a", "cats purr")])[0]
    two = listt5_inputs("q", [Passage("a", "cats purr"), Passage("b", "dogs bark loudly")])
    tok = reranker.tokenizer([one, *two], padding="longest", return_tensors="pt")
    hidden = reranker.model.get_encoder()(**tok).last_hidden_state
    n = int(tok["attention_mask"][0].sum())
    assert hidden[0, :n].allclose(hidden[1, :n], atol=1e-5)


def test_listt5_runs_in_the_controlled_test_and_counts_unreadable_answers(
    tiny_listt5, shared_beir_task, tmp_path
):
    import json

    argv = ["listwise", "test", "--reranker", f"listt5:{tiny_listt5}", "--task",
            str(shared_beir_task), "--k", "6", "--max-queries", "1", "--positions", "1,6",
            "--dtype", "float32", "--no-progress", "--out", str(tmp_path / "o")]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((tmp_path / "o" / "positions.json").read_text())
    assert summary["reranker_details"]["kind"] == "listt5"
    assert summary["reranker_details"]["top_r"] == 2
    # A random T5 writes no numbers: every window fell back, and says so.
    assert summary["fallback"]["windows"] == 2 and summary["fallback"]["fallback_rate"] == 1.0
