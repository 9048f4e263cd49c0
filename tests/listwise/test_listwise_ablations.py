"""Q26's ablation flags of ``listwise train`` (Pos-Aug / RandAug / none, IPS on / off, L_Rank
with / without L_LM), each checked against the loss computed by hand on a tiny example."""

from __future__ import annotations

import json
import math

import pytest
import torch

from hf_posbias.listwise.training.augment import augment_rows
from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings
from hf_posbias.listwise.training.losses import debiasfirst_loss, rank_loss
from hf_posbias.listwise.training.trainset import target_ranks


def softplus(x: float) -> float:
    return math.log(1 + math.exp(x))


def tiny_batch():
    """One window of 3 passages; vocabulary of 5; identifiers are tokens 2, 3, 4; the answer's
    ``[`` is at position 1 and the answer tokens (labels) are at positions 2 and 3."""
    logits = torch.tensor(
        [
            [
                [0.0, 0.0, 0.0, 0.0, 0.0],
                [0.5, 0.0, 1.0, 3.0, 2.0],  # at the answer's "[": identifier logits 1, 3, 2
                [0.0, 1.0, 0.0, 2.0, 0.0],
                [1.0, 0.0, 0.0, 0.0, 0.0],
            ]
        ]
    )
    batch = {
        "answer_start": torch.tensor([1]),
        "identifier_ids": torch.tensor([2, 3, 4]),
        "target_ranks": torch.tensor([[2, 0, 1]]),  # input slot 2 is best, then 3, then 1
        "labels": torch.tensor([[-100, -100, 3, 0]]),
    }
    return logits, batch


def hand_rank(omega=None) -> float:
    s, r = [1.0, 3.0, 2.0], [2, 0, 1]
    total = 0.0
    for i in range(3):
        for j in range(3):
            if r[i] < r[j]:
                w = 1.0 if omega is None else omega[i][r[i]] * omega[j][r[j]]
                total += softplus(s[j] - s[i]) / ((r[i] + r[j] + 2) * w)
    return total


def hand_lm() -> float:
    # label at position 2 is predicted by position 1's logits, label at 3 by position 2's.
    row1, row2 = [0.5, 0.0, 1.0, 3.0, 2.0], [0.0, 1.0, 0.0, 2.0, 0.0]
    nll1 = -(row1[3] - math.log(sum(math.exp(x) for x in row1)))
    nll2 = -(row2[0] - math.log(sum(math.exp(x) for x in row2)))
    return (nll1 + nll2) / 2


def test_rank_loss_with_and_without_lm_and_ips_by_hand():
    logits, batch = tiny_batch()
    # The pairs by hand: (slot 2 over 3): softplus(2-3)/3, (slot 2 over 1): softplus(1-3)/4,
    # (slot 3 over 1): softplus(1-2)/5.
    expected_rank = softplus(-1) / 3 + softplus(-2) / 4 + softplus(-1) / 5
    assert hand_rank() == pytest.approx(expected_rank)
    lam = 0.1
    joint = debiasfirst_loss(logits, batch, lam=lam)
    assert joint.rank == pytest.approx(expected_rank, rel=1e-6)
    assert joint.lm == pytest.approx(hand_lm(), rel=1e-6)
    assert float(joint.loss) == pytest.approx(lam * expected_rank + hand_lm(), rel=1e-6)
    # --no-lm-loss: λ·L_Rank alone; L_LM still reported for the log.
    alone = debiasfirst_loss(logits, batch, lam=lam, with_lm=False)
    assert float(alone.loss) == pytest.approx(lam * expected_rank, rel=1e-6)
    assert alone.lm == pytest.approx(hand_lm(), rel=1e-6)
    # IPS on: each pair also divided by ω[i, r_i]·ω[j, r_j].
    omega = [[0.05, 0.1, 0.2], [0.3, 0.05, 0.05], [0.1, 0.1, 0.05]]
    ips = debiasfirst_loss(logits, batch, lam=lam, propensity=omega, with_lm=False)
    by_hand = (
        softplus(-1) / (3 * omega[1][0] * omega[2][1])
        + softplus(-2) / (4 * omega[1][0] * omega[0][2])
        + softplus(-1) / (5 * omega[2][1] * omega[0][2])
    )
    assert hand_rank(omega) == pytest.approx(by_hand)
    assert float(ips.loss) == pytest.approx(lam * by_hand, rel=1e-5)


ROW = {
    "query_id": "q",
    "query": "?",
    "doc_ids": ["a", "b", "c", "d"],
    "passages": ["A", "B", "C", "D"],
    "target": ["c", "a", "d", "b"],
}


@pytest.mark.parametrize("method", ["pos-aug", "rand-aug"])
def test_augmented_rows_reindex_the_target_and_keep_every_pair_term(method):
    rows = augment_rows([ROW], 2, seed=0, method=method)
    assert len(rows) == 2 and all(r["target"] == ROW["target"] for r in rows)
    key = "rotation" if method == "pos-aug" else "shuffle"
    assert [r[key] for r in rows] == [0, 1]
    scores = {"a": 0.3, "b": -1.0, "c": 2.0, "d": 0.5}  # a passage's score follows it
    source = rank_loss(torch.tensor([[scores[d] for d in ROW["doc_ids"]]]),
                       torch.tensor([target_ranks(ROW)]))  # fmt: skip
    for row in rows:
        assert sorted(row["doc_ids"]) == ROW["doc_ids"]
        assert row["passages"] == [d.upper() for d in row["doc_ids"]]
        ranks = target_ranks(row)
        assert [ROW["target"][r] for r in ranks] == row["doc_ids"]  # re-indexed target
        logits = torch.tensor([[scores[d] for d in row["doc_ids"]]])
        # IPS off: the same pair terms in another input order, so the same loss.
        assert float(rank_loss(logits, torch.tensor([ranks]))) == pytest.approx(float(source))
    if method == "pos-aug":  # every passage visits every group slot once
        assert rows[0]["doc_ids"][:2] == rows[1]["doc_ids"][2:]
    assert augment_rows([ROW], 3, method="none") == [ROW]


def test_augmentation_flag_picks_the_training_rows(tiny_llm, train_set, tmp_path):
    from hf_posbias.listwise.training.train import prepare_run
    from hf_posbias.listwise.training.trainset import read_train_set

    source = read_train_set(str(train_set))
    runs = {}
    for name, extra in {
        "none": {},
        "pos-aug": {"pos_aug": 2},
        "rand-aug": {"pos_aug": 3, "augmentation": "rand-aug"},
        "explicit-none": {"augmentation": "none"},
    }.items():
        settings = ListwiseTrainingSettings(
            model=tiny_llm, data=str(train_set), out=str(tmp_path / name), **extra
        )
        runs[name] = prepare_run(settings, show_progress=False)
    assert runs["none"].rows == source == runs["explicit-none"].rows
    assert len(runs["pos-aug"].rows) == 2 * len(source)
    assert all("rotation" in r for r in runs["pos-aug"].rows)
    assert len(runs["rand-aug"].rows) == 3 * len(source) and runs["rand-aug"].pos_aug == 3
    assert all("shuffle" in r and "rotation" not in r for r in runs["rand-aug"].rows)
    assert runs["rand-aug"].pos_aug_source.startswith("RandAug")


def test_no_lm_loss_trains_lambda_rank_alone(tiny_llm, train_set, tmp_path):
    from hf_posbias.listwise.training.train import train_listwise

    settings = ListwiseTrainingSettings(
        model=tiny_llm,
        data=str(train_set),
        out=str(tmp_path / "ckpt"),
        global_batch=2,
        passage_tokens=12,
        max_steps=1,
        lam=0.5,
        lm_loss=False,
        augmentation="rand-aug",
        pos_aug=2,
        progress=False,
    )
    result = train_listwise(settings)
    assert result.train_loss == pytest.approx(0.5 * result.rank_loss, rel=1e-4)
    assert result.lm_loss > 0  # still measured and logged
    card = (tmp_path / "ckpt" / "README.md").read_text()
    assert "without L_LM" in card and "RandAug" in card
    facts = json.loads((tmp_path / "ckpt" / "posbias_listwise_training.json").read_text())
    assert "rand-aug" in json.dumps(facts) and '"with_lm": false' in json.dumps(facts)
