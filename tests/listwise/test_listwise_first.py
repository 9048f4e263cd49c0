"""The FIRST scorer on a tiny random Llama: all identifier logits, batching, checks."""

from __future__ import annotations

import pytest
import torch

from hf_posbias.errors import InputError
from hf_posbias.rerankers.first import FirstReranker, left_pad
from hf_posbias.rerankers.loading import load_reranker
from hf_posbias.rerankers.records import Passage

WORDS = [
    "apple",
    "banana",
    "cherry",
    "dolphin",
    "eagle",
    "falcon",
    "giraffe",
    "harbor",
    "island",
    "jungle",
]


def windows(n_windows: int, k: int) -> list:
    out = []
    for w in range(n_windows):
        passages = [
            Passage(f"d{w}-{i}", f"{WORDS[(w + i) % 10]} is a thing " * (1 + (i + w) % 3))
            for i in range(k)
        ]
        out.append((f"what is {WORDS[w % 10]}", passages))
    return out


def test_scores_are_the_identifier_logits_of_the_last_position(tiny_llm):
    reranker = load_reranker(tiny_llm, dtype="float32", device="cpu", batch_size=1, window=5)
    assert isinstance(reranker, FirstReranker)
    ((query, passages),) = windows(1, 5)
    ids = reranker.prompt.scoring_ids(query, passages)
    with torch.inference_mode():
        full = reranker.model(torch.tensor([ids])).logits[0, -1]
    expected = full[reranker.identifier_ids].tolist()
    answer = reranker.rank_windows([(query, passages)])[0]
    assert answer.scores == pytest.approx(expected, abs=1e-5)
    assert sorted(answer.order) == list(range(5))
    assert [answer.scores[i] for i in answer.order] == sorted(answer.scores, reverse=True)


def test_batched_equals_one_by_one_with_left_padding(tiny_llm):
    batch = load_reranker(tiny_llm, dtype="float32", device="cpu", batch_size=4, window=6)
    single = load_reranker(tiny_llm, dtype="float32", device="cpu", batch_size=1, window=6)
    ws = windows(5, 6) + windows(2, 3)  # different lengths and window sizes in one call
    lengths = {len(ids) for ids in batch.encode(ws)}
    assert len(lengths) > 1  # padding really happens
    got = batch.window_logits(ws)
    want = single.window_logits(ws)
    for a, b in zip(got, want):
        assert a == pytest.approx(b, abs=1e-4)
    assert batch.stats.batches == 2 and single.stats.batches == 7


def test_left_pad_positions_count_real_tokens():
    ids, mask, pos = left_pad([[1, 2], [3, 4, 5, 6]], pad_id=0)
    assert ids.tolist() == [[0, 0, 1, 2], [3, 4, 5, 6]]
    assert pos.tolist() == [[0, 0, 0, 1], [0, 1, 2, 3]]


def test_identifier_check_stops_loading(merged_identifier_llm, tiny_llm):
    with pytest.raises(InputError, match="not single tokens"):
        load_reranker(merged_identifier_llm, dtype="float32", device="cpu")
    with pytest.raises(InputError, match="--identifiers letters"):
        load_reranker(tiny_llm, dtype="float32", device="cpu", identifiers="numbers")


def test_prompt_longer_than_the_context_is_refused(tiny_models):
    short = tiny_models("llama", head="causal-lm")  # 512 positions
    reranker = load_reranker(short, dtype="float32", device="cpu")
    with pytest.raises(InputError, match="lower --passage-tokens"):
        reranker.rank_windows(windows(1, 20))


def test_bf16_scores_follow_fp32(tiny_llm):
    fp32 = load_reranker(tiny_llm, dtype="float32", device="cpu", window=5)
    bf16 = load_reranker(tiny_llm, dtype="bfloat16", device="cpu", window=5)
    assert bf16.describe()["dtype"] == "bfloat16"
    ws = windows(2, 5)
    for a, b in zip(fp32.window_logits(ws), bf16.window_logits(ws)):
        assert torch.corrcoef(torch.tensor([a, b]))[0, 1] > 0.9
        # The identifier logits are recomputed in float32, not rounded to bf16 steps.
        assert any(torch.tensor(x).bfloat16().float().item() != x for x in b)
    assert bf16.stats.float32_head == bf16.stats.batches > 0
    assert fp32.stats.float32_head == 0
