"""Publishing a study: checkpoints with model-index cards, results as a dataset repo (offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # a 2 × 4 study: trains 8 runs, evaluates 10 models


def test_publish_pushes_checkpoints_and_results_at_the_hfapi_boundary(study, monkeypatch):
    import huggingface_hub
    from datasets import load_dataset

    from hf_posbias.study.layout import (
        eval_dir,
        evaluation_done,
        model_fingerprint,
        resolve_tasks,
        study_models,
    )
    from hf_posbias.study.publish import publish_study
    from hf_posbias.study.spec import spec_from_folder

    sent: list[dict] = []

    def fake_create(self, repo_id, **kw):
        assert self.token == "hf_test"

    def fake_upload(self, *, folder_path, repo_id, repo_type, **kw):
        card = (Path(folder_path) / "README.md").read_text()
        sent.append({"repo": repo_id, "type": repo_type, "card": card})

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", fake_create)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", fake_upload)
    lines = publish_study(study, "my-org", token="hf_test")
    # Per checkpoint: the upload, and its task (a folder built here) left off the Hub's boards.
    assert len(lines) == 17
    left_out = [line for line in lines if "not sent to the Hub's benchmark boards" in line]
    assert len(left_out) == 8 and all("TinyStudyTask" in line for line in left_out)
    models = [s for s in sent if s["type"] == "model"]
    assert sorted(s["repo"] for s in models) == sorted(
        f"my-org/posbias-{b}-{c}"
        for b in ("tiny-bert", "all-MiniLM-L6-v2")
        for c in ("begin", "middle", "end", "uniform")
    )
    uniform = next(s for s in models if s["repo"] == "my-org/posbias-tiny-bert-uniform")
    meta = yaml.safe_load(uniform["card"].split("---")[1])
    [entry] = meta["model-index"]
    [result] = entry["results"]
    metrics = {m["type"]: m["value"] for m in result["metrics"]}
    assert result["dataset"]["name"] == "TinyStudyTask"
    assert {"ndcg_at_10", "psi", "psi_ci_low", "ndcg_at_10_begin_ci_high"} <= set(metrics)
    report = json.loads((study / "report" / "report.json").read_text())
    cell = next(
        c for c in report["cells"] if c["model"] == "tiny-bert" and c["config"] == "uniform"
    )
    assert metrics["psi"] == round(cell["psi"], 6)
    [results] = [s for s in sent if s["type"] == "dataset"]
    assert results["repo"] == "my-org/posbias-study-results"

    folder = study / "hub" / "results"
    cells = load_dataset(str(folder), "cells", split="train")
    assert len(cells) == 10
    per_query = load_dataset(str(folder), "per_query", split="train")
    assert len(per_query) == sum(sum(c["n_queries"].values()) for c in report["cells"])

    # The rewritten cards leave the models' fingerprints, so nothing is re-evaluated.
    spec = spec_from_folder(study)
    tasks = resolve_tasks(spec.tasks)
    for model in study_models(spec, study):
        assert evaluation_done(eval_dir(study, model, tasks[0]), model_fingerprint(model), tasks[0])
