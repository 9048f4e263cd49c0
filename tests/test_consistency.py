"""One model, one ranking, in every verb (issue 39): the same model on the same small real task
(SciFact validation claims, titled abstracts) gives the same top-k and the same per-query
nDCG@10 through ``posbias evaluate``, the library call (``evaluate_model``), a study's
evaluation unit, ``posbias analyze audit`` and ``posbias listwise test --first-stage``; and an RRF
first stage equals an independent fusion of ``evaluate``'s runs at the depth it records.

BM25 and a tiny random dense model (a sentence-transformers folder). The task is cut to its
first :data:`N_QUERIES` claims, their judged documents and the first others up to
:data:`N_DOCS`, so that ``--top-k N_DOCS``
runs rank the whole corpus (the fusion's recorded depth, 1000, reads every document) and the
suite stays small on two cores. Skips without the shared SciFact data.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hf_posbias.cli import main
from hf_posbias.evaluation.runs.exports import read_trec_run
from hf_posbias.rows.readers import read_parquet_rows

N_DOCS = 100
N_QUERIES = 24
K = 20


@pytest.fixture(scope="module")
def task(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hf_posbias.tasks.builders.scifact import build_scifact

    data = build_scifact(shared_data / "scifact_allenai", split="validation")
    queries = sorted(data.queries, key=lambda q: str(q["id"]))[:N_QUERIES]
    asked = {str(q["id"]) for q in queries}
    qrels = [r for r in data.qrels if str(r["query_id"]) in asked]
    judged = {str(r["doc_id"]) for r in qrels}
    others = sorted(str(d["id"]) for d in data.corpus if str(d["id"]) not in judged)
    keep = judged | set(others[: N_DOCS - len(judged)])
    corpus = [d for d in data.corpus if str(d["id"]) in keep]
    assert len(corpus) == N_DOCS and all(d["title"] for d in corpus)  # titled documents
    small = dataclasses.replace(data, corpus=corpus, queries=queries, qrels=qrels)
    return small.save(tmp_path_factory.mktemp("c") / "scifact")


def _ranked(out: Path) -> dict[str, list[str]]:
    [run] = (out / "runs").glob("*.trec")
    return {q: list(docs) for q, docs in read_trec_run(run).items()}


def _ndcg(out: Path) -> dict[str, float]:
    [table] = (out / "per_query").glob("*.parquet")
    return {str(r["query_id"]): float(r["ndcg_at_10"]) for r in read_parquet_rows(table)}


def _first_stage(out: Path) -> tuple[dict[str, list[str]], dict]:
    found = json.loads((out / "first_stage.json").read_text())
    return {x["query_id"]: x["candidates"] for x in found["lists"]}, found["params"]


def _listwise(task: Path, out: Path, *first_stage: str) -> tuple[dict[str, list[str]], dict]:
    argv = ["listwise", "test", "--task", str(task), "--out", str(out), "--reranker", "bm25"]
    argv += ["--k", str(K), "--max-queries", "1000", "--first-stage", *first_stage]
    assert main([*argv, "--no-progress"]) == 0
    return _first_stage(out)


@pytest.fixture(scope="module")
def dense(tiny_sentence_transformer: str) -> str:
    return tiny_sentence_transformer


@pytest.fixture(scope="module")
def evaluated(task: Path, dense: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``posbias evaluate --top-k N_DOCS`` of each model: its runs and per-query nDCG@10."""
    found = {}
    for name, model in (("bm25", "bm25"), ("dense", dense)):
        out = tmp_path_factory.mktemp(f"evaluate-{name}")
        argv = ["evaluate", "--model", model, "--task", str(task), "--out", str(out)]
        assert main([*argv, "--top-k", str(N_DOCS), "--bootstrap", "10", "--no-progress"]) == 0
        found[name] = (_ranked(out), _ndcg(out))
    return found


@pytest.mark.parametrize("name", ["bm25", "dense"])
def test_the_library_call_and_audit_agree_with_evaluate(name, task, dense, evaluated, tmp_path):
    from hf_posbias.evaluation.runs.runner import evaluate_model

    model = dense if name == "dense" else "bm25"
    runs, ndcg = evaluated[name]
    evaluate_model(model, [str(task)], out=tmp_path / "lib", top_k=N_DOCS, bootstrap=10)
    assert _ranked(tmp_path / "lib") == runs and _ndcg(tmp_path / "lib") == ndcg
    argv = ["analyze", "audit", model, "--task", str(task), "--out", str(tmp_path / "audit")]
    assert main([*argv, "--top-k", str(N_DOCS), "--bootstrap", "10", "--no-progress"]) == 0
    assert _ranked(tmp_path / "audit") == runs and _ndcg(tmp_path / "audit") == ndcg


def test_a_study_evaluation_unit_agrees_with_evaluate(task, dense, evaluated, tmp_path):
    from hf_posbias.study.layout import StudyModel, StudyTask, eval_dir
    from hf_posbias.study.run import evaluate_study_model
    from hf_posbias.study.spec import StudySpec

    model = StudyModel(base="tiny", config="off-the-shelf", pooling=None, folder=dense)
    unit = StudyTask(spec=str(task), name="SciFact", folder=str(task), fingerprint="f")
    spec = StudySpec(bases=["tiny"], data="d", tasks=[str(task)], configs=["uniform"])
    assert evaluate_study_model(model, [unit], spec, tmp_path, progress=False) == (1, 0)
    folder = eval_dir(tmp_path, model, unit)
    runs, ndcg = evaluated["dense"]
    # The study evaluates at evaluate's default depth (100 = N_DOCS here: the whole corpus).
    assert _ranked(folder) == runs and _ndcg(folder) == ndcg


@pytest.mark.parametrize("name", ["bm25", "dense"])
def test_a_listwise_first_stage_is_the_head_of_evaluate(name, task, dense, evaluated, tmp_path):
    lists, params = _listwise(task, tmp_path / "lw", dense if name == "dense" else "bm25")
    runs, _ = evaluated[name]
    assert params["encoding"]["document_form"] == "title text"
    assert len(lists) == len(runs)
    assert {q: runs[q][:K] for q in lists} == lists


def test_an_rrf_first_stage_is_the_fusion_of_evaluate_runs(task, dense, evaluated, tmp_path):
    from hf_posbias.listwise.experiments.firststage import reciprocal_rank_fusion

    lists, params = _listwise(task, tmp_path / "rrf", "bm25", dense)
    depth, rrf_k = params["encoding"]["depth"], params["encoding"]["rrf_k"]
    (bm25, _), (dense_runs, _) = evaluated["bm25"], evaluated["dense"]
    assert all(len(bm25[q]) == len(dense_runs[q]) == N_DOCS <= depth for q in lists)

    def fused(q: str) -> list[str]:
        """Written here, not imported: Σ 1 / (k + rank), ties by document id descending."""
        score: dict[str, float] = {}
        for run in (bm25[q][:depth], dense_runs[q][:depth]):
            for rank, doc in enumerate(run, start=1):
                score[doc] = score.get(doc, 0.0) + 1.0 / (rrf_k + rank)
        return sorted(sorted(score, reverse=True), key=lambda d: -score[d])[:K]

    assert {q: fused(q) for q in lists} == lists
    assert {q: reciprocal_rank_fusion([bm25[q], dense_runs[q]], rrf_k)[:K] for q in lists} == lists
