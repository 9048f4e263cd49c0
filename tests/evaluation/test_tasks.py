"""Position tasks as mteb AbsTaskRetrieval: metadata, one subset per bucket, registry, Hub path."""

from __future__ import annotations

import json
import shutil

import pytest
from test_tasks_fixtures import wiki_task

from hf_posbias.errors import BackendError, InputError
from hf_posbias.evaluation.taskdata import PositionTaskData, TaskInfo
from hf_posbias.evaluation.tasks import TASKS_DIR_ENV, get_task, named_task_class, task_names


@pytest.fixture(scope="module")
def folder(shared_data, tmp_path_factory):
    return wiki_task(shared_data, tmp_path_factory.mktemp("tasks") / "wiki", n_docs=9)


def test_metadata_from_task_json_is_complete(folder):
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    task = get_task(folder)
    assert isinstance(task, AbsTaskRetrieval)
    md = task.metadata
    assert md.name == "WikiSentences"
    assert md.eval_langs == {b: ["eng-Latn"] for b in ("begin", "middle", "end")}
    assert md.hf_subsets == ["begin", "middle", "end"]
    assert (md.type, md.main_score, md.eval_splits) == ("Retrieval", "ndcg_at_10", ["test"])
    assert md.license == "cc-by-sa-3.0"
    assert md.dataset["path"] == str(folder) and len(md.dataset["revision"]) == 16
    assert md.is_filled()
    assert type(task).metadata == md  # class-level metadata matches the folder too


def test_each_bucket_is_a_subset_over_the_same_corpus(folder):
    task = get_task(folder)
    task.load_data()
    subsets = [task.dataset[b]["test"] for b in ("begin", "middle", "end")]
    assert subsets[0]["corpus"] is subsets[1]["corpus"] is subsets[2]["corpus"]
    assert len(subsets[0]["corpus"]) == 9
    for bucket, split in zip(("begin", "middle", "end"), subsets):
        qids = list(split["queries"]["id"])
        assert len(qids) == 3
        assert set(split["relevant_docs"]) == set(qids)
        expected = {q["id"] for q in task.task_data.queries if q["bucket"] == bucket}
        assert set(qids) == expected


def test_changed_data_changes_the_dataset_revision(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    assert get_task(copy).metadata.revision == get_task(folder).metadata.revision
    data = PositionTaskData.load(copy)
    data.queries = data.queries[:-1]
    data.qrels = data.qrels[:-1]
    data.save(copy)
    assert get_task(copy).metadata.revision != get_task(folder).metadata.revision


def test_unknown_name_and_bad_folders_are_one_line_errors(folder, tmp_path):
    with pytest.raises(InputError) as err:
        get_task("SQuAD-PosX")
    message = str(err.value)
    assert "\n" not in message
    assert all(name in message for name in task_names())
    with pytest.raises(InputError, match="does not exist"):
        get_task(str(tmp_path / "nope"))
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / "corpus.parquet").unlink()
    with pytest.raises(InputError, match="missing corpus.parquet"):
        get_task(broken)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no task.json"):
        get_task(tmp_path / "empty")


def test_load_reports_contract_violations(tmp_path):
    bad = PositionTaskData(
        info=TaskInfo(name="Bad", description="d", buckets=["begin"]),
        corpus=[{"id": "d1", "title": "", "text": "x y"}],
        queries=[
            {
                "id": "q1",
                "text": "x",
                "bucket": "begin",
                "evidence_start": 0,
                "evidence_end": 1,
                "doc_length": 3,
            }
        ],
        qrels=[{"query_id": "q1", "doc_id": "d1", "score": 1}],
    ).save(tmp_path / "bad")
    # A query without qrels written behind the validator's back.
    from hf_posbias.shards import write_parquet

    write_parquet(
        [
            {
                "id": "q1",
                "text": "x",
                "bucket": "begin",
                "evidence_start": 0,
                "evidence_end": 1,
                "doc_length": 3,
            },
            {
                "id": "q2",
                "text": "y",
                "bucket": "begin",
                "evidence_start": 2,
                "evidence_end": 3,
                "doc_length": 3,
            },
        ],
        bad / "queries.parquet",
    )
    task = get_task(bad)
    with pytest.raises(InputError, match="query 'q2' has no qrels"):
        task.load_data()


def test_named_tasks_registry_and_local_folder(folder, tmp_path, monkeypatch):
    assert task_names() == [
        "SQuAD-PosQ",
        "SQuAD-PosQ-tiny",
        "FineWeb-PosQ",
        "FineWeb-PosQ-tiny",
        "PosIR",
        "SciFact-Evidence",
        "ClimateFEVER-Evidence",
    ]
    squad = named_task_class("SQuAD-PosQ")
    assert squad.metadata.hf_subsets[0] == "0-100" and "Zeng" in squad.metadata.bibtex_citation
    assert squad.metadata.reference.startswith("https://arxiv.org/")
    for name in task_names():
        assert named_task_class(name).metadata.is_filled()

    # $POSBIAS_TASKS_DIR/<name> holds a built folder: its buckets replace the defaults.
    root = tmp_path / "tasks"
    shutil.copytree(folder, root / "SciFact-Evidence")
    meta = json.loads((root / "SciFact-Evidence" / "task.json").read_text())
    meta["name"] = "SciFact-Evidence"
    (root / "SciFact-Evidence" / "task.json").write_text(json.dumps(meta))
    monkeypatch.setenv(TASKS_DIR_ENV, str(root))
    task = get_task("scifact-evidence")  # names are case-insensitive
    assert task.folder == root / "SciFact-Evidence"
    assert task.metadata.name == "SciFact-Evidence"
    assert "Wadden" in task.metadata.bibtex_citation  # the card fills the citation
    task.load_data()
    assert task.hf_subsets == ["begin", "middle", "end"]


def test_named_task_downloads_from_the_hub(folder, monkeypatch):
    import huggingface_hub

    calls = []

    def fake_snapshot_download(**kwargs):
        calls.append(kwargs)
        return str(folder)

    monkeypatch.delenv(TASKS_DIR_ENV, raising=False)
    monkeypatch.setenv("POSBIAS_HUB_NAMESPACE", "my-org")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    task = get_task("FineWeb-PosQ-tiny")
    assert calls == []  # nothing is fetched before the data is needed
    task.load_data()
    assert calls[0]["repo_id"] == "my-org/FineWeb-PosQ-tiny"
    assert calls[0]["repo_type"] == "dataset"
    assert task.metadata.dataset["path"] == "my-org/FineWeb-PosQ-tiny"
    assert sum(task.bucket_counts.values()) == 9

    def failing(**kwargs):
        raise OSError("offline mode is enabled\nmore lines")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", failing)
    with pytest.raises(BackendError, match="cannot download task repo 'my-org/PosIR'"):
        get_task("PosIR").load_data()


def test_public_reexport():
    import hf_posbias.tasks as public

    assert public.get_task is get_task
    assert public.SQuADPosQ is named_task_class("SQuAD-PosQ")
    assert public.PositionRetrievalTask.__name__ == "PositionRetrievalTask"
