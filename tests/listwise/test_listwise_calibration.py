"""Slot calibration: removes a pure slot prior, leaves the BM25 control flat, refuses what it
cannot calibrate, and equals subtracting the content-free window's logits on a real LM."""

from __future__ import annotations

import json

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.calibration import (
    calibrated_rows,
    content_free_window,
    estimate_slot_priors,
)
from hf_posbias.listwise.experiments.controlled import run_controlled_test
from hf_posbias.listwise.experiments.experiment_settings import ControlledTestConfig
from hf_posbias.listwise.experiments.taskio import load_rerank_task


def test_calibration_removes_a_pure_slot_prior(beir_task, tmp_path, slot_biased):
    task = load_rerank_task(beir_task)
    relevant = {d for q in task.qrels.values() for d, g in q.items() if g > 0}
    config = ControlledTestConfig(k=6, n_resamples=100, calibrate=True)
    summary = run_controlled_test(
        slot_biased(relevant), task, tmp_path / "run", config, show_progress=False
    )
    plain = [r["ndcg_at_10"] for r in summary["positions"]]
    assert plain[0] == 1.0 and plain[-1] < 0.5  # the slot prior wins without calibration
    calibrated = json.loads((tmp_path / "run" / "calibrated" / "positions.json").read_text())
    values = [r["ndcg_at_10"] for r in calibrated["positions"]]
    assert values == [1.0] * 6 and calibrated["psi"] == 0.0
    assert summary["calibrated"]["psi"] == 0.0 and summary["calibrated"]["extra_windows"] == 1
    prior = json.loads((tmp_path / "run" / "calibration.json").read_text())["priors"]["6"]
    assert prior == [10.0, 8.0, 6.0, 4.0, 2.0, 0.0]


def test_bm25_control_stays_flat_under_calibration(beir_task, tmp_path):
    out = tmp_path / "bm25"
    args = ["listwise", "test", "--reranker", "bm25", "--task", str(beir_task), "--k", "6"]
    assert main([*args, "--out", str(out), "--calibrate", "--no-progress"]) == 0
    plain = json.loads((out / "positions.json").read_text())
    calibrated = json.loads((out / "calibrated" / "positions.json").read_text())
    assert calibrated["positions"] == plain["positions"]  # the same flat curve
    assert calibrated["psi"] == 0.0
    prior = json.loads((out / "calibration.json").read_text())["priors"]["6"]
    assert len(set(prior)) == 1  # the same text in every slot: a constant prior

    def rankings(path):
        return [json.loads(line)["ranking"] for line in path.read_text().splitlines()]

    assert rankings(out / "calibrated" / "per_query.jsonl") == rankings(out / "per_query.jsonl")


def test_calibration_refuses_rerankers_without_slot_scores_before_scoring(
    beir_task, tmp_path, slot_biased
):
    task = load_rerank_task(beir_task)
    generated = slot_biased(set(), kind="generate")
    config = ControlledTestConfig(k=6, calibrate=True)
    with pytest.raises(InputError, match="--calibrate needs a reranker") as err:
        run_controlled_test(generated, task, tmp_path / "g", config, show_progress=False)
    assert "\n" not in str(err.value) and generated.calls == 0


def test_calibration_needs_one_window_per_list():
    with pytest.raises(InputError, match="k 30 is larger than window 20"):
        ControlledTestConfig(k=30, calibrate=True)
    with pytest.raises(InputError, match="one window per list"):
        calibrated_rows([{"input": ["a"], "ranking": ["a"], "scores": [0.0], "windows": 2}], {})


def test_first_prior_is_the_content_free_windows_logits(tiny_llm, tmp_path):
    from hf_posbias.rerankers.loading import load_reranker

    reranker = load_reranker(tiny_llm, dtype="float32", device="cpu", window=5)
    calibration = estimate_slot_priors(reranker, [3, 5], tmp_path)
    assert calibration["windows"] == 2
    for size in (3, 5):
        [expected] = reranker.window_logits([content_free_window(size)])
        assert calibration["priors"][size] == pytest.approx(expected, abs=1e-5)
    before = reranker.stats.windows
    again = estimate_slot_priors(reranker, [5], tmp_path)  # cached in the run folder
    assert reranker.stats.windows == before and again["priors"][5] == calibration["priors"][5]
