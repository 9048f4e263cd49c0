"""`posbias evaluate` / `posbias analyze audit` in-process: acceptance shape, bad inputs, report
files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from task_fixtures import wiki_task

from hf_posbias.cli import main


@pytest.fixture(scope="module")
def task_folder(shared_data, tmp_path_factory):
    return wiki_task(shared_data, tmp_path_factory.mktemp("cli") / "task", n_docs=12)


def test_evaluate_bm25_writes_summary(task_folder, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(
        ["evaluate", "--model", "bm25", "--task", str(task_folder), "--out", str(out), "--plot"]
    )
    assert code == 0
    data = json.loads((out / "summary.json").read_text())
    assert list(data["ndcg_at_10"]) == ["begin", "middle", "end"]
    assert data["mean"] == pytest.approx(sum(data["ndcg_at_10"].values()) / 3)
    assert 0.0 <= data["psi"] <= 1.0
    assert (out / "summary.md").exists() and (out / "summary.csv").exists()
    assert (out / "plots" / "WikiSentences.png").exists()
    assert "WikiSentences: mean nDCG@10" in capsys.readouterr().out


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


def test_bad_inputs_exit_2_with_one_line(task_folder, tmp_path, capsys):
    assert (
        main(["evaluate", "--model", "bm25", "--task", "NoSuchTask", "--out", str(tmp_path)]) == 2
    )
    assert "unknown task 'NoSuchTask'; known tasks: SQuAD-PosQ" in _one_error_line(capsys)

    missing_model = str(tmp_path / "no-model")
    assert (
        main(
            [
                "evaluate",
                "--model",
                missing_model,
                "--task",
                str(task_folder),
                "--out",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert f"model path {missing_model} does not exist" in _one_error_line(capsys)

    broken = tmp_path / "broken"
    shutil.copytree(task_folder, broken)
    (broken / "qrels.parquet").unlink()
    argv = ["evaluate", "--model", "bm25", "--task", str(broken), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "missing qrels.parquet" in _one_error_line(capsys)

    assert (
        main(
            [
                "evaluate",
                "--model",
                "bm25",
                "--task",
                str(task_folder),
                "--out",
                str(tmp_path),
                "--top-k",
                "0",
            ]
        )
        == 2
    )
    assert "--top-k must be >= 10 to compute nDCG@10" in _one_error_line(capsys)


def test_audit_writes_markdown_html_and_pngs(task_folder, tmp_path, capsys):
    out = tmp_path / "audit"
    assert main(["analyze", "audit", "bm25", "--task", str(task_folder), "--out", str(out)]) == 0
    md = (out / "audit.md").read_text()
    page = (out / "audit.html").read_text()
    assert "Mirror reversal" in md and "Δrev" in md
    assert "Position Sensitivity Index" in md
    assert "Relative-position curve — WikiSentences" in md  # PosIR's 20-bin view
    assert page.count("data:image/png;base64,") == 3  # curves, relative curve, reversal bars
    assert (out / "plots" / "relative-WikiSentences.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "plots" / "WikiSentences.png").read_bytes()[:4] == b"\x89PNG"
    reversal = json.loads((out / "reversal.json").read_text())[0]
    assert reversal["task"] == "WikiSentences"
    # what the diagnostic used and skipped, in both reports
    used = f"WikiSentences: used {reversal['n_front'] + reversal['n_back']} queries"
    assert used in md and used in page
    assert "mirror reversal" in capsys.readouterr().out


def test_help_does_not_import_heavy_libraries():
    code = (
        "import sys; from hf_posbias.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('mteb', 'torch', 'sentence_transformers') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
