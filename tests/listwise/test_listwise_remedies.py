"""``posbias listwise reranker-remedies``: same queries and windows for every remedy, shared
shuffles, costs counted, the BM25 control flat under every remedy, resumable."""

from __future__ import annotations

import json

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.experiment_settings import ListwiseRemediesConfig
from hf_posbias.listwise.experiments.remedies import run_listwise_remedies
from hf_posbias.listwise.experiments.taskio import load_rerank_task


def test_remedies_share_windows_and_count_their_cost(beir_task, tmp_path, slot_biased):
    task = load_rerank_task(beir_task)
    relevant = {d for q in task.qrels.values() for d, g in q.items() if g > 0}
    reranker = slot_biased(relevant)
    config = ListwiseRemediesConfig(
        k=6, positions="1,3,6", shuffles="1,2,4", n_resamples=100, checkpoints="ckpt/debiased"
    )
    loaded = []

    def load(path):
        loaded.append(path)
        return slot_biased(relevant, name=path)

    out = tmp_path / "rem"
    with pytest.raises(InputError, match="--checkpoints: ckpt/debiased is not a folder"):
        run_listwise_remedies(reranker, task, out, config, load_checkpoint=load)
    assert reranker.windows == 0  # refused before the first window
    (tmp_path / "ckpt" / "debiased").mkdir(parents=True)
    config.checkpoints = str(tmp_path / "ckpt" / "debiased")
    table = run_listwise_remedies(
        reranker, task, out, config, load_checkpoint=load, show_progress=False
    )
    rows = {r["remedy"]: r for r in table}
    assert list(rows) == [
        "none",
        "calibrated",
        "permsc-borda-m2",
        "permsc-kemeny-m2",
        "permsc-borda-m4",
        "permsc-kemeny-m4",
        "debiasfirst:debiased",
    ]
    n_queries = 4
    # 3 positions per query + 3 shared shuffles per query (m up to 4) + 1 content-free window.
    assert reranker.windows == n_queries * (3 + 3) + 1
    assert rows["none"]["windows"] == n_queries * 3
    assert rows["calibrated"]["windows"] == n_queries * 3 + 1
    assert rows["permsc-borda-m2"]["windows"] == n_queries * (3 + 1)
    assert rows["permsc-kemeny-m4"]["windows"] == n_queries * (3 + 3)
    assert rows["permsc-borda-m4"]["windows_per_ranking"] == 4.0
    assert rows["debiasfirst:debiased"]["windows"] == n_queries * 3
    assert loaded == [str(tmp_path / "ckpt" / "debiased")]
    assert all(r["seconds"] >= 0 for r in table)
    # The slot prior dominates the plain curve; calibration removes it exactly.
    assert rows["none"]["ndcg_by_position"][0] == 1.0 and rows["none"]["psi"] > 0.5
    assert rows["calibrated"]["psi"] == 0.0 and rows["calibrated"]["mean"] == 1.0
    assert rows["calibrated"]["delta_mean"] > 0 and rows["none"]["delta_mean"] is None
    saved = json.loads((out / "remedies.json").read_text())
    assert [r["remedy"] for r in saved] == list(rows)
    assert {"mean", "psi", "harmonic_mean", "delta_mean", "p_value", "seconds"} <= set(saved[0])
    assert (out / "remedies.md").read_text().startswith("| remedy |")
    assert (out / "remedies.png").stat().st_size > 1000
    per_query = (out / "per_query.jsonl").read_text().splitlines()
    assert len(per_query) == len(rows) * n_queries * 3

    # A rerun resumes: no window is scored again (the calibration prior is cached too).
    again = slot_biased(relevant)
    rerun = run_listwise_remedies(again, task, out, config, load_checkpoint=load)
    assert again.windows == 0
    assert [r["mean"] for r in rerun] == [r["mean"] for r in table]


def test_bm25_control_is_flat_under_every_remedy(beir_task, tmp_path):
    out = tmp_path / "bm25"
    args = [
        "listwise",
        "reranker-remedies",
        "--reranker",
        "bm25",
        "--task",
        str(beir_task),
        "--k",
        "6",
    ]
    assert main([*args, "--shuffles", "1,3", "--out", str(out), "--no-progress"]) == 0
    table = json.loads((out / "remedies.json").read_text())
    assert [r["remedy"] for r in table] == [
        "none",
        "calibrated",
        "permsc-borda-m3",
        "permsc-kemeny-m3",
    ]
    for row in table:
        assert row["psi"] == 0.0 and len(set(row["ndcg_by_position"])) == 1
        assert row["mean"] == table[0]["mean"]


def test_bad_shuffle_counts_are_one_line_errors():
    with pytest.raises(InputError, match="^shuffles takes integers >= 1"):
        ListwiseRemediesConfig(shuffles="0,2")
    with pytest.raises(InputError, match="^shuffles takes comma-separated integers"):
        ListwiseRemediesConfig(shuffles="a")


def test_a_larger_m_reranks_only_the_new_shuffles(beir_task, tmp_path, slot_biased):
    task = load_rerank_task(beir_task)
    relevant = {d for q in task.qrels.values() for d, g in q.items() if g > 0}
    n_queries = 4

    def run(out, shuffles, **overrides):
        reranker = slot_biased(relevant)
        settings = {"k": 6, "positions": "1,3,6", "n_resamples": 50, "plot": False}
        config = ListwiseRemediesConfig(shuffles=shuffles, **{**settings, **overrides})
        table = run_listwise_remedies(reranker, task, out, config, show_progress=False)
        return reranker.windows, table, (out / "per_query.jsonl").read_text()

    def timeless(table):
        return [{k: v for k, v in row.items() if k != "seconds"} for row in table]

    grown = tmp_path / "grown"
    assert run(grown, "1,3")[0] == n_queries * (3 + 2) + 1  # + the content-free window
    windows, table, per_query = run(grown, "1,3,5")
    assert windows == n_queries * 2  # shuffles 2 and 3 only
    assert (grown / "shuffles-002-004" / "manifest.json").is_file()
    fresh_windows, fresh_table, fresh_per_query = run(tmp_path / "fresh", "1,3,5")
    assert fresh_windows == n_queries * (3 + 4) + 1
    assert timeless(table) == timeless(fresh_table) and per_query == fresh_per_query
    rows = {r["remedy"]: r for r in table}
    assert rows["permsc-borda-m5"]["windows"] == n_queries * (3 + 4)
    assert rows["permsc-borda-m3"]["windows"] == n_queries * (3 + 2)

    # A smaller m reads a subset; the same m again reranks nothing.
    windows, small, _ = run(grown, "1,2")
    assert windows == 0
    assert timeless(small) == timeless(run(tmp_path / "small", "1,2")[1])
    assert run(grown, "1,3,5")[0] == 0
    # Grown further: one more block after the existing one.
    assert run(grown, "1,7")[0] == n_queries * 2
    assert (grown / "shuffles-004-006").is_dir()
    # Any other change is still refused.
    with pytest.raises(InputError, match="positions"):
        run(grown, "1,3,5", positions="1,6")


def test_a_registered_listwise_remedy_adds_its_rows(beir_task, tmp_path, slot_biased, monkeypatch):
    """The remedy rows come from the registry (built-ins, then plugins): one more entry is one
    more row, computed from the plain reranker's rows, with no window scored for it."""
    from hf_posbias.listwise.experiments import remedies
    from hf_posbias.listwise.experiments.remedy_kinds import (
        BUILTIN_LISTWISE_REMEDIES,
        ListwiseRemedy,
        Variant,
    )
    from hf_posbias.plugins import Registry

    def reversed_rows(run, plain, shuffles, none):
        rows = [{**row, "ranking": row["ranking"][::-1]} for row in plain]
        return {"reversed": Variant(rows, none.windows, none.seconds, 1.0, {})}

    extra = ListwiseRemedy("reversed", "the plain ranking reversed", (), reversed_rows)
    registry = Registry(
        "tests.listwise_remedies",
        ListwiseRemedy,
        what="listwise remedy",
        builtins=lambda: (*BUILTIN_LISTWISE_REMEDIES, extra),
    )
    monkeypatch.setattr(remedies, "LISTWISE_REMEDY_REGISTRY", registry)
    task = load_rerank_task(beir_task)
    relevant = {d for q in task.qrels.values() for d, g in q.items() if g > 0}
    reranker = slot_biased(relevant)
    config = ListwiseRemediesConfig(k=6, positions="1,6", shuffles="1", n_resamples=50)
    table = run_listwise_remedies(reranker, task, tmp_path / "rem", config, show_progress=False)
    rows = {r["remedy"]: r for r in table}
    assert list(rows) == ["none", "calibrated", "reversed"]
    assert rows["reversed"]["windows"] == rows["none"]["windows"] == reranker.windows - 1
    per_query = (tmp_path / "rem" / "per_query.jsonl").read_text().splitlines()
    assert len(per_query) == len(rows) * 4 * 2  # every remedy: 4 queries × 2 positions
