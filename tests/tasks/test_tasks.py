"""Position tasks as mteb AbsTaskRetrieval: metadata, one subset, PSI from mteb, registry, Hub."""

from __future__ import annotations

import json
import shutil

import pytest
from task_fixtures import THIRDS, wiki_task

from hf_posbias.corpus.documents import segment_spans
from hf_posbias.errors import BackendError, InputError
from hf_posbias.tasks.benchmark_registry import TASKS_DIR_ENV
from hf_posbias.tasks.mteb_tasks import get_task, named_task_class, task_names
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo


@pytest.fixture(scope="module")
def folder(shared_data, tmp_path_factory):
    return wiki_task(shared_data, tmp_path_factory.mktemp("tasks") / "wiki", n_docs=9)


def test_metadata_from_task_json_is_complete(folder):
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    task = get_task(folder)
    assert isinstance(task, AbsTaskRetrieval)
    md = task.metadata
    assert md.name == "WikiSentences"
    assert md.eval_langs == ["eng-Latn"]
    assert md.hf_subsets == ["default"]  # every query in one subset: the corpus is encoded once
    assert (md.type, md.main_score, md.eval_splits) == ("Retrieval", "ndcg_at_10", ["test"])
    assert md.license == "cc-by-sa-3.0"
    assert md.dataset["path"] == str(folder) and len(md.dataset["revision"]) == 16
    assert md.is_filled()
    assert task.buckets == ["begin", "middle", "end"]


def test_all_queries_are_one_subset(folder):
    task = get_task(folder)
    task.load_data()
    split = task.dataset["default"]["test"]
    assert len(split["corpus"]) == 9
    assert sorted(split["queries"]["id"]) == sorted(q["id"] for q in task.task_data.queries)
    assert set(split["relevant_docs"]) == set(split["queries"]["id"])
    assert task.bucket_counts == {"begin": 3, "middle": 3, "end": 3}


def test_mteb_evaluate_alone_returns_psi_and_the_position_scores(folder, tmp_path):
    import mteb

    from hf_posbias.evaluation.runs.search import BM25Model
    from hf_posbias.statistics.psi import psi

    task = get_task(folder)
    cache = mteb.ResultCache(cache_path=tmp_path)
    result = mteb.evaluate(BM25Model(), task, cache=cache, co2_tracker=False)
    [entry] = result.task_results[0].scores["test"]
    position = entry["position"]
    assert position["buckets"] == ["begin", "middle", "end"]
    assert position["n_queries"] == {"begin": 3, "middle": 3, "end": 3}
    assert entry["psi"] == pytest.approx(psi(list(position["ndcg_at_10"].values())))
    assert entry["position_mean"] == pytest.approx(sum(position["ndcg_at_10"].values()) / 3)
    # The macro mean of the buckets equals mteb's own nDCG@10 here (equal bucket sizes).
    assert entry["position_mean"] == pytest.approx(entry["ndcg_at_10"], abs=1e-5)
    assert result.task_results[0].get_score(getter=lambda s: s["psi"]) == entry["psi"]
    # mteb's own result file carries PSI too.
    path = cache.get_task_result_path(task.metadata.name, BM25Model().mteb_model_meta)
    saved = json.loads(path.read_text())
    assert saved["scores"]["test"][0]["psi"] == entry["psi"]


def test_descriptive_statistics_work(folder):
    stats = get_task(folder).calculate_descriptive_statistics()
    assert stats["test"]["num_queries"] == 9
    assert stats["test"]["num_documents"] == 9


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
    # The data loader reads the same header: a truncated task.json is one line there too.
    truncated = tmp_path / "truncated"
    shutil.copytree(folder, truncated)
    (truncated / "task.json").write_text('{"name": "x",')
    with pytest.raises(InputError, match=r"task.json: not valid JSON"):
        PositionTaskData.load(truncated)


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
        "FEVER-Evidence",
        "HotpotQA-Evidence",
    ]
    squad = named_task_class("SQuAD-PosQ")
    assert squad.card.buckets[0] == "0-100" and "Zeng" in squad.metadata.bibtex_citation
    assert squad.metadata.reference.startswith("https://arxiv.org/")
    assert len(named_task_class("PosIR").card.buckets) == 20  # what its builder makes
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
    assert task.buckets == ["begin", "middle", "end"]


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


def test_public_classes_are_ordinary_classes_one_per_card():
    import inspect

    import hf_posbias.tasks.mteb_tasks as public
    from hf_posbias.tasks.benchmark_registry import benchmarks, cards, mteb_license
    from hf_posbias.tasks.mteb_tasks import ClimateFEVEREvidence, SciFactEvidence

    assert SciFactEvidence is named_task_class("SciFact-Evidence")
    assert SciFactEvidence.__module__ == "hf_posbias.tasks.mteb_tasks"
    assert "class SciFactEvidence(PositionRetrievalTask)" in inspect.getsource(SciFactEvidence)
    assert issubclass(ClimateFEVEREvidence, public.PositionRetrievalTask)
    # One registry: every card has a class (and vice versa) and a builder verb.
    assert set(public.NAMED_TASKS) == set(cards())
    for name, card in cards().items():
        cls = public.NAMED_TASKS[name]
        assert cls.__name__ == card.class_name and getattr(public, card.class_name) is cls
        assert mteb_license(card.license) == card.license  # spelled once, as mteb wants
    built = {c.name for b in benchmarks().values() for c in b.cards}
    assert built == set(cards())


def test_builders_write_the_cards_licence_and_citation(shared_data, tmp_path):
    from hf_posbias.tasks.builders.scifact import CARD, build_scifact

    data = build_scifact(shared_data / "scifact_allenai")
    assert (data.info.license, data.info.citation) == (CARD.license, CARD.citation)
    task = get_task(data.save(tmp_path / "scifact"))
    assert type(task).__name__ == "SciFactEvidence"
    assert task.metadata.license == CARD.license


def test_span_outside_the_document_is_a_counted_warning(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    data = PositionTaskData.load(copy)
    data.queries[0]["evidence_end"] = data.queries[0]["doc_length"] + 50
    data.save(copy)
    task = get_task(copy)
    task.load_data()
    assert task.load_warnings == [
        "WikiSentences: 1 queries: evidence span outside the document "
        "(kept; relative positions clipped)"
    ]


def test_every_task_class_computes_descriptive_statistics(folder):
    from hf_posbias.tasks.mteb_tasks import NAMED_TASKS, PositionRetrievalTask

    for cls in [PositionRetrievalTask, *NAMED_TASKS.values()]:
        stats = cls(folder).calculate_descriptive_statistics()
        assert stats["test"]["num_queries"] == 9, cls.__name__
        assert stats["test"]["relevant_docs_statistics"]["num_relevant_docs"] == 9


def test_wiki_task_is_valid_and_balanced(shared_data, tmp_path):
    folder = wiki_task(shared_data, tmp_path / "t", n_docs=12)
    data = PositionTaskData.load(folder)
    assert data.bucket_counts() == {"begin": 4, "middle": 4, "end": 4}
    for q in data.queries:
        doc = next(d for d in data.corpus if d["id"] == "d" + q["id"][1:])
        # The evidence span really is the query sentence, inside its third.
        assert doc["text"][q["evidence_start"] : q["evidence_end"]] == q["text"]
        spans = segment_spans(doc["text"], 3)
        lo, hi = spans[THIRDS.index(q["bucket"])]
        assert lo <= q["evidence_start"] < q["evidence_end"] <= hi
