"""A redone evaluation of a study replaces its mteb result files instead of keeping the stale ones
next to them (mteb files results by model revision: a model folder whose card or weights changed
gets a new revision folder)."""

from __future__ import annotations

import json
from pathlib import Path

from hf_posbias.study.layout import StudyModel, StudyTask, eval_dir
from hf_posbias.study.run import evaluate_study_model
from hf_posbias.study.spec import StudySpec


def test_a_redone_evaluation_leaves_one_result_file(tmp_path, monkeypatch) -> None:
    import hf_posbias.evaluation.runs.mteb_models as mteb_models
    import hf_posbias.evaluation.runs.runner as runner

    model_folder = tmp_path / "model"
    model_folder.mkdir()
    (model_folder / "weights.bin").write_bytes(b"w")
    model = StudyModel(base="b", config="uniform", pooling=None, folder=str(model_folder))
    task = StudyTask(spec="t", name="Task", folder=str(tmp_path / "task"), fingerprint="f")
    spec = StudySpec(bases=["b"], data="d", tasks=["t"], configs=["uniform"])
    out = tmp_path / "study"
    revision = iter(["local-old", "local-new"])

    def fake_evaluate(loaded, tasks, *, out, **kwargs):
        """What mteb leaves: one result file under the model's current revision."""
        target = Path(out) / runner.RESULTS_DIRNAME / "results" / "model" / next(revision)
        target.mkdir(parents=True)
        (target / "Task.json").write_text(json.dumps({"task_name": "Task"}))

    monkeypatch.setattr(runner, "evaluate_model", fake_evaluate)
    monkeypatch.setattr(
        mteb_models, "load_mteb_model", lambda folder, remedy=None, settings=None: object()
    )
    assert evaluate_study_model(model, [task], spec, out) == (1, 0)
    # The model changes (retrained, or its card rewritten): the evaluation is redone.
    (model_folder / "weights.bin").write_bytes(b"w2")
    assert evaluate_study_model(model, [task], spec, out) == (1, 0)
    results = sorted(eval_dir(out, model, task).rglob("Task.json"))
    assert [p.parent.name for p in results] == ["local-new"]
