"""rank_llm Request/Result JSON exchange, `posbias listwise rerank`, local generation mode."""

from __future__ import annotations

import json

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.exchange import (
    Request,
    read_requests,
    rerank_requests,
    write_results,
)
from hf_posbias.rerankers.loading import load_reranker

TEXTS = [
    "cats purr softly",
    "dogs bark loudly at night",
    "birds sing",
    "dogs and cats fight",
    "fish swim",
]


def request(qid, n=5):
    return {
        "query": {"text": "why do dogs bark", "qid": qid},
        "candidates": [
            {
                "docid": f"d{i}",
                "score": float(10 - i),
                "doc": {"contents": TEXTS[i]} if i % 2 else {"text": TEXTS[i], "title": "t"},
            }
            for i in range(n)
        ],
    }


def test_round_trip_in_rank_llm_shape(tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(request(q)) + "\n" for q in (1, 2)))
    requests = read_requests(path)
    assert requests[0].query.qid == 1 and requests[0].candidates[1].passage().text == TEXTS[1]
    assert requests[0].candidates[0].passage().content().startswith("Title: t Content:")
    bm25 = load_reranker("bm25", corpus_texts=TEXTS)
    results = rerank_requests(bm25, requests, top_k=4)
    assert [c.docid for c in results[0].candidates][:2] == ["d1", "d3"]
    assert results[0].candidates[-1].docid == "d4"  # past top-k: kept below
    assert [c.score for c in results[0].candidates] == [10.0, 9.0, 8.0, 7.0, 6.0]
    write_results(tmp_path / "out.json", results)
    data = json.loads((tmp_path / "out.json").read_text())
    assert set(data[0]) == {"query", "candidates"} and data[0]["query"] == {
        "text": "why do dogs bark",
        "qid": 1,
    }
    assert Request.from_dict(data[0]).candidates[0].doc == {"contents": TEXTS[1]}


def test_rerank_cli_and_its_errors(tmp_path, capsys):
    path = tmp_path / "requests.json"
    path.write_text(json.dumps([request("a"), request("b", 3)]))
    code = main(
        [
            "listwise",
            "rerank",
            "--reranker",
            "bm25",
            "--requests",
            str(path),
            "--out",
            str(tmp_path / "r.jsonl"),
        ]
    )
    assert code == 0
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["candidates"][0]["docid"] == "d1"
    code = main(
        [
            "listwise",
            "rerank",
            "--reranker",
            "bm25",
            "--requests",
            str(path),
            "--k",
            "4",
            "--out",
            str(tmp_path / "x.json"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--k 4 is larger than the first-stage list of query 'b'" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": {"text": "q"}}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: not a rank_llm request"):
        read_requests(bad)


def test_local_generation_mode_returns_a_permutation_and_counts(tiny_llm):
    from hf_posbias.rerankers.generative import LocalGenerationReranker, ranking_from_text
    from hf_posbias.rerankers.records import Passage

    reranker = load_reranker(
        tiny_llm,
        mode="generate",
        dtype="float32",
        device="cpu",
        batch_size=2,
        window=4,
        passage_tokens=6,
    )
    assert isinstance(reranker, LocalGenerationReranker)
    windows = [
        ("dogs", [Passage(f"d{i}", TEXTS[i]) for i in range(4)]),
        ("cats", [Passage(f"d{i}", TEXTS[i]) for i in range(3)]),
    ]
    texts = reranker.generate_texts(windows)
    answers = reranker.rank_windows(windows)
    for text, answer, (_, passages) in zip(texts, answers, windows):
        assert sorted(answer.order) == list(range(len(passages)))
        expected = ranking_from_text(text, [p.doc_id for p in passages])
        assert (answer.order, answer.appended) == (expected.order, expected.appended)
