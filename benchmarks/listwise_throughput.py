"""Throughput and MFU of the FIRST listwise scorer: batch 1 vs batched windows.

Scores the same 20-passage windows twice through
:class:`hf_posbias.rerankers.first.FirstReranker`
(the production path: prompt, left padding, ``logits_to_keep=1``) — once one window per forward
pass, once ``--batch-size`` windows per pass — and prints windows/s, prompt tokens/s and the
scoring MFU:

    MFU = prefill FLOPs / (seconds × device peak)
    prefill FLOPs per window = 2·N·T + 2·L·d·T² + 2·d·V

with N the non-embedding parameters, T the window's real (unpadded) tokens, L layers, d the
hidden size (causal attention: T²/2 query–key pairs, each a d-wide dot product for the scores
and another for the values) and V the vocabulary (the one row of logits kept). Padding is not
counted: MFU measures useful work.

Device peak: on CUDA, the data-sheet dense peak of known GPUs for the scorer's precision
(:func:`hf_posbias.devices.dense_peak_flops`; ``--peak-tflops`` overrides, unknown GPUs need
it); on CPU there is no published figure for a shared VM, so the peak is *measured* in the same
run — the best of a few large GEMMs in the scorer's dtype — and labelled as such.

Models: ``--model smollm2-135m`` (default; the packaged SmolLM2-135M-Instruct) or any causal
LM; ``--random-7b`` builds a Llama-2-7B-shaped model (hidden 4096, 32 layers, 32 heads,
intermediate 11008) with random weights from its config, directly in bf16 on the device
(``--layers`` shrinks it for a smoke run), with SmolLM2's tokenizer when installed.

Passages: SciFact abstracts from ``../shared/data/scifact_allenai`` when present, else synthetic
text. Batched and batch-1 logits are compared (max abs difference printed).

Run:
    .venv/bin/python benchmarks/listwise_throughput.py --windows 8 --batch-size 8
    .venv/bin/python benchmarks/listwise_throughput.py --random-7b --windows 64 --batch-size 16
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("POSBIAS_SHARED_DATA", REPO.parent / "shared" / "data"))


def load_passages(n: int, seed: int) -> tuple[list[tuple[str, list[str]]], str]:
    """``n // 20 + 1`` queries' worth of (query, 20 passage texts)."""
    rng = random.Random(seed)
    folder = SHARED / "scifact_allenai"
    if folder.is_dir():
        from hf_posbias.tasks.builders.scifact import build_scifact

        data = build_scifact(folder, split="validation")
        texts = [d["text"] for d in data.corpus]
        queries = [q["text"] for q in data.queries]
        source = f"SciFact abstracts from {folder}"
    else:
        words = [
            "retrieval",
            "position",
            "bias",
            "model",
            "query",
            "document",
            "passage",
            "answer",
            "rank",
            "list",
        ]
        texts = [" ".join(rng.choice(words) for _ in range(200)) for _ in range(400)]
        queries = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(50)]
        source = "synthetic text (shared data absent)"
    windows = [(rng.choice(queries), rng.sample(texts, 20)) for _ in range(n)]
    return windows, source


def build_random_7b(layers: int, device: str) -> tuple[object, object]:
    """A Llama-2-7B-shaped causal LM with random weights, built in bf16 on ``device``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

    try:
        from hf_posbias.modeling import causal_lm_folder

        tokenizer = AutoTokenizer.from_pretrained(causal_lm_folder("smollm2-135m"))
    except Exception:  # the packaged model is optional: fall back to a local BPE tokenizer
        from hf_posbias.testing import build_bpe_tokenizer

        tokenizer = build_bpe_tokenizer(vocab_size=8000)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    config = LlamaConfig(
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=layers,
        num_attention_heads=32,
        num_key_value_heads=32,
        max_position_embeddings=4096,
        vocab_size=len(tokenizer),
    )
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config)
    finally:
        torch.set_default_dtype(previous)
    return model.eval(), tokenizer


def window_flops(config: object, n_params: int, tokens: int) -> float:
    """Forward FLOPs of one window of ``tokens`` real tokens (see the module docstring)."""
    d = config.hidden_size
    return (
        2.0 * n_params * tokens
        + 2.0 * config.num_hidden_layers * d * tokens**2
        + 2.0 * d * (config.vocab_size)
    )


def non_embedding_params(model: object) -> int:
    embeddings = {
        id(p)
        for m in (model.get_input_embeddings(), model.get_output_embeddings())
        if m is not None
        for p in m.parameters()
    }
    return sum(p.numel() for p in model.parameters() if id(p) not in embeddings)


def measured_cpu_peak(dtype: object, size: int = 2048, repeats: int = 5) -> float:
    """Best GEMM throughput (FLOP/s) of a few ``size``×``size`` matmuls in ``dtype`` on the CPU."""
    import torch

    a = torch.randn(size, size, dtype=dtype)
    b = torch.randn(size, size, dtype=dtype)
    torch.mm(a, b)
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = max(best, 2.0 * size**3 / (time.perf_counter() - start))
    return best


def device_peak(device: str, dtype: object, override: float | None) -> tuple[float | None, str]:
    """The peak for MFU: ``--peak-tflops``; a GPU's data-sheet dense peak
    (:func:`hf_posbias.devices.dense_peak_flops`); on CPU a GEMM measured now."""
    import torch

    from hf_posbias.devices import dense_peak_flops, device_info

    if override:
        return override * 1e12, f"{override} TFLOP/s (--peak-tflops)"
    info = device_info(device)
    if info.kind == "cuda":
        precision = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")
        peak = dense_peak_flops(info, precision)
        if peak is None:
            return None, f"no data-sheet peak for {info.name!r}: pass --peak-tflops for MFU"
        return peak, f"{peak / 1e12:.1f} TFLOP/s dense {precision} ({info.name}, data sheet)"
    peak = measured_cpu_peak(dtype)
    name = str(dtype).replace("torch.", "")
    return peak, f"{peak / 1e9:.1f} GFLOP/s (best {name} GEMM, measured now)"


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    from hf_posbias.devices import INFERENCE_DTYPES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--random-7b", action="store_true", help="Llama-2-7B-shaped random model")
    parser.add_argument("--layers", type=int, default=32, help="layers of --random-7b")
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--passage-tokens", type=int, default=48)
    parser.add_argument("--dtype", choices=INFERENCE_DTYPES, default="auto")
    parser.add_argument("--device", default=None)
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    from hf_posbias.devices import default_device, device_info, resolve_inference_dtype
    from hf_posbias.rerankers.first import FirstReranker, ScoringStats
    from hf_posbias.rerankers.records import Passage

    device = args.device or default_device()
    if args.random_7b:
        model, tokenizer = build_random_7b(args.layers, device)
        name = f"random Llama-7B shape ({args.layers} layers, bf16)"
    else:
        from hf_posbias.modeling import load_causal_lm

        dtype = resolve_inference_dtype(args.dtype, device_info(device))
        model, tokenizer = load_causal_lm(
            args.model, dtype=dtype, device=device, padding_side="left"
        )
        name = args.model
    raw, source = load_passages(args.windows, args.seed)
    windows = [(q, [Passage(f"p{i}", t) for i, t in enumerate(ps)]) for q, ps in raw]
    n_params = non_embedding_params(model)
    peak, peak_text = device_peak(device, model.dtype, args.peak_tflops)
    cpu_threads = torch.get_num_threads()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"model: {name}; {n_params / 1e6:.1f}M non-embedding parameters; dtype {model.dtype}")
    print(
        f"device: {device}; torch threads {cpu_threads}; load average {load:.2f}; "
        f"{os.cpu_count()} CPUs"
    )
    print(
        f"passages: {source}; {args.windows} windows of 20; --passage-tokens {args.passage_tokens}"
    )
    print(f"peak: {peak_text}")

    results = {}
    logits = {}
    for batch_size in (1, args.batch_size):
        scorer = FirstReranker(
            model, tokenizer, name=name, passage_tokens=args.passage_tokens, batch_size=batch_size
        )
        tokens = [len(ids) for ids in scorer.encode(windows)]
        scorer.window_logits(windows[:batch_size])  # warm-up (allocations, kernels)
        scorer.stats = ScoringStats()
        sync(device)
        start = time.perf_counter()
        logits[batch_size] = scorer.window_logits(windows)
        sync(device)
        seconds = time.perf_counter() - start
        flops = sum(window_flops(model.config, n_params, t) for t in tokens)
        results[batch_size] = (seconds, flops, sum(tokens), scorer.stats.padded_tokens)
    print(
        f"tokens per window: mean {sum(tokens) / len(tokens):.0f}, "
        f"min {min(tokens)}, max {max(tokens)}"
    )
    print(
        f"{'batch':>5} {'windows/s':>10} {'s/window':>9} {'tokens/s':>9} {'TFLOP/s':>8} "
        f"{'MFU':>7} {'padding':>8}"
    )
    for batch_size, (seconds, flops, real, padded) in results.items():
        mfu = f"{flops / seconds / peak:7.2%}" if peak else "    n/a"
        print(
            f"{batch_size:>5} {args.windows / seconds:>10.3f} {seconds / args.windows:>9.3f} "
            f"{real / seconds:>9.0f} {flops / seconds / 1e12:>8.3f} {mfu} "
            f"{padded / real - 1:>8.1%}"
        )
    one, many = results[1][0], results[args.batch_size][0]
    diff = max(abs(a - b) for x, y in zip(logits[1], logits[args.batch_size]) for a, b in zip(x, y))
    print(f"batched / batch-1 speed-up: {one / many:.2f}x; max |logit difference| {diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
