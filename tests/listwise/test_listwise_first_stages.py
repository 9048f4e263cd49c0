"""Q26's first stages: the model's own similarity, a sparse encoder, reciprocal rank fusion."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.firststage import (
    FusedFirstStage,
    SparseFirstStage,
    load_first_stage,
)
from hf_posbias.listwise.experiments.lists import FIRST_STAGE_FILE, first_stage_lists
from hf_posbias.listwise.experiments.taskio import load_rerank_task


def _by_score(scores: dict[str, float | Fraction]) -> list[str]:
    """Best first, ties by document id descending: written out here, not the package's."""
    by_id = sorted(scores, reverse=True)
    return sorted(by_id, key=lambda d: -scores[d])  # stable: equal scores keep id order


@pytest.fixture
def dot_model(tiny_sentence_transformer: str, tmp_path: Path) -> Path:
    """The tiny sentence-transformer saved as a dot-product model (as Contriever is)."""
    model = shutil.copytree(tiny_sentence_transformer, tmp_path / "dot-model")
    config = model / "config_sentence_transformers.json"
    found = json.loads(config.read_text())
    found["similarity_fn_name"] = "dot"
    config.write_text(json.dumps(found))
    return model


def _texts(task) -> tuple[list[str], list[str]]:
    """The corpus in id order, as evaluate's mteb loader joins title and text (not the prompt
    form ``Passage.content()``)."""
    ids = sorted(task.corpus)
    return ids, [(task.corpus[d].title + " " + task.corpus[d].text).strip() for d in ids]


def test_a_dot_product_model_ranks_by_dot_product(dot_model, beir_task):
    from sentence_transformers import SentenceTransformer

    task = load_rerank_task(beir_task)
    stage = load_first_stage(str(dot_model), task.corpus)
    assert stage.similarity == "dot" and stage.encoding["similarity"] == "dot"
    cosine = load_first_stage(str(dot_model), task.corpus, similarity="cosine")
    assert "similarity" not in cosine.encoding  # the cache key of cosine lists is unchanged

    model = SentenceTransformer(str(dot_model), device="cpu")
    ids, texts = _texts(task)
    docs = model.encode(texts, convert_to_numpy=True)
    differs = False
    for qid in task.judged_queries():
        q = model.encode([task.queries[qid]], convert_to_numpy=True)[0]
        dot = _by_score(dict(zip(ids, map(float, docs.astype(np.float32) @ q))))
        assert stage.top_k(task.queries[qid], 20) == dot[:20]
        norms = np.linalg.norm(docs, axis=1) * np.linalg.norm(q)
        cos = _by_score(dict(zip(ids, map(float, (docs @ q) / norms))))
        assert set(cosine.top_k(task.queries[qid], 5)) == set(cos[:5])
        differs |= dot[:20] != cos[:20]
    assert differs  # the tiny model's dot and cosine top-20 differ: the test tells them apart


def test_a_sparse_encoder_scores_its_own_sparse_dot_product(beir_task, tmp_path):
    from sentence_transformers import SparseEncoder

    from hf_posbias.testing import build_tiny_sparse_encoder

    folder = build_tiny_sparse_encoder(tmp_path / "splade")
    task = load_rerank_task(beir_task)
    for name in (folder, f"sparse:{folder}"):
        stage = load_first_stage(name, task.corpus)
        assert isinstance(stage, SparseFirstStage) and stage.encoding["kind"] == "sparse"
        assert stage.name == name
    model = SparseEncoder(folder, device="cpu")
    ids, texts = _texts(task)
    docs = model.encode_document(texts, convert_to_tensor=True).to_dense().numpy()
    for qid in task.judged_queries():
        q = model.encode_query([task.queries[qid]]).to_dense().numpy()[0]
        expected = _by_score(dict(zip(ids, map(float, docs @ q))))
        assert stage.top_k(task.queries[qid], 10) == expected[:10]


def test_rrf_lists_equal_an_independent_fusion(tiny_sentence_transformer, beir_task, tmp_path):
    task = load_rerank_task(beir_task)
    queries = task.judged_queries()
    names = ["bm25", tiny_sentence_transformer]
    singles = {
        name: {
            x.query_id: x.candidates
            for x in first_stage_lists(
                task, queries, name, len(task.corpus), tmp_path / f"one-{i}", show_progress=False
            )
        }
        for i, name in enumerate(names)
    }
    fused = first_stage_lists(
        task, queries, names, 5, tmp_path / "fused", show_progress=False, rrf_k=10
    )
    for x in fused:
        scores: dict[str, Fraction] = {}
        for name in names:
            for rank, doc in enumerate(singles[name][x.query_id], start=1):
                scores[doc] = scores.get(doc, Fraction(0)) + Fraction(1, 10 + rank)
        assert x.candidates == _by_score(scores)[:5]
    recorded = json.loads((tmp_path / "fused" / FIRST_STAGE_FILE).read_text())
    assert recorded["params"]["first_stage"] == names
    assert recorded["params"]["encoding"]["rrf_k"] == 10
    assert [x["candidates"] for x in recorded["lists"]] == [x.candidates for x in fused]
    # Another k is another fusion: the cache is recomputed, not reused.
    other = first_stage_lists(task, queries, names, 5, tmp_path / "fused", show_progress=False)
    assert (
        json.loads((tmp_path / "fused" / FIRST_STAGE_FILE).read_text())["params"]["encoding"][
            "rrf_k"
        ]
        == 60
    )
    assert len(other) == len(fused)


def test_rrf_over_one_list_and_unknown_first_stages_are_one_line(beir_task, tmp_path, capsys):
    task = load_rerank_task(beir_task)
    with pytest.raises(InputError, match="two or more different first stages, got 1: bm25"):
        FusedFirstStage([load_first_stage("bm25", task.corpus)])
    base = ["listwise", "test", "--reranker", "bm25", "--task", str(beir_task), "--k", "4"]
    for stages, message in (
        (["bm25", "bm25"], "reciprocal rank fusion needs two or more different first stages"),
        (["no-such-first-stage"], "unknown model 'no-such-first-stage'"),
        (["bm25", "--rrf-k", "0"], "--rrf-k must be"),
    ):
        code = main([*base, "--first-stage", *stages, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and message in err and "\n" not in err, err


def test_the_shuffle_eval_manifest_pins_the_fusion(tiny_sentence_transformer, beir_task, tmp_path):
    out = tmp_path / "shuffle"
    argv = ["listwise", "shuffle-eval", "--reranker", "bm25", "--task", str(beir_task)]
    argv += ["--k", "4", "--shuffles", "2", "--n-resamples", "20", "--no-progress"]
    argv += ["--first-stage", "bm25", tiny_sentence_transformer, "--out", str(out)]
    assert main(argv) == 0
    payload = json.loads((out / "shuffle_eval.json").read_text())
    assert payload["first_stage"] == ["bm25", tiny_sentence_transformer]
    assert main([*argv, "--rrf-k", "5"]) == 2  # another fusion than the pinned one is refused
