"""A position task's eval.yaml: mteb's content with the board's ids, the path mteb pushes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from task_fixtures import hub_snapshot, toy_position_records

from hf_posbias.tasks.builders.jsonl import build_from_records
from hf_posbias.tasks.hub_benchmark import (
    board_task_ids,
    from_hub_value,
    hub_value,
    snapshot_origin,
    write_eval_yaml,
)
from hf_posbias.tasks.mteb_tasks import get_task


@pytest.fixture
def toy_task(tmp_path: Path) -> Path:
    return build_from_records(toy_position_records(9), name="ToyPos").save(tmp_path / "task")


def test_eval_yaml_is_mteb_s_with_the_ids_a_position_board_ranks(toy_task, tmp_path) -> None:
    from mteb._hf_integration.eval_model import HFEvalMeta

    path = write_eval_yaml(get_task(toy_task), tmp_path / "repo")
    meta = HFEvalMeta.model_validate(yaml.safe_load(path.read_text()))
    assert meta.evaluation_framework == "mteb" and meta.name == "ToyPos"
    ids = board_task_ids("ToyPos", ["begin", "middle", "end"])
    assert [t.id for t in meta.tasks] == ["ToyPos", "ToyPos_default_test", *ids.all()]
    assert {(t.config, t.split) for t in meta.tasks[1:]} == {("default", "test")}
    assert meta.to_yaml() == path.read_text()  # mteb's own serialisation, as written


def test_mteb_s_push_path_uploads_what_the_repo_folder_holds(toy_task, tmp_path, monkeypatch):
    """mteb's ``push_eval_to_hub`` (given the ``dataset["name"]`` key it reads, which mteb 2.26's
    metadata lacks) uploads the file the toolkit writes, and merges an existing one as mteb
    merges: the other tasks' ids kept, all sorted."""
    import huggingface_hub
    import mteb.abstasks.abstask as abstask

    task = get_task(toy_task)
    written = write_eval_yaml(task, tmp_path / "repo").read_text()
    with pytest.raises(KeyError, match="name"):
        task.push_eval_to_hub()  # mteb 2.26: why the toolkit uploads the folder instead
    sent: list[dict] = []

    def upload_file(**kwargs):
        sent.append({**kwargs, "text": Path(kwargs["path_or_fileobj"]).read_text()})

    monkeypatch.setattr(huggingface_hub, "upload_file", upload_file)
    monkeypatch.setattr(abstask, "_get_file_on_hub", lambda **kw: None)
    task.metadata.dataset["name"] = "me/ToyPos"
    task.push_eval_to_hub(create_pr=True)
    assert sent[0]["text"] == written
    assert (sent[0]["repo_id"], sent[0]["path_in_repo"], sent[0]["create_pr"]) == (
        "me/ToyPos",
        "eval.yaml",
        True,
    )
    other = tmp_path / "other.yaml"
    other.write_text("name: ToyPos\ndescription: d\ntasks:\n- id: Another_task\n")
    monkeypatch.setattr(abstask, "_get_file_on_hub", lambda **kw: str(other))
    task.push_eval_to_hub()
    merged = [t["id"] for t in yaml.safe_load(sent[1]["text"])["tasks"]]
    assert "Another_task" in merged and merged == sorted(merged)
    assert {t["id"] for t in yaml.safe_load(written)["tasks"]} < set(merged)


def test_a_multilingual_task_names_its_position_ids_by_subset(tmp_path) -> None:
    data = build_from_records(toy_position_records(6), name="Multi")
    data.info.extra["eval_langs"] = ["eng-Latn", "deu-Latn"]
    task = get_task(data.save(tmp_path / "multi"))
    ids = [t.id for t in task._create_task_hf_config().tasks]
    assert "Multi_deu-Latn_position_mean" in ids and "Multi_eng-Latn_one_minus_psi" in ids
    assert "Multi_position_mean" not in ids


def test_hub_values_are_mteb_s_percentages() -> None:
    assert hub_value(0.123456789) == 12.34568  # mteb rounds its entries to 5 decimals
    assert from_hub_value(hub_value(0.123456789)) == 0.1234568
    assert from_hub_value(hub_value(1.0)) == 1.0


def test_a_downloaded_task_knows_its_repo_and_commit(tmp_path) -> None:
    data = build_from_records(toy_position_records(6), name="ToyPos")
    folder = hub_snapshot(tmp_path, "me/ToyPos", data, commit="ab" * 20)
    assert get_task(folder).hub_origin == ("me/ToyPos", "ab" * 20)
    assert get_task(data.save(tmp_path / "built")).hub_origin is None
    # a snapshots folder whose name is not a commit, or a model repo, is not a dataset download
    assert snapshot_origin(tmp_path / "hub" / "datasets--me--x" / "snapshots" / "main") is None
    model = tmp_path / "hub" / "models--me--m" / "snapshots" / ("ab" * 20)
    assert snapshot_origin(model) is None
