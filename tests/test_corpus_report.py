"""Nothing in a corpus passes unsaid: duplicate ids (the first row kept) and rows without a
title are counted in the corpus stage's report and in a BEIR / MS MARCO folder's drops."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_posbias.corpus.documents import prepare_documents
from hf_posbias.tasks.beir import read_plain_folder

TEXT = "Reef fish shelter among corals. " * 20  # 640 characters: inside the first length bin


def test_corpus_report_counts_duplicates_and_missing_titles():
    records = [
        {"id": "a", "title": "Reefs", "text": TEXT},
        {"id": "b", "text": TEXT},
        {"id": "a", "title": "Other", "text": TEXT + "more"},
        {"id": "c", "title": "  ", "text": TEXT},
    ]
    docs, report = prepare_documents(records, source="mine.jsonl")
    assert [(d.id, d.title) for d in docs] == [("a", "Reefs"), ("b", ""), ("c", "  ")]
    assert report.skipped_duplicate_id == 1 and report.kept_without_title == 2
    lines = report.summary_lines()
    assert "  WARNING skipped duplicate id: 1 (e.g. a)" in lines
    assert "  kept without a title: 2 of 3 (e.g. b, c)" in lines
    assert report.to_dict()["kept_without_title"] == 2


def test_titled_corpus_reports_no_missing_title():
    _, report = prepare_documents([{"id": "a", "title": "Reefs", "text": TEXT}])
    assert report.kept_without_title == 0
    assert not any("without a title" in line for line in report.summary_lines())


def _beir(folder: Path, corpus: list[dict], queries: list[dict]) -> Path:
    folder.mkdir()
    for name, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


def test_beir_duplicate_ids_keep_the_first_row_and_are_counted(tmp_path):
    corpus = [
        {"_id": "d1", "title": "first", "text": "cats"},
        {"_id": "d1", "title": "second", "text": "dogs"},
        {"_id": "d2", "title": "", "text": "fish"},
        {"_id": "d1", "title": "third", "text": "owls"},
    ]
    queries = [{"_id": "q1", "text": "cat?"}, {"_id": "q1", "text": "dog?"}]
    data = read_plain_folder(_beir(tmp_path / "beir", corpus, queries))
    assert data.corpus == {"d1": ("first", "cats"), "d2": ("", "fish")}
    assert data.queries == {"q1": "cat?"}
    assert data.dropped == {
        "corpus rows with a duplicate id (first kept)": 2,
        "query rows with a duplicate id (first kept)": 1,
    }


def test_msmarco_duplicate_ids_are_counted(tmp_path):
    folder = tmp_path / "msmarco"
    folder.mkdir()
    (folder / "collection.tsv").write_text("d1\tcats\nd1\tdogs\n")
    (folder / "queries.tsv").write_text("q1\tcat?\n")
    (folder / "qrels.tsv").write_text("q1 0 d1 1\n")
    data = read_plain_folder(folder)
    assert data.corpus == {"d1": ("", "cats")}
    assert data.dropped == {"corpus rows with a duplicate id (first kept)": 1}


@pytest.mark.parametrize("rows", [[], [{"_id": "d9", "text": "x"}]])
def test_unique_ids_drop_nothing(tmp_path, rows):
    corpus = [{"_id": "d1", "title": "", "text": "cats"}, *rows]
    data = read_plain_folder(_beir(tmp_path / "beir", corpus, [{"_id": "q1", "text": "cat?"}]))
    assert data.dropped == {}
