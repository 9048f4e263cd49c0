"""Q26's Table 1 from shuffle-eval runs (t-test marks) and the Fig. 4 overlay of test runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_posbias.cli import main
from hf_posbias.listwise.experiments.papertables import curves_figure
from hf_posbias.rows.readers import read_rows


def _shuffle_eval(reranker: str, task: Path, out: Path) -> Path:
    argv = ["listwise", "shuffle-eval", "--reranker", reranker, "--task", str(task), "--k", "4"]
    argv += ["--shuffles", "2", "--passage-tokens", "8", "--dtype", "float32", "--no-progress"]
    assert main([*argv, "--n-resamples", "20", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared_beir_task, tiny_llm, make_beir) -> list[Path]:
    root = tmp_path_factory.mktemp("q26-table")
    other = make_beir(root / "tiny-other", n_docs=12, n_queries=6)
    return [
        _shuffle_eval(reranker, task, root / f"{i}-{j}")
        for i, reranker in enumerate((tiny_llm, "bm25"))
        for j, task in enumerate((shared_beir_task, other))
    ]


def test_table_cells_are_recomputed_from_the_per_query_files(runs, tmp_path, capsys):
    from scipy.stats import ttest_rel

    labels = ["llm", "llm", "bm25", "bm25"]
    argv = ["listwise", "table", "--runs", *map(str, runs), "--labels", *labels]
    assert main([*argv, "--alpha", "0.5", "--out", str(tmp_path / "t1")]) == 0
    text = capsys.readouterr().out
    assert "paired t-test on the per-query scores, p < 0.5" in text and "| Average |" in text
    payload = json.loads((tmp_path / "t1" / "table.json").read_text())
    assert payload["test"] == "t-test" and len(payload["tasks"]) == 2
    for run, label in zip(runs, labels):
        task = json.loads((run / "shuffle_eval.json").read_text())["task"]
        cell = payload["cells"][label][task]
        rows = read_rows(run / "per_query.jsonl")
        original = [r["original"] for r in rows]
        shuffled = [r["shuffled"] for r in rows]
        assert cell["original"] == pytest.approx(sum(original) / len(original))
        assert cell["shuffled"] == pytest.approx(sum(shuffled) / len(shuffled))
        p = ttest_rel(shuffled, original).pvalue
        assert cell["p_value"] == pytest.approx(p, nan_ok=True)
        row = next(r for r in payload["table"] if r[""] == label)
        assert row[task].endswith("*") == bool(p < 0.5)
    for label in ("llm", "bm25"):
        cells = payload["cells"][label]
        mean = sum(cells[t]["original"] for t in payload["tasks"]) / 2
        assert cells["Average"]["original"] == pytest.approx(mean)
    # The order-blind BM25 control: shuffling changes nothing, no mark.
    assert all(payload["cells"]["bm25"][t]["delta"] == 0 for t in payload["tasks"])


def test_a_row_with_two_runs_of_one_task_is_refused(runs, tmp_path, capsys):
    argv = ["listwise", "table", "--runs", str(runs[0]), str(runs[0]), "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "already has a run of task" in err and "\n" not in err


def test_curves_overlay_one_line_per_test_run(shared_beir_task, tiny_llm, tmp_path):
    folders = []
    for name, reranker in (("llm", tiny_llm), ("bm25", "bm25")):
        out = tmp_path / name
        argv = ["listwise", "test", "--reranker", reranker, "--task", str(shared_beir_task)]
        argv += ["--k", "4", "--positions", "1,4", "--passage-tokens", "8", "--dtype", "float32"]
        assert main([*argv, "--no-progress", "--n-resamples", "20", "--out", str(out)]) == 0
        folders.append(out)
    fig = curves_figure(folders, ["llm", "bm25"])
    assert [line.get_label() for line in fig.axes[0].lines] == ["llm", "bm25"]
    figure = tmp_path / "figure"
    assert main(["listwise", "curves", "--runs", *map(str, folders), "--out", str(figure)]) == 0
    assert (figure / "curves.png").stat().st_size > 0
