"""The one BM25: analyzer, index vs pair scorer, and the same ranking in evaluate and listwise."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hf_posbias.bm25.analyzer import ENGLISH, BM25Analyzer, document_text
from hf_posbias.bm25.index import BM25Index
from hf_posbias.bm25.pair import BM25PairScorer
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


def test_the_index_built_in_batches_is_bm25s_own_index() -> None:
    """Batches of any size give the scores and top-k of ``bm25s`` indexing the whole corpus
    at once (the index as it was built before it streamed), on real Wikipedia text."""
    import bm25s

    from hf_posbias.corpus.sources import read_demo_corpus

    docs = [d for _, d in zip(range(400), read_demo_corpus())]
    texts = [document_text(d["title"], d["text"]) for d in docs]
    queries = [d["text"].split(".")[0] for d in docs[::40]] + ["the", "zzzz unknown"]
    whole = bm25s.BM25(k1=1.5, b=0.75, delta=0.5, method="lucene")
    whole.index(bm25s.tokenize(texts, return_ids=True, **ENGLISH._kwargs()), show_progress=False)
    want_docs, want_scores = whole.retrieve(ENGLISH.tokenize(queries), k=50, show_progress=False)
    for batch_size in (1, 7, 400, 10_000):
        index = BM25Index(iter(texts), batch_size=batch_size)
        assert index.size == len(texts)
        got_docs, got_scores = index.retrieve(queries, 50)
        np.testing.assert_array_equal(got_docs, want_docs)
        np.testing.assert_array_equal(got_scores, want_scores)
        for query in queries[:3]:
            [tokens] = ENGLISH.tokenize([query])
            np.testing.assert_array_equal(index.scores(query), whole.get_scores(tokens))
    with pytest.raises(InputError, match="non-empty"):
        BM25Index(iter([]))


def test_the_lean_index_build_gives_bm25s_arrays_exactly(monkeypatch) -> None:
    """The index arrays built a chunk at a time are ``bm25s``'s, element for element, on the
    same term ids (chunks of 1, 7 and all documents)."""
    import bm25s

    import hf_posbias.bm25.index as bm25_module
    from hf_posbias.corpus.sources import read_demo_corpus

    texts = [document_text(d["title"], d["text"]) for _, d in zip(range(300), read_demo_corpus())]
    texts.append("the and of")  # a document of stop words only: no entries
    reference = bm25s.BM25(k1=1.5, b=0.75, delta=0.5, method="lucene")
    reference.index(ENGLISH.tokenize_ids(texts, batch_size=64), show_progress=False)
    for chunk in (1, 7, 10_000):
        monkeypatch.setattr(bm25_module, "INDEX_BATCH", chunk)
        lean = bm25_module._lean_bm25s()(k1=1.5, b=0.75, delta=0.5, method="lucene")
        lean.index(ENGLISH.tokenize_ids(texts, batch_size=64), show_progress=False)
        assert lean.vocab_dict == reference.vocab_dict
        for key in ("data", "indices", "indptr"):
            got, want = lean.scores[key], reference.scores[key]
            assert got.dtype == want.dtype, key
            np.testing.assert_array_equal(got, want, err_msg=key)
        assert lean.scores["num_docs"] == reference.scores["num_docs"] == len(texts)


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
