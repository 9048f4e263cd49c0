"""benchmarks/verify_throughput.py at its smallest: 3 documents (9 candidates)."""

from __future__ import annotations

import re


def test_panel_and_stage2_give_the_naive_scores(run_benchmark):
    out = run_benchmark("verify_throughput.py", "--docs", "3", "--repeat", "1")
    assert "candidates: 9 (3 documents x 3 positions), pairs: 27" in out
    # --repeat 1: every document repeats its begin query in the middle, so 9 of 27 pairs repeat
    assert "unique pairs scored by the panel: 18" in out
    assert re.search(r"\(atol 1e-06\): same$", out.strip())
