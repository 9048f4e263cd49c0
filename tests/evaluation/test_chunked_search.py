"""A corpus searched in chunks ranks exactly as the corpus searched at once (issue 42, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from task_fixtures import wiki_task

from hf_posbias.errors import InputError
from hf_posbias.evaluation.evaluation_settings import EvaluateSettings
from hf_posbias.evaluation.runs.exports import read_trec_run
from hf_posbias.evaluation.runs.runner import evaluate_model

N_DOCS = 21


@pytest.fixture(scope="module")
def task_folder(shared_data, tmp_path_factory) -> Path:
    return wiki_task(shared_data, tmp_path_factory.mktemp("wiki") / "task", n_docs=N_DOCS)


def test_chunked_search_gives_the_in_memory_top_k(task_folder, tiny_sentence_transformer, tmp_path):
    whole_out, chunked_out = tmp_path / "whole", tmp_path / "chunked"
    [whole] = evaluate_model(
        tiny_sentence_transformer, [task_folder], out=whole_out, top_k=10, bootstrap=None
    )
    # 4 documents a chunk: six chunks, the last one short; top-10 spans several chunks.
    [chunked] = evaluate_model(
        tiny_sentence_transformer,
        [task_folder],
        out=chunked_out,
        top_k=10,
        bootstrap=None,
        corpus_chunk_size=4,
    )
    whole_run = read_trec_run(next((whole_out / "runs").glob("*.trec")))
    chunked_run = read_trec_run(next((chunked_out / "runs").glob("*.trec")))
    assert set(whole_run) == set(chunked_run) and len(whole_run) == N_DOCS
    for qid, ranking in whole_run.items():
        # the same documents in the same order, with the same scores (to the export's digits)
        assert list(chunked_run[qid]) == list(ranking)
        assert chunked_run[qid] == pytest.approx(ranking, abs=2e-6)  # 6-digit export
    assert chunked.ndcg_at_10 == whole.ndcg_at_10
    # every document was encoded once either way: a chunk is never encoded twice
    assert chunked.encode_stats["encoded_by_type"] == whole.encode_stats["encoded_by_type"]


def test_a_chunk_size_below_one_is_one_line():
    with pytest.raises(InputError, match="corpus_chunk_size must be >= 1"):
        EvaluateSettings(model="bm25", task=("t",), out="o", corpus_chunk_size=0)
