"""A task folder's corpus is held once, as arrow: the rows read from it and mteb's corpus."""

from __future__ import annotations

import pytest

from hf_posbias.errors import InputError
from hf_posbias.rows.arrow import TableRows
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo, corpus_table

CORPUS = [
    {"id": 7, "title": None, "text": "alpha beta gamma"},
    {"id": 8, "title": "Eight", "text": "delta epsilon"},
    {"id": 9, "title": "", "text": "zeta eta theta"},
]


def _task(corpus: list[dict]) -> PositionTaskData:
    queries = [
        {"id": "q", "text": "beta?", "bucket": "a", "evidence_start": 6, "evidence_end": 10,
         "doc_length": 16}
    ]  # fmt: skip
    qrels = [{"query_id": "q", "doc_id": "7", "score": 1}]
    return PositionTaskData(TaskInfo("T", "toy.", ["a"]), corpus, queries, qrels)


def test_a_loaded_corpus_is_lazy_arrow_rows_equal_to_the_saved_ones(tmp_path) -> None:
    folder = _task(CORPUS).save(tmp_path / "t")
    data = PositionTaskData.load(folder)
    assert isinstance(data.corpus, TableRows)
    assert data.corpus == CORPUS and data.corpus[-1] == CORPUS[-1]
    # What reads the rows reads them as before: the retrieval set and a sample share them.
    assert data.retrieval_data().corpus == {
        "7": ("", "alpha beta gamma"), "8": ("Eight", "delta epsilon"), "9": ("", "zeta eta theta")
    }  # fmt: skip
    assert data.sample_queries(1).corpus is data.corpus
    # And a folder written again from them is the same folder.
    again = data.save(tmp_path / "again")
    assert (again / "corpus.parquet").read_bytes() == (folder / "corpus.parquet").read_bytes()


def test_the_corpus_table_of_rows_and_of_a_loaded_folder_agree(tmp_path) -> None:
    """mteb's corpus is the loaded folder's own table (no copy) with the values the list of rows
    gives: ids as strings, a missing title empty."""
    loaded = PositionTaskData.load(_task(CORPUS).save(tmp_path / "t"))
    from_rows = corpus_table(CORPUS)
    from_arrow = corpus_table(loaded.corpus)
    assert from_arrow.equals(from_rows)
    assert from_rows.column("id").to_pylist() == ["7", "8", "9"]
    assert from_rows.column("title").to_pylist() == ["", "Eight", ""]
    text = loaded.corpus.table.column("text").chunks[0].buffers()[2].address
    assert from_arrow.column("text").chunks[0].buffers()[2].address == text


def test_mteb_corpus_wraps_the_loaded_table(tmp_path) -> None:
    from hf_posbias.tasks.mteb_tasks import PositionRetrievalTask

    task = PositionRetrievalTask(_task(CORPUS).save(tmp_path / "t"))
    task.load_data()
    corpus = task.dataset["default"]["test"]["corpus"]
    assert corpus[1] == {"id": "8", "title": "Eight", "text": "delta epsilon"}
    held = task.task_data.corpus.table.column("text").chunks[0].buffers()[2].address
    assert corpus.data.table.column("text").chunks[0].buffers()[2].address == held


def test_validation_reads_the_arrow_corpus(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = _task(CORPUS).save(tmp_path / "t")
    pq.write_table(pa.Table.from_pylist([*CORPUS, CORPUS[1]]), folder / "corpus.parquet")
    with pytest.raises(InputError, match="duplicate corpus id '8'"):
        PositionTaskData.load(folder)
    pq.write_table(pa.table({"id": ["7"], "text": ["x"]}), folder / "corpus.parquet")
    with pytest.raises(InputError, match=r"corpus is missing column\(s\) \['title'\]"):
        PositionTaskData.load(folder)
