"""benchmarks/scaling.py at its smallest sizes: the stages run, are measured and fitted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_scaling_measures_every_stage_at_each_size(run_benchmark, tmp_path: Path):
    out_json = tmp_path / "scaling.json"
    out = run_benchmark(
        "scaling.py",
        *("--sizes", "150,600", "--floor", "100", "--queries", "30"),
        *("--stages", "build,evaluate-bm25,listwise-bm25", "--json", str(out_json)),
    )
    figures = json.loads(out_json.read_text())
    assert figures["sizes"] == {s: [150, 600] for s in ("build", "evaluate-bm25", "listwise-bm25")}
    assert figures["held_bytes_per_document"]["bm25_index"] > 0
    assert [s["stage"] for s in figures["stages"]] == ["build", "evaluate-bm25", "listwise-bm25"]
    for stage in figures["stages"]:
        assert [r["documents"] for r in stage["runs"]] == [150, 600]
        assert stage["floor"]["documents"] == 100
        for run in [stage["floor"], *stage["runs"]]:
            assert run["wall_s"] > 0 and run["cpu_s"] > 0 and run["peak_rss_mb"] > 50
        assert isinstance(stage["b_work"], float) and isinstance(stage["mb_per_1k_docs"], float)
        # The CLI call is timed after the floor run's imports: its CPU time is the stage's own
        # work, a part of the process's, and fitted on its own.
        assert isinstance(stage["b_main_cpu"], float)
        for run in [stage["main_floor"], *stage["runs"]]:
            assert 0 < run["main_cpu_s"] < run["cpu_s"]
        assert f"b(CLI call cpu) = {stage['b_main_cpu']}" in out
        assert set(stage["peak_rss_ratio_4x"]) == {"150->600"}
        assert f"{stage['stage']:16s} b(work) = " in out
        # The headline exponent is the CLI call's, judged against the limit.
        assert stage["b"] == stage["b_main_cpu"] and stage["b_of"] == "CLI call cpu"
        assert stage["b_within_limit"] == (stage["b"] <= 1.1)
        assert f"{stage['stage']:16s} b = {stage['b']} (CLI call cpu; " in out
    assert "every stage b <= 1.1: " in out


def test_a_size_below_the_floor_is_one_line():
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "scaling.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--sizes", "20", "--floor", "30"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "every size above --floor" in proc.stderr and "Traceback" not in proc.stderr


def test_an_unknown_stage_is_one_line():
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "scaling.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--stages", "build,evaluate-bm26"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "got evaluate-bm26" in proc.stderr and "Traceback" not in proc.stderr
