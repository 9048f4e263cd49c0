"""benchmarks/eval_encode_once.py at its smallest: 6 documents, 2 queries per bucket."""

from __future__ import annotations

import ast
import re


def test_one_subset_encodes_the_corpus_once_and_agrees(run_benchmark):
    out = run_benchmark("eval_encode_once.py", "--max-docs", "6", "--queries-per-bucket", "2")
    encoded = {
        label: ast.literal_eval(by_type)
        for label, by_type in re.findall(
            r"^\s*(per-bucket|one-subset): texts encoded [\d,]+ (\{[^}]*\})", out, re.M
        )
    }
    one, per_bucket = encoded["one-subset"], encoded["per-bucket"]
    assert one["document"] > 0 and one["query"] > 0
    # three buckets, three subsets over one corpus: the corpus three times, each query once
    assert per_bucket == {"query": one["query"], "document": 3 * one["document"]}
    assert "per-bucket nDCG@10 agree (to mteb's 5 rounded decimals): True" in out
