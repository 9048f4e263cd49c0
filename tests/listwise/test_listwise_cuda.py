"""GPU path of the FIRST scorer (skips without CUDA): bf16 on the GPU follows fp32 on the CPU."""

from __future__ import annotations

import pytest
import torch

from hf_posbias.rerankers.loading import load_reranker
from hf_posbias.rerankers.records import Passage

pytestmark = pytest.mark.cuda


def test_cuda_bf16_scores_follow_cpu_fp32(tiny_llm):
    windows = [
        (f"query {w}", [Passage(f"d{i}", f"passage {i} about topic {w + i}") for i in range(6)])
        for w in range(5)
    ]
    cpu = load_reranker(tiny_llm, dtype="float32", device="cpu", window=6, batch_size=1)
    gpu = load_reranker(tiny_llm, dtype="auto", device="cuda", window=6, batch_size=4)
    expected = "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    assert gpu.describe()["dtype"] == expected
    for a, b in zip(cpu.window_logits(windows), gpu.window_logits(windows)):
        assert torch.corrcoef(torch.tensor([a, b]))[0, 1] > 0.95
