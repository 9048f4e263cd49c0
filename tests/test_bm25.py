"""The one BM25: analyzer, index vs pair scorer, and the same ranking in evaluate and listwise."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hf_posbias.bm25 import ENGLISH, BM25Analyzer, BM25Index, BM25PairScorer, document_text
from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

DOCS = [
    ("Harbor", "Ships dock at the harbor when storms are coming."),
    ("Dogs", "A dog barks at strangers and wags its tail at friends."),
    ("Barking", "Barking is how dogs warn their owners."),
    ("Cats", "A cat purrs softly when it is content."),
    ("Rivers", "Rivers carry water from mountains to the sea."),
    ("Violins", "A violin has four strings and a hollow wooden body."),
    ("Engines", "Engines burn fuel and turn pistons."),
    ("Deserts", "Deserts receive little rain and have sparse plants."),
    ("Lanterns", "A lantern gives light on dark paths."),
    ("Orchids", "Orchids grow on trees in humid forests."),
    ("Quartz", "Quartz is a hard mineral made of silicon and oxygen."),
    ("Zebras", "Zebras have black and white stripes."),
]
QUERIES = [
    ("q0", "why do dogs bark", "begin"),
    ("q1", "harbor storms", "middle"),
    ("q2", "stripes of the zebra", "end"),
    ("q3", "lanterns", "begin"),
]


def test_analyzer_stems_english_and_the_member_setting_does_not() -> None:
    assert ENGLISH.tokenize(["Dogs barking"]) == [["dog", "bark"]]
    assert BM25Analyzer(stemmer=None).tokenize(["Dogs barking"]) == [["dogs", "barking"]]
    assert BM25Analyzer.for_language("eng") == ENGLISH
    with pytest.raises(InputError, match="'xyz'"):
        BM25Analyzer.for_language("xyz")


def test_pair_scorer_and_index_are_the_same_formula() -> None:
    texts = [document_text(t, x) for t, x in DOCS]
    index = BM25Index(texts)
    scorer = BM25PairScorer(ENGLISH)
    scorer.fit(texts)
    for _, query, _ in QUERIES:
        pairs = scorer.score_pairs([query] * len(texts), texts)
        np.testing.assert_allclose(pairs, index.scores(query), rtol=1e-5, atol=1e-6)
        assert pairs.max() > 0


def tiny_task(folder: Path) -> Path:
    """A 12-document position task folder (titles, four queries); also used by test_rows."""
    corpus = [{"id": f"d{i:02d}", "title": t, "text": x} for i, (t, x) in enumerate(DOCS)]
    queries = [
        {
            "id": q,
            "text": text,
            "bucket": b,
            "evidence_start": 0,
            "evidence_end": 4,
            "doc_length": 40,
        }
        for q, text, b in QUERIES
    ]
    relevant = {"q0": "d01", "q1": "d00", "q2": "d11", "q3": "d08"}
    qrels = [{"query_id": q, "doc_id": d, "score": 1} for q, d in relevant.items()]
    info = TaskInfo(name="BM25Agreement", description="tiny", buckets=["begin", "middle", "end"])
    return PositionTaskData(info=info, corpus=corpus, queries=queries, qrels=qrels).save(folder)


def test_listwise_first_stage_ranks_as_evaluate(tmp_path: Path) -> None:
    task = tiny_task(tmp_path / "task")
    k = 8  # beyond the documents that match: the zero-score tail follows the tie rule too
    assert (
        main(["evaluate", "--model", "bm25", "--task", str(task), "--out", str(tmp_path / "ev")])
        == 0
    )
    trec = (tmp_path / "ev" / "runs" / "BM25Agreement.trec").read_text().splitlines()
    evaluated: dict[str, list[str]] = {}
    for line in trec:
        qid, _, doc, *_ = line.split()
        evaluated.setdefault(qid, []).append(doc)

    out = tmp_path / "lw"
    args = ["listwise", "test", "--reranker", "bm25", "--task", str(task), "--k", str(k)]
    assert main([*args, "--out", str(out), "--n-resamples", "10", "--no-progress"]) == 0
    lists = json.loads((out / "first_stage.json").read_text())["lists"]
    assert {row["query_id"] for row in lists} == {q for q, _, _ in QUERIES}
    for row in lists:
        assert row["candidates"] == evaluated[row["query_id"]][:k], row["query_id"]
    by_query = {row["query_id"]: row["candidates"] for row in lists}
    assert by_query["q0"][:2] == ["d02", "d01"]  # "dogs bark" found through stemming
    assert by_query["q3"][0] == "d08"  # "Lanterns" only in the title


def test_pair_scorer_fit_streams_and_counts_each_passage_once() -> None:
    """The panel's BM25 fit reads a stream of segments (repeats included) in chunks: the
    statistics equal those of the sorted unique passages fitted at once."""
    passages = [
        f"passage {i} about {'cats' if i % 3 else 'dogs'} and {i % 7} birds" for i in range(50)
    ]
    once = BM25PairScorer(ENGLISH)
    once.fit(sorted(set(passages)), chunk=10_000)
    streamed = BM25PairScorer(ENGLISH)
    streamed.fit(iter(passages[::-1] + passages), chunk=7)
    assert streamed._df == once._df and streamed._n_docs == once._n_docs == 50
    assert streamed._avgdl == once._avgdl
    pairs = (["dogs and birds"] * 3, passages[:3])
    assert np.array_equal(streamed.score_pairs(*pairs), once.score_pairs(*pairs))
