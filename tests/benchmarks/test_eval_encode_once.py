"""benchmarks/eval_encode_once.py at its smallest: 6 documents, 2 queries per bucket."""

from __future__ import annotations

import re


def test_one_subset_encodes_the_corpus_once_and_agrees(run_benchmark):
    out = run_benchmark("eval_encode_once.py", "--max-docs", "6", "--queries-per-bucket", "2")
    encoded = {
        label: int(n.replace(",", ""))
        for label, n in re.findall(
            r"^\s*(per-bucket|one-subset): texts encoded ([\d,]+)", out, re.M
        )
    }
    docs, queries = 6, 6
    assert encoded == {"one-subset": docs + queries, "per-bucket": 3 * docs + queries}
    assert "per-bucket nDCG@10 agree (to mteb's 5 rounded decimals): True" in out
