"""A position task's Hub repo folder and ``posbias benchmark publish`` (HfApi at the boundary)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hub_boundary import CapturingHfApi, capture_uploads
from task_fixtures import toy_position_records

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.publish.task_repo import TASK_FILES, write_task_repo
from hf_posbias.rows.readers import read_dataset
from hf_posbias.tasks.builders.jsonl import build_from_records
from hf_posbias.tasks.mteb_tasks import folder_revision, get_task
from hf_posbias.tasks.taskdata import PositionTaskData


@pytest.fixture
def toy_task(tmp_path: Path) -> Path:
    return build_from_records(toy_position_records(12), name="ToyPos").save(tmp_path / "task")


@pytest.fixture
def hub_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[CapturingHfApi]:
    return capture_uploads(monkeypatch, tmp_path / "uploaded")


def test_the_repo_folder_is_the_task_a_card_and_eval_yaml(toy_task, tmp_path) -> None:
    repo = write_task_repo(toy_task, tmp_path / "hub", repo_id="me/ToyPos")
    for name in TASK_FILES:  # byte for byte: the same data revision as the built folder
        assert (repo / name).read_bytes() == (toy_task / name).read_bytes()
    assert folder_revision(repo) == folder_revision(toy_task)
    task = PositionTaskData.load(repo)
    assert task.bucket_counts() == {"begin": 4, "middle": 4, "end": 4}
    # the card's configs load the files (mteb's layout: default = the relevance judgements)
    assert len(read_dataset(repo, "queries", split="test")) == 12
    assert read_dataset(repo, "default", split="test")[0].keys() == {"query_id", "doc_id", "score"}
    assert len(read_dataset(repo, "corpus", split="test")) == 12
    card = (repo / "README.md").read_text()
    assert "| `ToyPos_one_minus_psi` |" in card and 'load_dataset("me/ToyPos"' in card
    assert "| middle | 4 |" in card
    ids = [t["id"] for t in yaml.safe_load((repo / "eval.yaml").read_text())["tasks"]]
    assert ids == [t.id for t in get_task(toy_task)._create_task_hf_config().tasks]


def test_a_foreign_folder_is_kept_unless_overwrite(toy_task, tmp_path) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="does not look like a dataset repo"):
        write_task_repo(toy_task, tmp_path / "hub")
    write_task_repo(toy_task, tmp_path / "hub", overwrite=True)
    assert not (tmp_path / "hub" / "notes.txt").exists()
    write_task_repo(toy_task, tmp_path / "hub")  # its own folder is rewritten
    with pytest.raises(InputError, match="beside the task folder"):
        write_task_repo(toy_task, toy_task)


def test_publish_commits_to_an_owned_repo_and_proposes_to_another(
    toy_task, tmp_path, hub_api, capsys
) -> None:
    argv = ["benchmark", "publish", "--task", str(toy_task), "--out", str(tmp_path / "hub")]
    assert main([*argv, "--hub-repo", "posbias-test/ToyPos"]) == 0
    [(_, create), (_, upload)] = hub_api.calls
    assert create["repo_type"] == "dataset" and upload["create_pr"] is False
    assert sorted(p.name for p in (hub_api.root / "posbias-test/ToyPos").iterdir()) == sorted(
        [".gitattributes", "README.md", "eval.yaml", *TASK_FILES]
    )
    capsys.readouterr()
    # The folder's card names its repo: another repo is another run of the folder (--overwrite).
    assert main([*argv, "--hub-repo", "hf-posbias/ToyPos", "--overwrite"]) == 0
    assert hub_api.calls[-1][1]["create_pr"] is True
    assert "/discussions/1" in capsys.readouterr().out


def test_publish_without_a_token_writes_nothing(toy_task, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    out = tmp_path / "hub"
    argv = ["benchmark", "publish", "--task", str(toy_task), "--out", str(out)]
    assert main([*argv, "--hub-repo", "me/ToyPos"]) == 2
    assert "no Hub token: pass --hub-token" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--hub-repo", "no-owner"]) == 2
    assert main(argv) == 0 and (out / "eval.yaml").is_file()  # no --hub-repo: the folder only
