"""benchmarks/listwise_throughput.py at its smallest: a tiny random Llama of one layer, two
windows, and two top-25 lists through the sliding window (``--peak-tflops`` spares the CPU GEMM
measurement)."""

from __future__ import annotations

import re


def test_batched_scoring_matches_batch_one_and_lists_rerank(run_benchmark):
    out = run_benchmark(
        "listwise_throughput.py",
        *("--random-7b", "--tiny", "--layers", "1", "--windows", "2", "--batch-size", "2"),
        *("--passage-tokens", "8", "--list-size", "25", "--peak-tflops", "1"),
    )
    assert "random llama-2-7b shape (tiny sizes, 1 layers, bf16)" in out
    rows = re.findall(r"^\s+(\d+)\s+[\d.]+\s+[\d.]+\s+\d+", out, flags=re.M)
    assert rows == ["1", "2"]  # batch 1 and batch 2 both measured
    diff = float(re.search(r"max \|logit difference\| (\S+)", out).group(1))
    assert diff < 1e-2  # same windows, same logits whatever the batch (bf16 rounding aside)
    # 25 passages, window 20, step 10: 2 windows per list, 2 lists
    assert "top-25 lists, window 20 step 10, 2 queries in lockstep at batch 2" in out
    assert "(4 windows)" in out
