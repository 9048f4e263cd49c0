"""Second stages of ``posbias evaluate``: the BM25 control, a listwise LLM over a sliding window,
an mteb registry reranker resolved offline, and bad reranker names."""

from __future__ import annotations

from pathlib import Path

import pytest
from task_fixtures import wiki_task

from hf_posbias.errors import ModelLoadError
from hf_posbias.evaluation.evaluation_settings import EvaluateSettings
from hf_posbias.evaluation.runs.mteb_models import load_mteb_model
from hf_posbias.evaluation.runs.runner import evaluate_model
from hf_posbias.rerankers.loading import reranker_kind
from hf_posbias.rerankers.options import RerankerOptions

N_DOCS = 12


@pytest.fixture(scope="module")
def task_folder(shared_data, tmp_path_factory) -> Path:
    return wiki_task(shared_data, tmp_path_factory.mktemp("rerank") / "task", n_docs=N_DOCS)


def _evaluate(task: Path, out: Path, **kwargs) -> list:
    settings = EvaluateSettings(model="bm25", task=(str(task),), out=str(out), **kwargs)
    return evaluate_model(settings.model, settings.task, **settings.evaluate_kwargs())


def _run(path: str) -> dict[str, list[str]]:
    """``{query: [doc, …]}`` in rank order from a TREC run file."""
    out: dict[str, list[tuple[int, str]]] = {}
    for line in Path(path).read_text().splitlines():
        qid, _, doc, rank, *_ = line.split()
        out.setdefault(qid, []).append((int(rank), doc))
    return {q: [d for _, d in sorted(rows)] for q, rows in out.items()}


def _scores(path: str) -> dict[tuple[str, str], float]:
    """``{(query, doc): score}`` from a TREC run file."""
    rows = (line.split() for line in Path(path).read_text().splitlines())
    return {(r[0], r[2]): float(r[4]) for r in rows}


def test_bm25_control_as_second_stage_reproduces_bm25(task_folder, tmp_path):
    """The pointwise BM25 reranker reads each passage alone with the first stage's statistics:
    reranking BM25's own top 5 must give BM25's ranking back, position by position."""
    [plain] = _evaluate(task_folder, tmp_path / "plain", bootstrap=20)
    [piped] = _evaluate(task_folder, tmp_path / "piped", reranker="bm25", rerank_k=5, bootstrap=20)
    assert piped.label == "bm25 → bm25@5" and piped.model_kind == "rerank"
    assert piped.search_stats["windows"] == N_DOCS  # pointwise: one window per query
    assert piped.search_stats["reranker"]["kind"] == "pointwise"
    bm25, first, second = _scores(plain.run_path), _run(plain.run_path), _run(piped.run_path)
    assert first.keys() == second.keys()
    for qid, docs in first.items():
        head = [bm25[qid, d] for d in second[qid][:5]]
        assert sorted(second[qid][:5]) == sorted(docs[:5])
        assert head == pytest.approx(sorted(head, reverse=True))  # BM25's order (ties aside)
        assert second[qid][5:] == docs[5:]  # below the reranked head: first-stage order


def test_listwise_llm_reorders_only_the_top_k(task_folder, tiny_llm, tmp_path):
    """A tiny random causal LM scored FIRST's way: it permutes BM25's top 6 (window 4, step 2:
    two windows per query); every document below keeps its BM25 rank."""
    listwise = {"window": 4, "step": 2, "passage_tokens": 32, "device": "cpu", "dtype": "float32"}
    [plain] = _evaluate(task_folder, tmp_path / "plain", bootstrap=20)
    [s] = _evaluate(
        task_folder, tmp_path / "llm", reranker=tiny_llm, rerank_k=6, bootstrap=20, **listwise
    )
    assert s.reranker == tiny_llm and s.first_stage == "bm25" and s.rerank_k == 6
    assert s.model_revision.startswith("local-")
    assert s.search_stats["windows"] == 2 * N_DOCS
    assert s.search_stats["reranker"]["window_size"] == 4
    first, second = _run(plain.run_path), _run(s.run_path)
    assert first.keys() == second.keys()
    moved = 0
    for qid, docs in first.items():
        assert sorted(second[qid][:6]) == sorted(docs[:6])  # the same candidates, reordered
        assert second[qid][6:] == docs[6:]  # below the reranked head: first-stage order
        moved += second[qid][:6] != docs[:6]
    assert moved > 0  # a random LM does reorder
    options = RerankerOptions(**listwise)
    experiment = load_mteb_model("bm25", reranker=tiny_llm, rerank_k=6, reranker_options=options)
    kwargs = experiment.model.mteb_model_meta.experiment_kwargs
    assert (kwargs["reranker_kind"], kwargs["window"], kwargs["rerank_k"]) == ("listwise", 4, 6)


def test_registry_reranker_resolves_offline(
    task_folder, tiny_cross_encoder, tmp_path, offline_hub_weights
):
    """cross-encoder/ms-marco-MiniLM-L6-v2 through mteb's registry loader; the weights (the
    boundary: a Hub download) are the tiny local cross-encoder's."""
    import mteb

    asked = offline_hub_weights("CrossEncoder", tiny_cross_encoder)
    name = "cross-encoder/ms-marco-MiniLM-L6-v2"
    meta = mteb.get_model_meta(name)
    assert reranker_kind(name) == "registry"
    [s] = _evaluate(task_folder, tmp_path / "o", reranker=name, rerank_k=5, bootstrap=20)
    assert asked == [(name, meta.revision)]
    assert (s.model_name, s.model_revision) == (name, meta.revision)
    assert s.search_stats["pairs_scored"] == N_DOCS * 5


def test_reranker_kinds_are_resolved_in_one_place(tiny_llm, tiny_cross_encoder):
    assert reranker_kind(tiny_llm) == "listwise"
    assert reranker_kind(tiny_cross_encoder) == "cross-encoder"
    assert reranker_kind("smollm2-135m") == "listwise"


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("smollm2-13m", "did you mean 'smollm2-135m'"),
        ("cross-encoder/ms-marco-MiniLM-L6-v3", "did you mean 'cross-encoder/ms-marco-MiniLM-L6"),
    ],
)
def test_bad_reranker_name_is_one_line_with_suggestions(name, hint, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match=hint) as caught:
        load_mteb_model("bm25", reranker=name)
    assert "\n" not in str(caught.value)


def test_bad_reranker_name_on_the_command_line(task_folder, tmp_path, capsys, monkeypatch):
    from hf_posbias.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ["evaluate", "--model", "bm25", "--reranker", "smollm2-13m"]
    assert main([*argv, "--task", str(task_folder), "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown reranker 'smollm2-13m'")
