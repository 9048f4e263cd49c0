"""L_Rank, L_Rank-IPS, the DebiasFirst joint loss and the training collation."""

from __future__ import annotations

import math

import pytest
import torch

from hf_posbias.errors import InputError
from hf_posbias.listwise.training.collate import ListwiseCollator
from hf_posbias.listwise.training.losses import debiasfirst_loss, lm_loss, model_loss, rank_loss


def reference(logits, ranks, omega=None):
    """The issue's formula, pair by pair."""
    total = 0.0
    for s, r in zip(logits.tolist(), ranks.tolist()):
        value = 0.0
        for i in range(len(s)):
            for j in range(len(s)):
                if r[i] < 0 or r[j] < 0 or not r[i] < r[j]:
                    continue
                w = 1.0 if omega is None else omega[i][r[i]] * omega[j][r[j]]
                value += math.log1p(math.exp(s[j] - s[i])) / ((r[i] + r[j] + 2) * w)
        total += value
    return total / len(logits)


def test_rank_loss_matches_the_formula_with_and_without_propensity():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 6, generator=gen)
    ranks = torch.stack([torch.randperm(6, generator=gen) for _ in range(3)])
    assert float(rank_loss(logits, ranks)) == pytest.approx(reference(logits, ranks), rel=1e-6)
    omega = torch.rand(6, 6, generator=gen) + 0.05
    omega = omega / omega.sum()
    got = float(rank_loss(logits, ranks, omega))
    assert got == pytest.approx(reference(logits, ranks, omega.tolist()), rel=1e-5)
    assert float(rank_loss(logits, ranks, omega.numpy())) == pytest.approx(got)
    # Uniform ω = 1/k² scales every pair by k⁴.
    uniform = torch.full((6, 6), 1 / 36)
    assert float(rank_loss(logits, ranks, uniform)) == pytest.approx(
        float(rank_loss(logits, ranks)) * 36**2, rel=1e-5
    )


def test_padding_is_ignored():
    logits = torch.tensor([[1.0, 2.0, 3.0, 9.0]])
    padded = rank_loss(logits, torch.tensor([[2, 0, 1, -1]]))
    assert float(padded) == pytest.approx(
        float(rank_loss(logits[:, :3], torch.tensor([[2, 0, 1]])))
    )


def test_gradient_pushes_the_better_passage_up():
    logits = torch.zeros(1, 3, requires_grad=True)
    rank_loss(logits, torch.tensor([[2, 0, 1]])).backward()
    grad = logits.grad[0]
    assert grad[1] < 0 < grad[0]  # descent raises the target-best passage, lowers the worst


def test_bad_shapes_and_zero_propensity():
    with pytest.raises(InputError, match="same"):
        rank_loss(torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(InputError, match="k×k"):
        rank_loss(torch.zeros(1, 3), torch.tensor([[0, 1, 2]]), torch.ones(4, 4) / 16)
    omega = torch.eye(3) / 3
    rank_loss(torch.zeros(1, 3), torch.tensor([[0, 1, 2]]), omega)  # diagonal cells only: fine
    with pytest.raises(InputError, match="--smoothing"):
        rank_loss(torch.zeros(1, 3), torch.tensor([[1, 0, 2]]), omega)


def rows():
    return [
        {
            "query_id": "q1",
            "query": "what is a fox",
            "doc_ids": ["a", "b", "c", "d"],
            "passages": ["a fox is an animal", "dogs bark", "cats purr", "the fox runs"],
            "target": ["d", "a", "c", "b"],
        },
        {
            "query_id": "q2",
            "query": "cats",
            "doc_ids": ["x", "y", "z"],
            "passages": ["cats purr", "numbers", "music"],
            "target": ["x", "z", "y"],
        },
    ]


@pytest.fixture(scope="module")
def model_and_tokenizer(tiny_llm):
    from hf_posbias.modeling.causal_lm import load_causal_lm

    return load_causal_lm(tiny_llm, dtype="float32", device="cpu")


def test_collation_marks_the_answer_and_the_identifier_position(model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    collator = ListwiseCollator(tokenizer, max_window=4, passage_tokens=6)
    batch = collator(rows())
    assert batch["target_ranks"].tolist() == [[1, 3, 2, 0], [0, 2, 1, -1]]
    assert batch["identifier_ids"].tolist() == collator.identifier_ids
    for b, row in enumerate(rows()):
        start = int(batch["answer_start"][b])
        labels = batch["labels"][b]
        assert (labels[:start] == -100).all() and labels[start] != -100
        answer = [t for t in labels.tolist() if t != -100]
        text = tokenizer.decode(answer, skip_special_tokens=True)
        order = [row["doc_ids"].index(d) for d in row["target"]]
        assert text == " > ".join(f"[{'ABCD'[i]}]" for i in order)
        assert int(batch["input_ids"][b, start]) == collator.prompt.open_id
        assert int(batch["input_ids"][b, start + 1]) == collator.identifier_ids[order[0]]
        padding = batch["attention_mask"][b] == 0
        assert answer[-1] == tokenizer.eos_token_id and labels[padding].eq(-100).all()
        # left padding (as FIRST scoring): every answer ends the row; positions skip the padding
        assert labels[-1] != -100 and not padding[-1]
        assert batch["position_ids"][b][~padding].tolist() == list(range(int((~padding).sum())))


def test_training_reads_the_logits_inference_reads(model_and_tokenizer):
    from hf_posbias.listwise.training.losses import identifier_logits
    from hf_posbias.rerankers.first import FirstReranker
    from hf_posbias.rerankers.records import Passage

    model, tokenizer = model_and_tokenizer
    collator = ListwiseCollator(tokenizer, max_window=4, passage_tokens=6)
    batch = collator(rows()[:1])
    with torch.inference_mode():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    train_scores = identifier_logits(logits, batch["answer_start"], batch["identifier_ids"])[0]
    scorer = FirstReranker(model, tokenizer, window_size=4, passage_tokens=6)
    row = rows()[0]
    window = (row["query"], [Passage(d, t) for d, t in zip(row["doc_ids"], row["passages"])])
    assert train_scores.tolist() == pytest.approx(scorer.window_logits([window])[0], abs=1e-4)


def test_joint_loss_is_lambda_rank_plus_answer_only_lm(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = ListwiseCollator(tokenizer, max_window=4, passage_tokens=6)(rows())
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    parts = debiasfirst_loss(logits, batch, lam=0.1)
    lm = lm_loss(logits, batch["labels"])
    answer = batch["labels"][:, 1:] != -100
    manual = torch.nn.functional.cross_entropy(
        logits[:, :-1][answer], batch["labels"][:, 1:][answer]
    )
    assert float(lm) == pytest.approx(float(manual), rel=1e-5)
    assert float(parts.loss) == pytest.approx(0.1 * parts.rank + parts.lm, rel=1e-5)
    omega = torch.full((4, 4), 1 / 16)
    ips = debiasfirst_loss(logits, batch, lam=0.1, propensity=omega)
    assert ips.rank == pytest.approx(parts.rank * 16**2, rel=1e-4) and ips.lm == parts.lm


@pytest.mark.parametrize("padding_side", ["left", "right"])
def test_model_loss_reads_only_the_answer_logits_and_loses_nothing(
    model_and_tokenizer, padding_side
):
    model, tokenizer = model_and_tokenizer
    collator = ListwiseCollator(
        tokenizer, max_window=4, passage_tokens=6, padding_side=padding_side
    )
    batch = collator(rows())
    omega = torch.full((4, 4), 1 / 16)
    calls = []
    hook = model.lm_head.register_forward_hook(lambda m, a, out: calls.append(out.shape[1]))
    try:
        with torch.no_grad():
            full = model(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                position_ids=batch["position_ids"],
            ).logits
            reference_parts = debiasfirst_loss(full, batch, lam=0.1, propensity=omega)
            parts = model_loss(model, batch, lam=0.1, propensity=omega)
    finally:
        hook.remove()
    assert parts.rank == pytest.approx(reference_parts.rank, rel=1e-5)
    assert parts.lm == pytest.approx(reference_parts.lm, rel=1e-5)
    width = batch["input_ids"].shape[1]
    kept = width - int(batch["answer_start"].min()) + 1
    assert calls == [width, kept] and kept < width
    if padding_side == "left":  # the answer span (+ the token before it) alone
        longest_answer = int((batch["labels"] != -100).sum(dim=1).max())
        assert kept == longest_answer + 1
    # the same batch encoded once, padded later, is the same batch
    again = collator([collator.encode_row(r) for r in rows()])
    assert all(torch.equal(again[key], batch[key]) for key in batch)


def test_a_few_steps_lower_the_loss(tiny_llm):
    from hf_posbias.modeling.causal_lm import load_causal_lm

    model, tokenizer = load_causal_lm(tiny_llm, dtype="float32", device="cpu")
    model.train()
    batch = ListwiseCollator(tokenizer, max_window=4, passage_tokens=6)(rows())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(4):
        parts = model_loss(model, batch, lam=1.0)
        optimizer.zero_grad()
        parts.loss.backward()
        optimizer.step()
        losses.append(float(parts.loss.detach()))
    assert losses[-1] < losses[0]


def test_mean1_divides_every_ips_pair_weight_by_their_mean_over_the_training_pairs():
    from hf_posbias.listwise.training.losses import mean_ips_weight, normalize_propensity

    gen = torch.Generator().manual_seed(1)
    k = 5
    logits = torch.randn(4, k, generator=gen)
    ranks = torch.stack([torch.randperm(k, generator=gen) for _ in range(4)])
    ranks[3, 4] = -1  # a padded slot: its pairs are not training pairs
    omega = torch.rand(k, k, generator=gen) + 0.05
    omega = (omega / omega.sum()).tolist()
    # The mean by hand: every pair r_i < r_j of every window, padding left out.
    weights = [
        1.0 / (omega[i][r[i]] * omega[j][r[j]])
        for r in ranks.tolist()
        for i in range(k)
        for j in range(k)
        if r[i] >= 0 and r[j] >= 0 and r[i] < r[j]
    ]
    assert len(weights) == 3 * 10 + 6
    c = sum(weights) / len(weights)
    assert mean_ips_weight(omega, ranks.tolist()) == pytest.approx(c, rel=1e-12)
    assert c > 1e3  # Σω = 1: the paper's weights are huge

    def by_hand(scale):
        total = 0.0
        for s, r in zip(logits.tolist(), ranks.tolist()):
            for i in range(k):
                for j in range(k):
                    if r[i] < 0 or r[j] < 0 or not r[i] < r[j]:
                        continue
                    w = omega[i][r[i]] * omega[j][r[j]] * scale
                    total += math.log1p(math.exp(s[j] - s[i])) / ((r[i] + r[j] + 2) * w)
        return total / len(logits)

    paper = normalize_propensity(omega, ranks.tolist(), "paper")
    mean1 = normalize_propensity(omega, ranks.tolist(), "mean1")
    assert float(rank_loss(logits, ranks, paper)) == pytest.approx(by_hand(1.0), rel=1e-5)
    got = float(rank_loss(logits, ranks, mean1))
    assert got == pytest.approx(by_hand(c), rel=1e-5)
    assert got == pytest.approx(float(rank_loss(logits, ranks, paper)) / c, rel=1e-5)
    from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings

    with pytest.raises(InputError, match="^ips_normalization must be one of paper, mean1"):
        ListwiseTrainingSettings(
            model="m", data="d", out="o", propensity="p.json", ips_normalization="sum1"
        )
