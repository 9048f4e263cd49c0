"""The protocol of each task entry: scoring, buckets, bases, per-domain folders; the paper's
spec follows YHP26 (FineWeb-PosQ and PosIR on three of the eight bases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_posbias.errors import InputError
from hf_posbias.study.protocol import TaskEntry, expand_domains, parse_task_entry, task_entries
from hf_posbias.study.spec import StudySpec, load_spec

REPO = Path(__file__).resolve().parents[2]
YHP26_THREE = ["modernbert-base", "modernbert-large", "qwen3-0.6b"]


@pytest.mark.parametrize(
    ("entry", "protocol"),
    [
        ("SQuAD-PosQ", ("pytrec_eval", "task", "default")),
        ({"task": "SQuAD-PosQ"}, ("pytrec_eval", "task", "default")),
        ({"task": "SQuAD-PosQ", "scoring": "zeng2025"}, ("zeng2025", "inclusive", "zeng2025")),
        ({"task": "PosIR", "buckets": "posir20"}, ("pytrec_eval", "posir20", "posir")),
        ({"task": "PosIR", "scoring": "posir"}, ("pytrec_eval", "posir20", "posir")),
        ({"task": "T", "scoring": "default"}, ("pytrec_eval", "task", "default")),
    ],
)
def test_entries_map_onto_the_protocols_of_posbias_evaluate(entry, protocol):
    parsed = parse_task_entry(entry)
    assert (parsed.scoring, parsed.buckets, parsed.evaluate_scoring) == protocol


def test_a_plain_entry_keeps_its_meaning_and_record():
    spec = StudySpec(bases=["bert-base"], data="d", tasks=["SQuAD-PosQ", {"task": "T"}])
    assert spec.tasks == ["SQuAD-PosQ", "T"]  # the identity of existing studies is unchanged
    pinned = {"task": "F", "scoring": "zeng2025", "bases": ["bert-base"]}
    spec = StudySpec(bases=["bert-base", "gpt2-medium"], data="d", tasks=[pinned])
    assert spec.tasks == [{**pinned, "buckets": "inclusive"}]
    [entry] = task_entries(spec.tasks, spec.bases)
    assert entry.runs_on("bert-base") and not entry.runs_on("gpt2-medium")


@pytest.mark.parametrize(
    "entry",
    [{"scoring": "zeng2025"}, {"task": "T", "bases": "bert-base"}, {"task": "T", "bases": []}, 3],
)
def test_malformed_entries_are_one_line(entry):
    with pytest.raises(InputError) as err:
        task_entries([entry], ["bert-base"])
    assert "\n" not in str(err.value) and str(err.value).startswith("tasks:")


def test_a_folder_of_domain_folders_is_one_task_per_domain(tmp_path):
    for domain in ("law", "news"):
        (tmp_path / "posir" / domain).mkdir(parents=True)
        (tmp_path / "posir" / domain / "task.json").write_text("{}")
    entry = TaskEntry(str(tmp_path / "posir"), bases=("b",))
    parts = expand_domains(entry)
    assert [Path(p.task).name for p in parts] == ["law", "news"]
    assert all(p.bases == ("b",) for p in parts)
    merged = TaskEntry(str(tmp_path / "posir" / "law"))
    assert expand_domains(merged) == [merged]


def test_paper_spec_runs_fineweb_and_posir_on_three_bases():
    spec = load_spec(REPO / "studies" / "yhp26.yaml")
    entries = {e.task: e for e in task_entries(spec.tasks, spec.bases)}
    assert len(spec.bases) == 8
    assert entries["SQuAD-PosQ"].bases is None
    for name, entry in entries.items():
        if "fineweb" in name.lower() or "posir" in name.lower():
            assert list(entry.bases) == YHP26_THREE, name
    assert any("posir" in name.lower() for name in entries)


def test_exclude_truncated_is_part_of_the_study_and_reaches_every_evaluation(monkeypatch, tmp_path):
    import hf_posbias.evaluation.runs.runner as runner
    from hf_posbias.study.layout import StudyModel, StudyTask
    from hf_posbias.study.run import evaluate_study_model

    spec = StudySpec(bases=["bert-base"], data="d", tasks=["T"], exclude_truncated=True)
    assert spec.identity()["exclude_truncated"] is True
    calls = []

    def evaluate(*args, out, **kwargs):
        out.mkdir(parents=True)  # the marker is written into the run folder
        calls.append(kwargs)

    monkeypatch.setattr(runner, "evaluate_model", evaluate)
    monkeypatch.setattr(
        "hf_posbias.evaluation.runs.mteb_models.load_mteb_model", lambda *a, **k: "m"
    )
    monkeypatch.setattr("hf_posbias.study.run.evaluation_fingerprint", lambda m, s: "fp")
    model = StudyModel("bert-base", "base", None, str(tmp_path / "m"))
    tasks = [StudyTask("T", "T", "T", "f", scoring="zeng2025"),
             StudyTask("U", "U", "U", "g", bases=("gpt2-medium",))]  # fmt: skip
    assert evaluate_study_model(model, tasks, spec, tmp_path) == (1, 0)
    assert [(c["scoring"], c["exclude_truncated"]) for c in calls] == [("zeng2025", True)]
