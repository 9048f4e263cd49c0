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
LM; ``--random-7b [SHAPE]`` builds a 7B model with random weights from its config, directly in
bf16 on the device (``--layers`` and ``--tiny`` shrink it for a smoke run), with SmolLM2's
tokenizer when
installed: ``llama-2-7b`` (default: hidden 4096, 32 layers, 32 heads, intermediate 11008) or
``mistral-7b`` (the shape of Mistral-7B-v0.1 and of FIRST's Zephyr-7B-β: hidden 4096, 32 layers,
32 query / 8 key-value heads, intermediate 14336, sliding window 4096).

Passages: SciFact abstracts from ``$POSBIAS_SHARED_DATA/scifact_allenai`` when present, else
synthetic text. Batched and batch-1 logits are compared (max abs difference printed).
``--list-size 100`` also reranks top-100 lists with rank_llm's sliding window (20 passages,
step 10), the lists of a batch in lockstep (:func:`hf_posbias.rerankers.window.rerank_lists`),
and prints the seconds per query.

Run:
    .venv/bin/python benchmarks/listwise_throughput.py --windows 8 --batch-size 8
    .venv/bin/python benchmarks/listwise_throughput.py --random-7b --windows 64 --batch-size 16
    .venv/bin/python benchmarks/listwise_throughput.py --random-7b mistral-7b --list-size 100
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("POSBIAS_SHARED_DATA", REPO.parent / "shared" / "data"))
WINDOW = 20
STEP = 10
RANDOM_SHAPES: dict[str, dict[str, Any]] = {
    "llama-2-7b": {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 4096,
    },
    "mistral-7b": {  # Mistral-7B-v0.1's config.json, the base of Zephyr-7B-β (FIRST)
        "model_type": "mistral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 32768,
        "sliding_window": 4096,
        "rope_theta": 10000.0,
    },
}
"""The 7B shapes of ``--random-7b`` (32 layers each; ``--layers`` overrides)."""
TINY_SIZES: dict[str, int] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}
"""The sizes a ``tiny`` random model replaces (same architecture, seconds on a CPU)."""


@functools.cache
def passage_pool() -> tuple[list[str], list[str], str]:
    """(passage texts, query texts, source): SciFact when present, else synthetic text; read
    once per process."""
    folder = SHARED / "scifact_allenai"
    if folder.is_dir():
        from hf_posbias.tasks.builders.scifact import build_scifact

        data = build_scifact(folder, split="validation")
        texts = [d["text"] for d in data.corpus]
        queries = [q["text"] for q in data.queries]
        return texts, queries, f"SciFact abstracts from {folder}"
    rng = random.Random(0)
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
    return texts, queries, "synthetic text (shared data absent)"


def load_passages(n: int, seed: int, size: int = WINDOW) -> tuple[list[tuple[str, list[str]]], str]:
    """``n`` lists of (query, ``size`` passage texts) drawn from :func:`passage_pool`."""
    texts, queries, source = passage_pool()
    rng = random.Random(seed)
    windows = [(rng.choice(queries), rng.sample(texts, size)) for _ in range(n)]
    return windows, source


def as_windows(raw: Sequence[tuple[str, list[str]]]) -> list[tuple[str, list[Any]]]:
    """(query, passage texts) → the scorer's windows of ``Passage`` records (ids ``p0``…)."""
    from hf_posbias.rerankers.records import Passage

    return [(q, [Passage(f"p{i}", t) for i, t in enumerate(ps)]) for q, ps in raw]


def build_random_lm(
    shape: str, layers: int, device: str, tiny: bool = False, dtype: str = "bfloat16"
) -> tuple[object, object]:
    """A causal LM of ``shape`` (:data:`RANDOM_SHAPES`) with random weights, built in ``dtype``
    (a torch dtype name) on ``device``; ``tiny`` shrinks its sizes to :data:`TINY_SIZES` (same
    architecture) and takes the local BPE tokenizer (SmolLM2's is converted from its GGUF file
    on first use: minutes)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from hf_posbias.testing import build_bpe_tokenizer

    try:
        if tiny:
            raise LookupError("tiny: the local tokenizer")
        from hf_posbias.modeling.causal_lm import causal_lm_folder

        tokenizer = AutoTokenizer.from_pretrained(causal_lm_folder("smollm2-135m"))
    except Exception:  # the packaged model is optional: fall back to a local BPE tokenizer
        tokenizer = build_bpe_tokenizer(vocab_size=8000)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    sizes = {**RANDOM_SHAPES[shape], **(TINY_SIZES if tiny else {})}
    config = AutoConfig.for_model(
        **sizes, num_hidden_layers=layers, vocab_size=len(tokenizer), tie_word_embeddings=False
    )
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
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


def measure_scoring(
    scorer_args: dict[str, Any],
    windows: Sequence[tuple[str, list[Any]]],
    batch_sizes: Sequence[int],
    device: str,
) -> dict[int, dict[str, Any]]:
    """Score ``windows`` with a :class:`~hf_posbias.rerankers.first.FirstReranker`
    (``scorer_args``: model, tokenizer, name, passage_tokens) at each batch size, after one
    warm-up batch: seconds, prefill FLOPs (see the module docstring), real and padded tokens,
    and the identifier logits of every window (for the batched vs batch-1 comparison)."""
    from hf_posbias.rerankers.first import FirstReranker, ScoringStats

    model = scorer_args["model"]
    n_params = non_embedding_params(model)
    results: dict[int, dict[str, Any]] = {}
    for batch_size in batch_sizes:
        scorer = FirstReranker(**scorer_args, batch_size=batch_size)
        tokens = [len(ids) for ids in scorer.encode(windows)]
        scorer.window_logits(windows[:batch_size])  # warm-up (allocations, kernels)
        scorer.stats = ScoringStats()
        sync(device)
        start = time.perf_counter()
        logits = scorer.window_logits(windows)
        sync(device)
        seconds = time.perf_counter() - start
        results[batch_size] = {
            "windows": len(windows),
            "seconds": seconds,
            "flops": sum(window_flops(model.config, n_params, t) for t in tokens),
            "tokens": sum(tokens),
            "padded_tokens": scorer.stats.padded_tokens,
            "min_tokens": min(tokens),
            "max_tokens": max(tokens),
            "logits": logits,
        }
    return results


def max_logit_difference(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> float:
    """Largest absolute difference between two runs' identifier logits of the same windows."""
    return max(abs(x - y) for row_a, row_b in zip(a, b) for x, y in zip(row_a, row_b))


def rerank_seconds(
    scorer_args: dict[str, Any],
    lists: Sequence[tuple[str, list[Any]]],
    batch_size: int,
    device: str,
    window: int = WINDOW,
    step: int = STEP,
) -> dict[str, Any]:
    """Rerank whole lists with the sliding window (``window`` passages, ``step``), the lists in
    lockstep so each step is one batched scorer call
    (:func:`hf_posbias.rerankers.window.rerank_lists`): seconds per query."""
    from hf_posbias.rerankers.first import FirstReranker
    from hf_posbias.rerankers.window import rerank_lists

    scorer = FirstReranker(**scorer_args, batch_size=batch_size, window_size=window)
    scorer.window_logits([(q, ps[:window]) for q, ps in lists[:batch_size]])  # warm-up
    sync(device)
    start = time.perf_counter()
    ranked = rerank_lists(scorer, lists, window=window, step=step)
    sync(device)
    seconds = time.perf_counter() - start
    return {
        "queries": len(lists),
        "list_size": len(lists[0][1]),
        "window": window,
        "step": step,
        "batch_size": batch_size,
        "windows": sum(r.windows for r in ranked),
        "seconds": seconds,
        "s_per_query": seconds / len(lists),
    }


def main(argv: list[str] | None = None) -> int:
    from hf_posbias.devices import INFERENCE_DTYPES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument(
        "--random-7b",
        nargs="?",
        const="llama-2-7b",
        default=None,
        choices=list(RANDOM_SHAPES),
        help="a random model of this 7B shape (default llama-2-7b)",
    )
    parser.add_argument("--layers", type=int, default=32, help="layers of --random-7b")
    parser.add_argument(
        "--tiny", action="store_true", help="--random-7b at tiny sizes (a CPU smoke run)"
    )
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--passage-tokens", type=int, default=48)
    parser.add_argument("--list-size", type=int, default=0, help="also rerank lists this long")
    parser.add_argument("--dtype", choices=INFERENCE_DTYPES, default="auto")
    parser.add_argument("--device", default=None)
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    from hf_posbias.devices import default_device, device_info, resolve_inference_dtype

    device = args.device or default_device()
    if args.random_7b:
        model, tokenizer = build_random_lm(args.random_7b, args.layers, device, args.tiny)
        size = "tiny sizes, " if args.tiny else ""
        name = f"random {args.random_7b} shape ({size}{args.layers} layers, bf16)"
    else:
        from hf_posbias.modeling.causal_lm import load_causal_lm

        dtype = resolve_inference_dtype(args.dtype, device_info(device))
        model, tokenizer = load_causal_lm(
            args.model, dtype=dtype, device=device, padding_side="left"
        )
        name = args.model
    raw, source = load_passages(args.windows, args.seed)
    windows = as_windows(raw)
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

    scorer_args = {
        "model": model,
        "tokenizer": tokenizer,
        "name": name,
        "passage_tokens": args.passage_tokens,
    }
    results = measure_scoring(scorer_args, windows, (1, args.batch_size), device)
    one = results[1]  # every batch size scores the same windows
    print(
        f"tokens per window: mean {one['tokens'] / args.windows:.0f}, "
        f"min {one['min_tokens']}, max {one['max_tokens']}"
    )
    print(
        f"{'batch':>5} {'windows/s':>10} {'s/window':>9} {'tokens/s':>9} {'TFLOP/s':>8} "
        f"{'MFU':>7} {'padding':>8}"
    )
    for batch_size, r in results.items():
        seconds, flops, real = r["seconds"], r["flops"], r["tokens"]
        mfu = f"{flops / seconds / peak:7.2%}" if peak else "    n/a"
        print(
            f"{batch_size:>5} {args.windows / seconds:>10.3f} {seconds / args.windows:>9.3f} "
            f"{real / seconds:>9.0f} {flops / seconds / 1e12:>8.3f} {mfu} "
            f"{r['padded_tokens'] / real - 1:>8.1%}"
        )
    many = results[args.batch_size]
    diff = max_logit_difference(one["logits"], many["logits"])
    print(
        f"batched / batch-1 speed-up: {one['seconds'] / many['seconds']:.2f}x; "
        f"max |logit difference| {diff:.2e}"
    )
    if args.list_size:
        raw_lists, _ = load_passages(args.batch_size, args.seed, size=args.list_size)
        timing = rerank_seconds(scorer_args, as_windows(raw_lists), args.batch_size, device)
        print(
            f"top-{args.list_size} lists, window {WINDOW} step {STEP}, {timing['queries']} "
            f"queries in lockstep at batch {args.batch_size}: {timing['s_per_query']:.3f} s/query "
            f"({timing['windows']} windows)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
