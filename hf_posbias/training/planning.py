"""Plan training runs without running them: memory settings and projected wall time.

``scripts/run_matrix.py --dry-run`` uses this to print, for every run, the settings a GPU run
would use after the memory preflight and how long it would take. Without a GPU the preflight's
trial steps cannot run, so :func:`plan_run` uses the analytic estimate
(:func:`hf_posbias.trainer_base.memory.estimate_trial_peak`) on the model's real shape
(:func:`hf_posbias.trainer_base.shapes.real_config` for the registered bases, the checkpoint's
``config.json`` otherwise) and a described device (``--plan-for h100``). Times come only from
measurements: the JSON written by ``benchmarks/train_throughput.py`` (seconds per step for each
length bin, per model and settings) times the steps of each bin.

Steps per bin: from the training data when ``--data`` is a local folder, else YHP26's sizes
(§3: 8,189 rows per bin for begin/middle/end, 3 × 2,729 for uniform — ``PAPER_ROWS_PER_BIN``).
Without the data the longest sequence is assumed to be the longest bin's 8,192 characters at
4 characters per token (2,048 tokens), capped by the model's maximum length.

Example:
    >>> from hf_posbias.training.planning import steps_per_bin
    >>> steps_per_bin({"256-512": 8189, "4096-8192": 8189}, global_batch=256, epochs=3.0)
    {'256-512': 96, '4096-8192': 96}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError, PosbiasError

if TYPE_CHECKING:
    from hf_posbias.devices import DeviceInfo
    from hf_posbias.trainer_base.memory import MemoryPlan
    from hf_posbias.training.training_settings import TrainingSettings

PAPER_BINS: tuple[str, ...] = ("256-512", "512-1024", "1024-2048", "2048-4096", "4096-8192")
PAPER_ROWS_PER_BIN: dict[str, int] = {
    "begin": 8189,
    "middle": 8189,
    "end": 8189,
    "uniform": 3 * 2729,
}
LONGEST_BIN_CHARS = 8192
CHARS_PER_TOKEN = 4.0
THROUGHPUT_FORMAT = "hf-posbias/train-throughput/v1"


def steps_per_bin(
    rows_per_bin: Mapping[str, int],
    global_batch: int,
    epochs: float,
    max_steps: int | None = None,
) -> dict[str, int]:
    """Optimisation steps each bin contributes (``ceil(rows / batch)`` per epoch).

    ``max_steps`` overrides ``epochs`` as it does in the trainer (transformers trains exactly
    ``max_steps``, cycling the data when that is more than the epochs give): every bin is scaled
    proportionally to it (the bins are interleaved at random).

    Example:
        >>> steps_per_bin({"a": 82}, global_batch=16, epochs=1.0)
        {'a': 6}
        >>> steps_per_bin({"a": 82}, global_batch=16, epochs=1.0, max_steps=20)
        {'a': 20}
    """
    per_epoch = {b: math.ceil(n / global_batch) for b, n in rows_per_bin.items() if n > 0}
    steps = {b: round(n * epochs) for b, n in per_epoch.items()}
    total = sum(steps.values())
    if max_steps and total:
        steps = {b: round(n * max_steps / total) for b, n in steps.items()}
    return steps


@dataclass
class RunPlan:
    """What a dry run says about one run."""

    precision: str
    attn_implementation: str
    per_device_batch: int
    world_size: int
    lr: float | None = None
    """The learning rate the run trains at (``--lr``, else its base's: YHP26 App. D)."""
    query_prefix: str | None = None
    """The prefix its queries get at training and inference (its base's: YHP26 App. D)."""
    memory: MemoryPlan | None = None
    error: str | None = None
    steps: int = 0
    projected_seconds: float | None = None
    throughput_source: str = ""
    throughput_note: str = "no benchmark figures"

    def summary(self) -> str:
        """One line: settings after the preflight decisions, then the projected time."""
        head = (
            f"{self.precision}, attention {self.attn_implementation}, global batch "
            f"{self.per_device_batch * self.world_size} = {self.world_size} × "
            f"{self.per_device_batch}"
        )
        if self.lr is not None:
            head += f", lr {self.lr:g}, query prefix {self.query_prefix!r}"
        if self.error:
            return f"{head}; {self.error}"
        text = f"{head}; {self.memory.summary() if self.memory else 'memory not planned'}"
        if self.projected_seconds is not None:
            text += f"; {self.steps} steps, projected {self.projected_seconds / 3600:.2f} h"
            text += f" ({self.throughput_source})"
        else:
            text += f"; {self.steps} steps, time not projected ({self.throughput_note})"
        return text


def load_throughput(path: str | Path) -> dict[str, Any]:
    """Read a ``benchmarks/train_throughput.py --json`` file (one-line error if unusable)."""
    from hf_posbias.rows.readers import read_json

    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != THROUGHPUT_FORMAT:
        raise InputError(f"{path} is not a train_throughput.py JSON file ({THROUGHPUT_FORMAT})")
    return data


def benchmark_label(settings: TrainingSettings) -> str | None:
    """Which ``train_throughput.py`` settings column ``settings`` correspond to (or None).

    Example:
        >>> from hf_posbias.training.training_settings import TrainingSettings
        >>> benchmark_label(TrainingSettings(model="m", config="c", data="d", out="o"))
        'auto'
    """
    from hf_posbias.trainer_base.compute import CPU_MINI_BATCH_ROWS

    memory_auto = (
        settings.gradient_checkpointing == "auto"
        and settings.mini_batch_rows is None
        and settings.mini_batch_tokens is None
    )
    if settings.attn_implementation is None and memory_auto:
        return "auto" if settings.precision == "auto" else settings.precision
    if (
        settings.precision == "fp32"
        and settings.mini_batch_rows == CPU_MINI_BATCH_ROWS
        and settings.gradient_checkpointing == "off"
        and settings.mini_batch_tokens is None
    ):
        return "legacy"
    return None


def measured_seconds_per_step(
    throughput: Mapping[str, Any], model: str, settings_label: str = "auto"
) -> dict[str, float] | None:
    """Seconds per step of each bin measured for ``model`` (None when not benchmarked).

    A precision label (``bf16``, ``fp16``, ``fp32``) without an entry of its own takes the
    ``auto`` entry that resolved to that precision on the benchmark's device: with every other
    setting at its default the two runs are the same run.

    Example:
        >>> figures = {"results": [{"model": "m", "settings": "auto", "precision": "bf16",
        ...                         "bins": {"256-512": {"s_per_step": 1.5}}}]}
        >>> measured_seconds_per_step(figures, "m", "bf16")
        {'256-512': 1.5}
        >>> measured_seconds_per_step(figures, "m", "fp32") is None
        True
    """
    entries = [e for e in throughput.get("results", []) if e.get("model") == model]
    entry = next((e for e in entries if e.get("settings") == settings_label), None)
    if entry is None and settings_label in ("bf16", "fp16", "fp32"):
        entry = next(
            (
                e
                for e in entries
                if e.get("settings") == "auto" and e.get("precision") == settings_label
            ),
            None,
        )
    if entry is None:
        return None
    bins = {
        b: float(v["s_per_step"])
        for b, v in entry.get("bins", {}).items()
        if v.get("s_per_step") is not None
    }
    return bins or None


def project_seconds(steps: Mapping[str, int], seconds: Mapping[str, float]) -> float:
    """Σ over bins of steps × seconds per step; a bin not benchmarked takes the slowest bin's.

    Example:
        >>> project_seconds({"a": 10, "b": 5}, {"a": 1.0})
        15.0
    """
    slowest = max(seconds.values())
    return float(sum(n * seconds.get(b, slowest) for b, n in steps.items()))


def model_shape_config(spec: Any) -> Any:
    """A transformers config of ``spec``'s architecture: built in code for a registered base,
    read from the checkpoint otherwise (no weights are loaded)."""
    from hf_posbias.trainer_base.shapes import BASE_SHAPES, real_config

    if spec.name in BASE_SHAPES and not spec.inferred:
        return real_config(spec.name)
    from hf_posbias.training.builder import load_text_setup

    return load_text_setup(spec)[0]


def plan_run(
    settings: TrainingSettings,
    device: DeviceInfo,
    n_processes: int = 1,
    rows_per_bin: Mapping[str, int] | None = None,
    throughput: Mapping[str, Any] | None = None,
) -> RunPlan:
    """Resolve ``settings`` for ``device`` and estimate the memory plan and wall time."""
    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.trainer_base.attention import model_attn_implementation
    from hf_posbias.trainer_base.memory import (
        choose_memory_plan,
        cpu_plan,
        estimate_trial_peak,
        optimizer_state_bytes,
        usable_bytes,
    )
    from hf_posbias.trainer_base.shapes import ModelShape
    from hf_posbias.training.builder import max_seq_length

    compute = settings.resolve(device, n_processes)
    spec = get_model_spec(settings.model)
    config = model_shape_config(spec)
    attn = (
        model_attn_implementation(config, compute.attn_implementation, compute.attn_requested)
        or "eager"
    )
    plan = RunPlan(compute.precision, attn, compute.per_device_batch, compute.world_size)
    plan.lr = settings.lr if settings.lr is not None else spec.lr
    plan.query_prefix = spec.query_prefix
    rows = rows_per_bin or {b: PAPER_ROWS_PER_BIN.get(settings.config, 8189) for b in PAPER_BINS}
    steps = steps_per_bin(rows, settings.global_batch, settings.epochs, settings.max_steps)
    plan.steps = sum(steps.values())
    if throughput is not None:
        label = benchmark_label(settings)
        seconds = measured_seconds_per_step(throughput, spec.name, label) if label else None
        if throughput.get("batch") != settings.global_batch:
            plan.throughput_note = (
                f"benchmark ran batch {throughput.get('batch')}, not {settings.global_batch}"
            )
        elif seconds:
            plan.projected_seconds = project_seconds(steps, seconds)
            plan.throughput_source = f"{label} settings measured on {throughput.get('device')}"
            if throughput.get("tiny"):
                plan.throughput_source += ", TINY shapes: not a GPU projection"
        else:
            plan.throughput_note = f"no benchmark figures for {spec.name} with these settings"
    if device.kind != "cuda":
        plan.memory = cpu_plan(settings, compute.per_device_batch)
        return plan
    shape = ModelShape.from_config(config)
    max_seq = max_seq_length(config, spec, settings.max_length)
    longest = min(max_seq, math.ceil(LONGEST_BIN_CHARS / CHARS_PER_TOKEN))

    def estimate(checkpointing: bool, mini: Any) -> int:
        return estimate_trial_peak(
            shape,
            precision=compute.precision,
            checkpointing=checkpointing,
            mini_batch_tokens=mini.tokens_on(longest),
            longest_tokens=longest,
            attn_implementation=attn,
        )

    try:
        plan.memory = choose_memory_plan(
            settings,
            measure=estimate,
            budget_bytes=usable_bytes(int(device.total_memory or 0), settings.device_memory_gib),
            state_bytes=optimizer_state_bytes(shape.n_params, compute.world_size),
            per_device_batch=compute.per_device_batch,
            longest_tokens=longest,
            method="estimated",
            device=device.describe(),
        )
    except PosbiasError as err:
        plan.error = str(err)
    return plan
