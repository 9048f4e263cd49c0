"""``posbias listwise compare-tests``: the paired before/after test between two ``test`` runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.compare import compare_listwise_runs, compare_rows
from hf_posbias.rows.readers import read_rows


def run_test(reranker: str, task: Path, out: Path, positions: str = "1,4") -> Path:
    code = main(
        ["listwise", "test", "--reranker", reranker, "--task", str(task), "--k", "4"]
        + ["--positions", positions, "--passage-tokens", "8", "--dtype", "float32"]
        + ["--out", str(out), "--no-progress", "--n-resamples", "50"]
    )
    assert code == 0
    return out


@pytest.fixture(scope="module")
def two_runs(
    tmp_path_factory: pytest.TempPathFactory, shared_beir_task: Path, tiny_llm: str
) -> tuple[Path, Path]:
    """The tiny LLM and the BM25 control on the same queries and positions."""
    root = tmp_path_factory.mktemp("lw-compare")
    return (
        run_test(tiny_llm, shared_beir_task, root / "llm"),
        run_test("bm25", shared_beir_task, root / "bm25"),
    )


def test_compare_cli_prints_the_table_and_writes_the_json(two_runs, tmp_path, capsys):
    llm, bm25 = two_runs
    code = main(
        ["listwise", "compare-tests", str(llm), str(bm25), "--label-a", "llm", "--label-b", "bm25"]
        + ["--n-resamples", "200", "--out", str(tmp_path / "cmp")]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "bm25 vs llm" in out and "| input position |" in out and "Δ (bm25 − llm)" in out
    payload = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert [row["input position"] for row in payload["table"]] == ["1", "4", "mean", "PSI"]
    assert payload["queries"] == 4 and payload["k"] == 4

    # Δ per position is the mean per-query difference, recomputed from the two files.
    a, b = read_rows(llm / "per_query.jsonl"), read_rows(bm25 / "per_query.jsonl")
    for position in (1, 4):
        score_a = {r["query_id"]: r["ndcg_at_10"] for r in a if r["position"] == position}
        score_b = {r["query_id"]: r["ndcg_at_10"] for r in b if r["position"] == position}
        expected = sum(score_b[q] - score_a[q] for q in score_a) / len(score_a)
        delta = payload["comparison"]["buckets"][str(position)]["delta"]
        assert delta == pytest.approx(expected)


def test_the_pointwise_control_against_itself_is_zero(two_runs):
    _, bm25 = two_runs
    payload = compare_listwise_runs(bm25, bm25, n_resamples=50)
    comparison = payload["comparison"]
    assert all(d["delta"] == 0 for d in comparison["buckets"].values())
    assert comparison["mean"]["delta"] == 0


def test_runs_on_other_positions_or_queries_are_refused(
    two_runs, shared_beir_task, tmp_path, capsys
):
    llm, _ = two_runs
    rows = read_rows(llm / "per_query.jsonl")
    with pytest.raises(InputError, match="different queries"):
        compare_rows(rows, [dict(r, query_id="x" + r["query_id"]) for r in rows])
    other = run_test("bm25", shared_beir_task, tmp_path / "other", positions="1,2")
    code = main(["listwise", "compare-tests", str(llm), str(other)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "different input positions (1,4 vs 1,2)" in err and "\n" not in err
    code = main(["listwise", "compare-tests", str(llm), str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "is not a posbias listwise test folder" in err
    # A cut positions.json, or one without the test's fields: one line, no traceback.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "per_query.jsonl").write_text((llm / "per_query.jsonl").read_text())
    for text, message in (('{"k": 4,', "not valid JSON"), ('{"k": 4}', "no positions")):
        (broken / "positions.json").write_text(text)
        assert main(["listwise", "compare-tests", str(llm), str(broken)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "positions.json: " in err and message in err


def test_common_queries_compares_the_shared_ones(two_runs, shared_beir_task, tmp_path, capsys):
    _, bm25 = two_runs  # 4 queries
    code = main(
        ["listwise", "test", "--reranker", "bm25", "--task", str(shared_beir_task), "--k", "4"]
        + ["--positions", "1,4", "--max-queries", "2", "--out", str(tmp_path / "two")]
        + ["--no-progress", "--n-resamples", "50"]
    )
    assert code == 0
    capsys.readouterr()
    assert main(["listwise", "compare-tests", str(tmp_path / "two"), str(bm25)]) == 2
    assert "--common-queries" in capsys.readouterr().err
    payload = compare_listwise_runs(tmp_path / "two", bm25, n_resamples=50, common_queries=True)
    assert payload["queries"] == 2 and payload["queries_left_out"] == {"a": 0, "b": 2}
    assert payload["comparison"]["mean"]["delta"] == 0  # the same queries, the same control
    a, b = payload["table"][0]["A"], payload["table"][0]["B"]
    assert a == b  # B's curve was recomputed on the 2 shared queries


def test_the_t_test_is_scipys_on_the_per_query_files(two_runs, tmp_path, capsys):
    import numpy as np
    from scipy.stats import ttest_rel

    llm, bm25 = two_runs
    code = main(["listwise", "compare-tests", str(llm), str(bm25), "--method", "t-test",
                 "--out", str(tmp_path / "cmp")])  # fmt: skip
    assert code == 0 and "paired t test" in capsys.readouterr().out
    comparison = json.loads((tmp_path / "cmp" / "comparison.json").read_text())["comparison"]
    assert comparison["method"] == "t-test"
    a, b = read_rows(llm / "per_query.jsonl"), read_rows(bm25 / "per_query.jsonl")

    def score(rows: list[dict], position: int) -> dict[str, float]:
        return {r["query_id"]: r["ndcg_at_10"] for r in rows if r["position"] == position}

    ids = sorted(score(a, 1))
    for position in (1, 4):
        sa, sb = score(a, position), score(b, position)
        expected = ttest_rel([sb[q] for q in ids], [sa[q] for q in ids]).pvalue
        got = comparison["buckets"][str(position)]["p_value"]
        assert got == pytest.approx(expected, nan_ok=True)
    # The mean over positions: the t-test of each query's mean over the positions.
    mean_a = np.mean([[score(a, p)[q] for q in ids] for p in (1, 4)], axis=0)
    mean_b = np.mean([[score(b, p)[q] for q in ids] for p in (1, 4)], axis=0)
    expected = ttest_rel(mean_b, mean_a).pvalue
    assert comparison["mean"]["p_value"] == pytest.approx(expected, nan_ok=True)
