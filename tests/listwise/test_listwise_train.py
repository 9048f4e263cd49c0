"""DebiasFirst fine-tuning on a tiny random Llama: the CLI verb, the checkpoint, its card, the
checks that run before any weight loads, and ``posbias listwise test`` on the result."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from hf_posbias.cards.checkpoint import load_card_facts
from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.training.card import LISTWISE_CARD, TRAINING_INFO
from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings
from hf_posbias.listwise.training.trainset import read_train_set, write_train_set

K = 8  # window size of the train_set fixture (--pos-aug 2 and 4 divide it, 3 does not)


def write_propensity(path: Path, omega: np.ndarray) -> Path:
    """A propensity.json with the fields training reads (as ``posbias listwise propensity``)."""
    payload = {"k": omega.shape[0], "n": 5, "queries": 3, "smoothing": 0.5, "omega": omega.tolist()}
    path.write_text(json.dumps(payload))
    return path


def uniform_omega(k: int) -> np.ndarray:
    return np.full((k, k), 1.0 / (k * k))


def train_args(model: str, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "listwise",
        "train",
        "--model",
        model,
        "--data",
        str(data),
        "--out",
        str(out),
        "--global-batch",
        "2",
        "--passage-tokens",
        "12",
        "--lr",
        "1e-3",
        "--no-progress",
        *extra,
    ]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, tiny_llm: str, train_set: Path) -> Path:
    """One end-to-end ``posbias listwise train`` run: propensity (IPS) + Pos-Aug on the fly."""
    root = tmp_path_factory.mktemp("lw-ckpt")
    propensity = write_propensity(root / "propensity.json", uniform_omega(K))
    args = train_args(tiny_llm, train_set, root / "ckpt", "--max-steps", "3")
    args += ["--propensity", str(propensity), "--pos-aug", "2", "--lambda", "0.5", "--seed", "3"]
    assert main(args) == 0
    return root / "ckpt"


def test_cli_train_writes_checkpoint_facts_and_card(trained, train_set, tiny_llm, capsys):
    for name in ("model.safetensors", "config.json", "tokenizer.json", "README.md", TRAINING_INFO):
        assert (trained / name).is_file(), name
    info = load_card_facts(LISTWISE_CARD, trained)
    source_rows = len(read_train_set(train_set))
    assert (info.base_model, info.data, info.lam, info.seed) == (tiny_llm, str(train_set), 0.5, 3)
    assert (info.pos_aug, info.source_rows, info.data_rows) == (2, source_rows, 2 * source_rows)
    assert info.propensity["file"].endswith("propensity.json") and info.propensity["smoothing"]
    assert info.steps == 3 and info.global_batch == 2 and np.isfinite(info.train_loss)
    # The card states the passes actually made: 3 steps of 2 windows over data_rows windows.
    assert info.epochs_trained == pytest.approx(3 / math.ceil(info.data_rows / 2))
    card = (trained / "README.md").read_text()
    assert f"| epochs | {info.epochs_trained:.2f} trained (3 steps); " in card
    for fact in (
        tiny_llm,  # base
        "L = 0.5 · L_Rank-IPS + L_LM",  # λ and the IPS objective
        "propensity.json",  # propensity source
        "n = 2 rotations per window, on the fly",  # Pos-Aug
        str(train_set),  # data
        "| seed | 3 |",
    ):
        assert fact in card, fact


def test_listwise_test_loads_the_checkpoint(trained, beir_task, tmp_path):
    out = tmp_path / "after"
    code = main(
        ["listwise", "test", "--reranker", str(trained), "--task", str(beir_task), "--k", "4"]
        + ["--positions", "1,4", "--passage-tokens", "12", "--dtype", "float32"]
        + ["--out", str(out), "--no-progress", "--n-resamples", "50"]
    )
    assert code == 0
    summary = json.loads((out / "positions.json").read_text())
    assert summary["reranker_details"]["kind"] == "first"
    assert [p["position"] for p in summary["positions"]] == [1, 4]


def test_the_loss_decreases(tmp_path, tiny_llm):
    """Six steps on one window (rotated by Pos-Aug, n = 2): the logged loss goes down."""
    from hf_posbias.listwise.training.train import train_listwise

    doc_ids = [f"d{i}" for i in range(K)]
    row = {
        "query_id": "q",
        "query": "what is a walnut",
        "doc_ids": doc_ids,
        "passages": [f"passage {i} about topic {i}" for i in range(K)],
        "target": list(reversed(doc_ids)),
    }
    data = write_train_set(tmp_path / "one", [row], {})
    settings = ListwiseTrainingSettings(
        model=tiny_llm,
        data=str(data),
        out=str(tmp_path / "ckpt"),
        global_batch=2,
        pos_aug=2,
        max_steps=6,
        lr=3e-3,
        logging_steps=1,
        passage_tokens=8,
        card=False,
        progress=False,
    )
    result = train_listwise(settings)
    losses = [entry["loss"] for entry in result.log_history if "loss" in entry]
    assert result.steps == 6 and len(losses) == 6
    assert all(np.isfinite(losses)) and np.mean(losses[-2:]) < np.mean(losses[:2])
    assert {"rank_loss", "lm_loss"} <= set(result.log_history[0])
    assert (tmp_path / "ckpt" / TRAINING_INFO).is_file()
    assert not (tmp_path / "ckpt" / "README.md").exists()  # --no-card


def _one_line_error(capsys, args: list[str]) -> str:
    code = main(args)
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and "\n" not in err, err
    return err


def test_propensity_of_the_wrong_shape_is_refused(tmp_path, capsys, tiny_llm, train_set):
    propensity = write_propensity(tmp_path / "p.json", uniform_omega(4))
    out = tmp_path / "ckpt"
    args = train_args(tiny_llm, train_set, out, "--propensity", str(propensity))
    err = _one_line_error(capsys, args)
    assert "is 4×4 but the training windows hold 8 passages" in err
    assert not (out / "model.safetensors").exists()


def test_zero_propensity_on_a_visited_cell_names_smoothing(tmp_path, capsys, tiny_llm, train_set):
    # build-train targets keep the relevant document first: input 0 lands on rank 0 in some row
    # unless a relevant document was injected; a diagonal-free ω is 0 on every (i, i) cell.
    rows = read_train_set(train_set)
    visited_diagonal = any(
        row["target"].index(doc) == i for row in rows for i, doc in enumerate(row["doc_ids"])
    )
    assert visited_diagonal
    omega = np.ones((K, K)) - np.eye(K)
    propensity = write_propensity(tmp_path / "p.json", omega / omega.sum())
    err = _one_line_error(
        capsys, train_args(tiny_llm, train_set, tmp_path / "o", "--propensity", str(propensity))
    )
    assert "propensity matrix is 0 on" in err and "--smoothing" in err


def test_pos_aug_must_divide_the_window(tmp_path, capsys, tiny_llm, train_set):
    err = _one_line_error(capsys, train_args(tiny_llm, train_set, tmp_path / "o", "--pos-aug", "3"))
    assert "--pos-aug 3 does not divide the window size k=8" in err


def test_augmented_data_with_pos_aug_is_refused(tmp_path, capsys, tiny_llm, train_set):
    augmented = tmp_path / "aug"
    args = ["listwise", "augment", "--data", str(train_set), "--groups", "2"]
    assert main([*args, "--out", str(augmented)]) == 0
    capsys.readouterr()
    err = _one_line_error(capsys, train_args(tiny_llm, augmented, tmp_path / "o", "--pos-aug", "4"))
    assert "already augmented by posbias listwise augment (--groups 2)" in err
    assert "drop --pos-aug 4" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--lambda", "-1"], "--lambda must be >= 0, got -1.0"),
        (["--pos-aug", "0"], "--pos-aug must be >= 1, got 0"),
        (["--max-steps", "0"], "--max-steps must be >= 1, got 0"),
    ],
)
def test_bad_settings_are_one_line(tmp_path, capsys, tiny_llm, train_set, flags, message):
    err = _one_line_error(capsys, train_args(tiny_llm, train_set, tmp_path / "o", *flags))
    assert message in err


def test_ips_normalization_needs_a_propensity_file_and_mean1_scales_omega(
    tmp_path, capsys, tiny_llm, train_set
):
    from hf_posbias.listwise.training.losses import mean_ips_weight
    from hf_posbias.listwise.training.train import prepare_run
    from hf_posbias.listwise.training.trainset import target_ranks

    err = _one_line_error(
        capsys,
        train_args(tiny_llm, train_set, tmp_path / "o", "--ips-normalization", "mean1"),
    )
    assert "--ips-normalization scales IPS weights: give --propensity" in err
    omega = uniform_omega(K)
    propensity = str(write_propensity(tmp_path / "p.json", omega))
    runs = {
        how: prepare_run(
            ListwiseTrainingSettings(
                model=tiny_llm,
                data=str(train_set),
                out=str(tmp_path / how),
                propensity=propensity,
                ips_normalization=how,
            ),
            show_progress=False,
        )
        for how in ("paper", "mean1")
    }
    c = mean_ips_weight(omega, [target_ranks(row) for row in runs["paper"].rows])
    assert c == pytest.approx(K**4)  # uniform ω = 1/k²: every pair weighs k⁴
    np.testing.assert_allclose(runs["paper"].omega, omega)
    np.testing.assert_allclose(runs["mean1"].omega, omega * np.sqrt(c))
    assert runs["mean1"].propensity_info["ips_normalization"] == "mean1"
    assert runs["mean1"].propensity_info["mean_ips_weight"] == pytest.approx(c)
    # A propensity file without --ips-normalization gets Q26's Eq. 4 as printed (paper).
    default = prepare_run(
        ListwiseTrainingSettings(
            model=tiny_llm, data=str(train_set), out=str(tmp_path / "d"), propensity=propensity
        ),
        show_progress=False,
    )
    assert default.propensity_info["ips_normalization"] == "paper"
    np.testing.assert_allclose(default.omega, omega)


def test_windows_larger_than_window_are_refused(tiny_llm, train_set, tmp_path):
    from hf_posbias.listwise.training.train import prepare_run

    settings = ListwiseTrainingSettings(
        model=tiny_llm, data=str(train_set), out=str(tmp_path / "o"), global_batch=2, window=4
    )
    with pytest.raises(InputError, match="holds windows of 8 passages, more than --max-window 4"):
        prepare_run(settings, show_progress=False)


def test_module_entry_point(tmp_path, capsys, tiny_llm, train_set):
    """``python -m hf_posbias.listwise.training.train`` (what ``accelerate launch -m`` runs),
    in-process."""
    module_main = importlib.import_module("hf_posbias.listwise.training.train").main

    flags = ["--model", tiny_llm, "--data", str(train_set), "--global-batch", "1"]
    flags += ["--passage-tokens", "8", "--no-progress", "--no-card"]
    assert module_main([*flags, "--out", str(tmp_path / "bad"), "--pos-aug", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: --pos-aug 3 does not divide")
    assert module_main([*flags, "--out", str(tmp_path / "ok"), "--max-steps", "1"]) == 0
    assert "trained " in capsys.readouterr().out
    assert (tmp_path / "ok" / TRAINING_INFO).is_file()
