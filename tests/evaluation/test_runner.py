"""evaluate_model end to end on a real-text task: scores, PSI, intervals, exports, pitfalls."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from task_fixtures import wiki_task

from hf_posbias.errors import InputError, ModelLoadError
from hf_posbias.evaluation.runs.exports import read_per_query, read_trec_run
from hf_posbias.evaluation.runs.runner import evaluate_model
from hf_posbias.evaluation.summary import EvaluationSummary, read_summaries
from hf_posbias.statistics.psi import summarize_positions

N_DOCS = 15


@pytest.fixture(scope="module")
def task_folder(shared_data, tmp_path_factory) -> Path:
    return wiki_task(shared_data, tmp_path_factory.mktemp("wiki") / "task", n_docs=N_DOCS)


def _check_summary_shape(path: Path, buckets: list[str]) -> dict:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    assert data["buckets"] == buckets
    assert list(data["ndcg_at_10"]) == buckets
    assert all(0.0 <= data["ndcg_at_10"][b] <= 1.0 for b in buckets)
    assert data["n_queries"] == {b: N_DOCS // 3 for b in buckets}
    assert data["empty_buckets"] == []
    expected = summarize_positions(data["ndcg_at_10"])
    assert data["mean"] == pytest.approx(expected.mean)
    assert data["psi"] == pytest.approx(expected.psi)
    assert data["worst_drop"] == pytest.approx(expected.worst_drop)
    assert data["n_documents"] == N_DOCS
    return data


def test_tiny_and_minilm_scores_encode_once_and_never_mix(
    task_folder, tiny_sentence_transformer, minilm_path, tmp_path
):
    out = tmp_path / "run"  # both models write into the SAME folder (the mteb cache pitfall)
    [tiny] = evaluate_model(tiny_sentence_transformer, [task_folder], out=out, batch_size=16)
    tiny_json = _check_summary_shape(out / "summary.json", ["begin", "middle", "end"])
    # One subset: mteb itself encoded every corpus text and every query exactly once.
    assert tiny.encode_stats["encoded_by_type"] == {"document": N_DOCS, "query": N_DOCS}

    [mini] = evaluate_model(minilm_path, [task_folder], out=out, batch_size=16)
    mini_json = _check_summary_shape(out / "summary.json", ["begin", "middle", "end"])
    assert mini.model_name != tiny.model_name or mini.model_revision != tiny.model_revision
    assert mini_json["ndcg_at_10"] != tiny_json["ndcg_at_10"]
    # A real encoder finds verbatim sentences better than a random tiny one.
    assert mini.mean > max(0.85, tiny.mean)
    # mteb's own result files live side by side, one folder per model.
    assert Path(mini.mteb_result_path).exists() and Path(tiny.mteb_result_path).exists()
    assert Path(mini.mteb_result_path) != Path(tiny.mteb_result_path)


def test_two_local_checkpoints_with_the_same_folder_name_get_their_own_scores(
    task_folder, tmp_path
):
    from hf_posbias.testing import build_tiny_sentence_transformer

    # Same display name ("x/model"), same config, different weights: only a content-derived
    # revision keeps mteb from handing the second model the first one's scores.
    a = build_tiny_sentence_transformer(tmp_path / "a" / "x" / "model", seed=0)
    b = build_tiny_sentence_transformer(tmp_path / "b" / "x" / "model", seed=1)
    out = tmp_path / "run"
    [sa] = evaluate_model(a, [task_folder], out=out)
    [sb] = evaluate_model(b, [task_folder], out=out)
    assert sa.model_name == sb.model_name == "x/model"
    assert sa.model_revision != sb.model_revision
    assert sa.metrics["recall_at_100"] == {b: 1.0 for b in sa.buckets}  # 15 docs < top-100
    assert set(sa.metrics) == {"ndcg_at_100", "recall_at_10", "recall_at_100", "mrr_at_10"}
    assert (sa.ndcg_at_10, sa.metrics["mrr_at_10"]) != (sb.ndcg_at_10, sb.metrics["mrr_at_10"])


def test_bm25_finds_verbatim_sentences_in_every_bucket(task_folder, tmp_path):
    [summary] = evaluate_model("bm25", [task_folder], out=tmp_path / "bm25")
    assert summary.model_name == "mteb/baseline-bm25s"
    for bucket, score in summary.ndcg_at_10.items():
        assert score == pytest.approx(1.0, abs=0.05), bucket
    assert summary.psi < 0.05
    # One subset: mteb indexed the corpus once.
    assert summary.search_stats["index_builds"] == 1


def test_per_query_table_and_trec_run_average_back_exactly(task_folder, tmp_path):
    from hf_posbias.tasks.position_scoring import mean_exact

    [summary] = evaluate_model("bm25", [task_folder], out=tmp_path / "bm25", bootstrap=200)
    rows = read_per_query(summary.per_query_path)
    assert len(rows) == N_DOCS
    assert set(rows[0]) >= {
        "query_id",
        "bucket",
        "evidence_start",
        "evidence_end",
        "relative_position",
        "doc_length",
        "ndcg_at_10",
        "first_relevant_rank",
    }
    for bucket in summary.buckets:
        mine = [r["ndcg_at_10"] for r in rows if r["bucket"] == bucket]
        assert mean_exact(mine) == summary.ndcg_at_10[bucket]  # exactly, not approximately
        assert sum(mine) / len(mine) == pytest.approx(summary.ndcg_at_10[bucket], abs=1e-12)
        for metric, values in summary.metrics.items():
            assert mean_exact([r[metric] for r in rows if r["bucket"] == bucket]) == values[bucket]
    for r in rows:
        assert 0.0 <= r["relative_position"] <= 1.0
        assert r["relative_position"] == pytest.approx(r["evidence_start"] / r["doc_length"])
    # The TREC run holds the top-100 (here the whole corpus) and ranks the first relevant
    # document where the table says.
    run = read_trec_run(summary.run_path)
    assert set(run) == {r["query_id"] for r in rows}
    assert all(len(docs) == N_DOCS for docs in run.values())
    lines = Path(summary.run_path).read_text().splitlines()
    qrels = {f"q{i}": f"d{i}" for i in range(N_DOCS)}
    for r in rows:
        ranks = [ln.split() for ln in lines if ln.split()[0] == r["query_id"]]
        hit = next(int(p[3]) for p in ranks if p[2] == qrels[r["query_id"]])
        assert hit == r["first_relevant_rank"]
    # Intervals: every bucket, the mean and PSI, each around its estimate.
    ci = summary.intervals
    assert ci["n_resamples"] == 200 and set(ci["buckets"]) == set(summary.buckets)
    for bucket in summary.buckets:
        entry = ci["buckets"][bucket]
        assert entry["estimate"] == pytest.approx(summary.ndcg_at_10[bucket])
        assert entry["low"] <= entry["estimate"] <= entry["high"]
    assert ci["psi"]["estimate"] == pytest.approx(summary.psi)


def test_bootstrap_is_seeded_and_zero_is_refused(task_folder, tmp_path):
    [a] = evaluate_model("bm25", [task_folder], out=tmp_path / "a", bootstrap=100, seed=3)
    [b] = evaluate_model("bm25", [task_folder], out=tmp_path / "b", bootstrap=100, seed=3)
    assert a.intervals == b.intervals
    with pytest.raises(InputError, match="^bootstrap must be >= 1, got 0"):
        evaluate_model("bm25", [task_folder], out=tmp_path / "c", bootstrap=0)


def test_the_verbs_settings_give_evaluate_model_its_keywords(task_folder, tmp_path):
    from hf_posbias.evaluation.evaluation_settings import EvaluateSettings
    from hf_posbias.modeling.loaders import load_model

    [new] = evaluate_model("bm25", [task_folder], out=tmp_path / "new", bootstrap=20)
    settings = EvaluateSettings(model="bm25", task=(task_folder,), out=tmp_path / "a", bootstrap=20)
    [same] = evaluate_model(settings.model, settings.task, **settings.evaluate_kwargs())
    assert (same.ndcg_at_10, same.intervals) == (new.ndcg_at_10, new.intervals)
    again_settings = replace(settings, out=tmp_path / "b")
    [again] = evaluate_model(load_model("bm25"), settings.task, **again_settings.evaluate_kwargs())
    assert again.ndcg_at_10 == new.ndcg_at_10
    assert (tmp_path / "b" / "summary.json").is_file()


def test_a_model_loaded_once_evaluates_as_its_name_does(
    task_folder, tiny_sentence_transformer, tmp_path, monkeypatch
):
    # pb.load_model: the one loader of model arguments; evaluate makes it ready for mteb each
    # time (a remedy included) and never loads it again.
    from hf_posbias.evaluation.runs.remedies import RemedySettings
    from hf_posbias.modeling import loaders

    loaded = loaders.load_model(tiny_sentence_transformer, device="cpu")
    assert (loaded.source, type(loaded.model).__name__) == ("folder", "SentenceTransformer")
    [by_name] = evaluate_model(
        tiny_sentence_transformer, [task_folder], out=tmp_path / "name", bootstrap=None
    )

    def loaded_again(*args, **kwargs):
        raise AssertionError("a loaded model was loaded again")

    monkeypatch.setattr(loaders, "load_named_sentence_transformer", loaded_again)
    [plain] = evaluate_model(loaded, [task_folder], out=tmp_path / "plain", bootstrap=None)
    same = ("model", "model_name", "model_revision", "ndcg_at_10", "encode_stats")
    assert [getattr(plain, k) for k in same] == [getattr(by_name, k) for k in same]
    limit = loaded.model.max_seq_length
    maxp = RemedySettings(remedy="maxp", passage_tokens=limit, stride=8)
    [remedied] = evaluate_model(
        loaded, [task_folder], out=tmp_path / "maxp", bootstrap=None, remedy=maxp
    )
    assert (plain.remedy, remedied.remedy) == (None, "maxp")
    with pytest.raises(InputError, match="a reranker is given by name"):
        evaluate_model(loaded, [task_folder], out=tmp_path / "rr", first_stage="bm25")


def test_cross_encoder_reranks_bm25_top_k(task_folder, tiny_cross_encoder, tmp_path):
    [summary] = evaluate_model(
        "bm25", [task_folder], out=tmp_path / "rr", reranker=tiny_cross_encoder, rerank_k=5
    )
    assert summary.reranker == tiny_cross_encoder and summary.first_stage == "bm25"
    assert summary.search_stats["pairs_scored"] == N_DOCS * 5
    assert set(summary.ndcg_at_10) == {"begin", "middle", "end"}
    # Reranking only reorders the top 5: recall@10 is capped by BM25's top-5 (all hits here).
    assert all(v == pytest.approx(1.0) for v in summary.metrics["recall_at_10"].values())
    assert "experiments" in summary.mteb_result_path  # filed apart from the plain reranker
    # The same pipeline spelled the other way round: the cross-encoder is the model.
    from hf_posbias.evaluation.runs.mteb_models import load_mteb_model

    same = load_mteb_model(tiny_cross_encoder, first_stage="bm25", rerank_k=5)
    assert (same.kind, same.reranker, same.first_stage) == ("rerank", tiny_cross_encoder, "bm25")
    assert same.model.mteb_model_meta.experiment_kwargs["rerank_k"] == 5


def test_empty_bucket_is_reported_and_psi_uses_the_rest(shared_data, tmp_path):
    folder = wiki_task(
        shared_data,
        tmp_path / "task",
        n_docs=8,
        buckets=["begin", "middle", "end"],
        query_buckets=["begin", "end"],
    )
    with pytest.warns(UserWarning, match="middle"):
        [summary] = evaluate_model("bm25", [folder], out=tmp_path / "out", bootstrap=50)
    assert summary.empty_buckets == ["middle"]
    assert summary.ndcg_at_10["middle"] is None
    assert summary.n_queries == {"begin": 4, "middle": 0, "end": 4}
    present = {b: v for b, v in summary.ndcg_at_10.items() if v is not None}
    assert summary.psi == pytest.approx(summarize_positions(present).psi)
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["ndcg_at_10"]["middle"] is None and saved["empty_buckets"] == ["middle"]
    assert any("middle" in w for w in saved["warnings"])


def test_several_tasks_write_a_list_and_tables(task_folder, tmp_path):
    second = tmp_path / "second"
    shutil.copytree(task_folder, second)
    meta = json.loads((second / "task.json").read_text())
    meta["name"] = "WikiSentences2"
    (second / "task.json").write_text(json.dumps(meta))
    summaries = evaluate_model("bm25", [task_folder, second], out=tmp_path / "out")
    data = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert isinstance(data, list) and [d["task"] for d in data] == [
        "WikiSentences",
        "WikiSentences2",
    ]
    assert read_summaries(tmp_path / "out" / "summary.json") == summaries
    csv_lines = (tmp_path / "out" / "summary.csv").read_text().strip().splitlines()
    assert len(csv_lines) == 1 + 2 * 3  # header + task × bucket
    assert "WikiSentences2" in (tmp_path / "out" / "summary.md").read_text()


def test_bad_inputs_fail_before_loading_a_model(tmp_path, task_folder):
    with pytest.raises(InputError, match="unknown task 'NoSuchTask'; known tasks: SQuAD-PosQ"):
        evaluate_model("bm25", ["NoSuchTask"], out=tmp_path)
    with pytest.raises(ModelLoadError, match="does not exist"):
        evaluate_model("/no/such/model", [task_folder], out=tmp_path)
    broken = tmp_path / "broken"
    shutil.copytree(task_folder, broken)
    (broken / "qrels.parquet").unlink()
    with pytest.raises(InputError, match="missing qrels.parquet"):
        evaluate_model("bm25", [broken], out=tmp_path)


def test_summary_when_every_bucket_scores_zero():
    with pytest.warns(UserWarning, match="undefined"):
        s = EvaluationSummary.from_scores(
            "m", "T", ["a", "b"], {"a": 0.0, "b": 0.0}, n_queries={"a": 1, "b": 1}
        )
    assert s.psi is None and s.mean == 0.0


def test_a_trec_run_with_a_score_that_is_not_a_number_is_one_line(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 0.5 bm25\nq1 Q0 d2 2 high bm25\n")
    with pytest.raises(InputError, match=r"run\.trec:2: score 'high' is not a number"):
        read_trec_run(run)


def test_evaluation_counts_texts_encoded_and_queries_scored(
    task_folder, tiny_sentence_transformer, tmp_path, capsys, second_per_reading_clock
):
    # Not a terminal under pytest: plain lines with counts against the task's totals (15
    # documents + 15 queries; batches of 4 give a line each 10 %); --no-progress: none.
    # The counters read a one-second clock: a tiny model encodes a batch in milliseconds.
    evaluate_model(tiny_sentence_transformer, [task_folder], out=tmp_path / "a", batch_size=4)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("evaluat")]
    texts = [line for line in lines if ": texts encoded: " in line]
    assert not any("\r" in line for line in lines)
    assert texts[-1].split(": texts encoded: ")[1].startswith(f"{2 * N_DOCS}/{2 * N_DOCS} (100%)")
    assert len(texts) >= 5 and any("eta " in line for line in texts)
    [scored] = [line for line in lines if ": queries scored: " in line]
    assert scored.split(": queries scored: ")[1].startswith(f"{N_DOCS}/{N_DOCS} (100%)")
    assert not any("still running" in line for line in lines)

    evaluate_model(
        tiny_sentence_transformer, [task_folder], out=tmp_path / "b", batch_size=4, progress=False
    )
    assert not any(": texts encoded: " in line for line in capsys.readouterr().err.splitlines())
