"""First stage for the listwise commands: the package BM25 and a dense sentence-transformer."""

from __future__ import annotations

import pytest

from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.firststage import BM25FirstStage, check_k, load_first_stage
from hf_posbias.listwise.records import Passage


def corpus() -> dict[str, Passage]:
    texts = {"d3": "dogs bark", "d1": "dogs bark", "d2": "cats purr", "d0": "birds sing loudly"}
    return {d: Passage(d, t) for d, t in texts.items()}


def test_bm25_ranks_the_whole_corpus_with_ties_by_id():
    stage = BM25FirstStage(corpus())
    assert stage.size == 4
    ranked = stage.top_k("do dogs bark", 4)
    # equal scores: id descending (trec_eval's rule, as evaluation's runs), not corpus order
    assert ranked[:2] == ["d3", "d1"]
    assert sorted(ranked) == ["d0", "d1", "d2", "d3"]
    with pytest.raises(InputError, match="corpus has 4"):
        check_k(5, stage.size)


def test_dense_first_stage(tiny_sentence_transformer):
    stage = load_first_stage(tiny_sentence_transformer, corpus())
    assert stage.name == tiny_sentence_transformer
    ranked = stage.top_k("dogs bark", 3)
    assert len(ranked) == 3 and len(set(ranked)) == 3
    assert stage.top_k("dogs bark", 3) == ranked  # deterministic
