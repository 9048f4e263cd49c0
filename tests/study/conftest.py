"""Fixtures of the study tests: the inputs of a 2 × 4 study and the study itself (run once)."""

from __future__ import annotations

import json

import pytest
from study_fixtures import WORDS, files_with_mtimes, write_task, write_train_data

from hf_posbias.cli import main


@pytest.fixture(scope="session")
def study_inputs(tmp_path_factory: pytest.TempPathFactory, minilm_path: str) -> dict:
    """Training data, a task, a tiny random BERT base and a spec file of the 2 × 4 study."""
    from hf_posbias.testing import build_tiny_checkpoint

    root = tmp_path_factory.mktemp("study-inputs")
    data = write_train_data(root / "train")
    task = write_task(root / "task")
    tiny = build_tiny_checkpoint("bert", root / "tiny-bert", extra_text=" ".join(WORDS))
    spec = {
        "bases": [tiny, "all-MiniLM-L6-v2"],  # the packaged model (minilm_path: installed)
        "configs": ["begin", "middle", "end", "uniform"],
        "data": data,
        "tasks": [task],
        "training": {"max_steps": 1, "global_batch": 4, "logging_steps": 1},
        "bootstrap": 50,
        "seed": 3,
    }
    spec_path = root / "study.yaml"
    spec_path.write_text(json.dumps(spec))  # JSON is YAML
    json_path = root / "study.json"
    json_path.write_text(json.dumps(spec))
    return {"root": root, "data": data, "task": task, "tiny": tiny, "spec": str(spec_path),
            "spec_json": str(json_path), "minilm": "all-MiniLM-L6-v2"}  # fmt: skip


@pytest.fixture(scope="session")
def study(study_inputs, tmp_path_factory):
    """The study, interrupted after its first evaluation and resumed; returns its folder."""
    import hf_posbias.evaluation.runs.runner as runner

    out = tmp_path_factory.mktemp("study") / "s"
    original = runner.evaluate_model
    calls = []

    def interrupted(*args, **kwargs):
        if calls:
            raise KeyboardInterrupt
        calls.append(args[0])
        return original(*args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(runner, "evaluate_model", interrupted)
    try:
        code = main(["study", "run", study_inputs["spec"], "--out", str(out), "--in-process"])
    finally:
        mp.undo()
    assert code == 130 and len(calls) == 1
    first = files_with_mtimes(out)
    markers = [p for p in first if p.endswith("posbias_study_eval.json")]
    assert len(markers) == 1  # exactly the one finished evaluation
    assert main(["study", "run", study_inputs["spec"], "--out", str(out), "--in-process"]) == 0
    # The evaluation done before the kill was not redone.
    assert files_with_mtimes(out)[markers[0]] == first[markers[0]]
    return out
