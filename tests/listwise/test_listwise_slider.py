"""The interactive 1…k test: one (query, position) at a time gives the row ``test`` writes."""

from __future__ import annotations

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.firststage import load_first_stage
from hf_posbias.listwise.experiments.slider import (
    SliderCurve,
    rerank_at,
    slider_case,
    slider_figure,
)
from hf_posbias.listwise.experiments.taskio import load_rerank_task
from hf_posbias.rerankers.loading import load_reranker
from hf_posbias.rows.readers import read_rows


@pytest.mark.parametrize("reranker_kind", ["llm", "bm25"])
def test_a_slot_reproduces_the_controlled_test_row(beir_task, tmp_path, tiny_llm, reranker_kind):
    name = tiny_llm if reranker_kind == "llm" else "bm25"
    out = tmp_path / "test"
    code = main(
        ["listwise", "test", "--reranker", name, "--task", str(beir_task), "--k", "5"]
        + ["--positions", "1,3,5", "--max-queries", "1", "--passage-tokens", "8"]
        + ["--dtype", "float32", "--out", str(out), "--no-progress", "--n-resamples", "20"]
    )
    assert code == 0
    rows = read_rows(out / "per_query.jsonl")
    task = load_rerank_task(beir_task)
    query_id = rows[0]["query_id"]
    case = slider_case(task, query_id, load_first_stage("bm25", task.corpus), 5)
    reranker = load_reranker(
        name,
        corpus_texts=[p.content() for p in task.corpus.values()],
        passage_tokens=8,
        dtype="float32",
    )
    curve = SliderCurve(name, query_id, case.k)
    for row in rows:
        outcome = rerank_at(reranker, case, row["position"])
        assert outcome.input == row["input"] and outcome.ranking == row["ranking"]
        assert outcome.ndcg_at_10 == pytest.approx(row["ndcg_at_10"])
        assert outcome.ranking[outcome.output_rank - 1] == row["relevant"]
        curve.add(outcome)
    assert curve.positions() == [1, 3, 5]
    payload = curve.to_dict()
    assert payload["ndcg_at_10"] == [pytest.approx(r["ndcg_at_10"], abs=1e-6) for r in rows]
    if reranker_kind == "bm25":  # the pointwise control cannot move with the input slot
        assert len(set(payload["output_rank"])) == 1 and payload["psi"] == 0.0
    fig = slider_figure(curve, current=3)
    assert len(fig.axes) == 2


def test_a_query_without_relevant_documents_is_refused(beir_task):
    task = load_rerank_task(beir_task)
    with pytest.raises(InputError, match="has no relevant document"):
        slider_case(task, "nope", load_first_stage("bm25", task.corpus), 5)
