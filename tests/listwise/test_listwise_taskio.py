"""The listwise commands' corpus: held once, as the reader's arrow table looked up by id, and
equal to the dict of passages it replaces, for a project task folder and a BEIR folder."""

from __future__ import annotations

import json

import pytest

from hf_posbias.listwise.experiments.firststage import BM25FirstStage
from hf_posbias.listwise.experiments.taskio import load_rerank_task
from hf_posbias.rerankers.records import Passage
from hf_posbias.rows.arrow import RowsById
from hf_posbias.rows.readers import read_parquet_rows
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

CORPUS = [
    {"id": 7, "title": None, "text": "alpha beta gamma"},
    {"id": 8, "title": "Eight", "text": "delta epsilon beta"},
    {"id": 9, "title": "", "text": "zeta eta theta"},
    {"id": 10, "title": "Ten", "text": "  beta beta iota  "},
]


def _agrees_with(task, old: dict[str, Passage]) -> None:
    assert isinstance(task.corpus, RowsById)
    assert task.corpus == old and len(task.corpus) == len(old)
    assert list(task.corpus.items()) == list(old.items())
    assert list(task.corpus.values()) == list(old.values())
    assert all(d in task.corpus for d in old) and "missing" not in task.corpus
    assert [task.passage(d) for d in old] == task.passages(list(old)) == list(old.values())
    with pytest.raises(KeyError):
        task.passage("missing")
    # The first stage reads the table in batches and ranks as over the dict.
    lazy, plain = BM25FirstStage(task.corpus), BM25FirstStage(dict(old))
    for query in ("beta", "eight delta", "iota"):
        assert lazy.top_k(query, len(old)) == plain.top_k(query, len(old))


def test_a_task_folder_corpus_is_its_table_looked_up_by_id(tmp_path) -> None:
    queries = [
        {"id": "q", "text": "beta?", "bucket": "a", "evidence_start": 6, "evidence_end": 10,
         "doc_length": 16}
    ]  # fmt: skip
    qrels = [{"query_id": "q", "doc_id": "7", "score": 1}]
    folder = PositionTaskData(TaskInfo("T", "toy.", ["a"]), CORPUS, queries, qrels).save(tmp_path)
    task = load_rerank_task(folder)
    # The form it replaces: retrieval_data's dict of (title, text), then one of Passages.
    old = {
        str(d["id"]): Passage(str(d["id"]), str(d["text"]), str(d.get("title") or ""))
        for d in read_parquet_rows(folder / "corpus.parquet")
    }
    _agrees_with(task, old)
    assert task.passage("7") == Passage("7", "alpha beta gamma", "")
    # The retrieval set shares the folder's table: one copy of the text (ids and titles are
    # cast to strings without nulls here, the text column is the folder's own).
    data = PositionTaskData.load(folder)
    held = data.corpus.table.column("text").chunks[0].buffers()[2].address
    shared = data.retrieval_data().corpus.table.column("text").chunks[0].buffers()[2].address
    assert shared == held


def test_a_beir_folder_corpus_is_its_table_looked_up_by_id(tmp_path) -> None:
    rows = [{"_id": str(d["id"]), "title": d["title"], "text": d["text"]} for d in CORPUS]
    rows.insert(2, {"_id": "8", "title": "Again", "text": "a later row of id 8"})
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "queries.jsonl").write_text('{"_id": "q", "text": "beta?"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\t7\t1\n")
    task = load_rerank_task(tmp_path)
    old: dict[str, Passage] = {}
    for r in rows:  # first row of an id kept
        old.setdefault(r["_id"], Passage(r["_id"], r["text"], r["title"] or ""))
    _agrees_with(task, old)
    assert task.passage("8").title == "Eight"
    assert task.dropped == {"corpus rows with a duplicate id (first kept)": 1}
