"""The one declaration of the training settings, parsed by transformers' ``HfArgumentParser``.

Every setting is a dataclass field whose help text lives in ``field(metadata={"help": ...})``, the
way sentence-transformers declares its training arguments. The flags of ``posbias train``,
``accelerate launch -m hf_posbias.training.train``, the matrix scripts (which pass flags through
and validate them with the same parser) and the facts in the model card all come from here.

- :class:`ComputeSettings` — how a step runs on the hardware: global batch and its split over
  processes, precision, gradient checkpointing, mini-batching of the cached loss, attention
  kernel, memory budget, seed. Any trainer inherits it without repeating a field (the listwise
  LLM fine-tune: ``class ListwiseTrainingSettings(ComputeSettings)``), and
  :meth:`ComputeSettings.resolve` turns it into hardware decisions (:class:`ResolvedCompute`)
  with one-line errors before any model is loaded.
- :class:`TrainingSettings` — one bi-encoder run of YHP26 (model, configuration, data, output,
  schedule, loss, card, Hub). ``TrainConfig`` is the same class under its former name.

Multi-GPU semantics: ``--global-batch`` is the number of rows of one optimisation step over all
processes, i.e. the in-batch negatives of every query (256 in the paper). With W processes each
embeds ``global_batch / W`` rows of the same length bin and the loss gathers the embeddings of all
processes (``gather_across_devices``), so every query still scores against ``global_batch``
documents. ``global_batch`` must be divisible by W.

Example:
    >>> from hf_posbias.training.settings import parse_settings
    >>> s = parse_settings(["--model", "bert-base", "--config", "uniform", "--data", "d",
    ...                     "--out", "o", "--precision", "bf16", "--mini-batch-size", "16"])
    >>> s.global_batch, s.precision, s.mini_batch_rows, s.gradient_checkpointing
    (256, 'bf16', 16, 'auto')
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from hf_posbias.errors import InputError, PosbiasError
from hf_posbias.training.models import PoolingName

if TYPE_CHECKING:
    from transformers import HfArgumentParser

    from hf_posbias.devices import DeviceInfo

S = TypeVar("S", bound="ComputeSettings")

AUTO = "auto"
CHECKPOINTING_CHOICES: tuple[str, ...] = ("auto", "on", "off")
CPU_MINI_BATCH_ROWS = 32
"""Rows per cached-loss mini-batch on CPU with ``--mini-batch-size auto`` (the former default)."""


@dataclass(kw_only=True)
class ComputeSettings:
    """How a training step runs on the hardware (shared by every trainer of hf-posbias)."""

    global_batch: int = field(
        default=256,
        metadata={
            "help": "rows per optimisation step over all processes = the in-batch negatives of "
            "every query (YHP26: 256); each of W processes embeds global/W rows and the loss "
            "gathers all of them; must be divisible by W"
        },
    )
    precision: Literal["auto", "fp32", "bf16", "fp16"] = field(
        default="auto",
        metadata={
            "help": "mixed precision: auto = bf16 on GPUs that support it, fp16 with loss "
            "scaling on older GPUs, fp32 on CPU"
        },
    )
    gradient_checkpointing: Literal["auto", "on", "off"] = field(
        default="auto",
        metadata={
            "help": "recompute activations in the backward pass (less memory, about 25%% more "
            "compute); auto = only when the memory preflight needs it (never on CPU)"
        },
    )
    mini_batch_size: str = field(
        default=AUTO,
        metadata={
            "help": "rows embedded at once by the cached loss (GradCache): N, or auto = the "
            "memory preflight packs mini-batches by tokens to fill the GPU "
            f"({CPU_MINI_BATCH_ROWS} rows on CPU)"
        },
    )
    mini_batch_tokens: int | None = field(
        default=None,
        metadata={
            "help": "pack embedding mini-batches by token count instead of rows "
            "(sentence-transformers' mini_batch_num_tokens); must hold the longest sequence"
        },
    )
    attn_implementation: str | None = field(
        default=None,
        metadata={
            "help": "attention kernel: eager | sdpa | flex_attention | flash_attention_2 | "
            "flash_attention_3; unset = the best installed: flash_attention_2 on a GPU in "
            "bf16/fp16 when flash-attn is installed, else sdpa (a model without it keeps its own)"
        },
    )
    device_memory_gib: float | None = field(
        default=None,
        metadata={
            "help": "device memory the memory preflight may plan for, GiB; unset = the whole "
            "GPU; lower it on a shared GPU"
        },
    )
    seed: int = field(
        default=42, metadata={"help": "seed of the weights' init, data order, dropout"}
    )

    def __post_init__(self) -> None:
        _check_choice("--precision", self.precision, ("auto", "fp32", "bf16", "fp16"))
        _check_choice(
            "--gradient-checkpointing", self.gradient_checkpointing, CHECKPOINTING_CHOICES
        )
        self.mini_batch_size = _auto_or_positive_int("--mini-batch-size", self.mini_batch_size)
        if self.global_batch < 1:
            raise InputError(f"--global-batch must be positive, got {self.global_batch}")
        if self.mini_batch_tokens is not None and self.mini_batch_tokens < 1:
            raise InputError(f"--mini-batch-tokens must be positive, got {self.mini_batch_tokens}")
        if self.device_memory_gib is not None and self.device_memory_gib <= 0:
            raise InputError(f"--device-memory-gib must be positive, got {self.device_memory_gib}")

    @property
    def mini_batch_rows(self) -> int | None:
        """``--mini-batch-size`` as a number of rows, ``None`` for ``auto``."""
        return None if self.mini_batch_size == AUTO else int(self.mini_batch_size)

    @property
    def checkpointing_request(self) -> bool | None:
        """``True``/``False`` for ``on``/``off``, ``None`` for ``auto``."""
        return {"on": True, "off": False}.get(self.gradient_checkpointing)

    @property
    def memory_is_auto(self) -> bool:
        """Whether the preflight may choose checkpointing or mini-batching."""
        return self.gradient_checkpointing == AUTO or (
            self.mini_batch_rows is None and self.mini_batch_tokens is None
        )

    def resolve(
        self, info: DeviceInfo | None = None, n_processes: int | None = None
    ) -> ResolvedCompute:
        """Check these settings against the hardware; return the decisions (no model needed).

        ``info`` defaults to the probed device, ``n_processes`` to ``WORLD_SIZE``. Raises a
        one-line :class:`~hf_posbias.errors.InputError` for a precision the device lacks, an
        attention kernel that is not installed, or a global batch the processes cannot share.

        Example:
            >>> from hf_posbias.devices import DeviceInfo
            >>> r = ComputeSettings(global_batch=256).resolve(DeviceInfo("cpu", "cpu"), 4)
            >>> r.precision, r.per_device_batch, r.gather_across_devices
            ('fp32', 64, True)
        """
        from hf_posbias.devices import (
            device_info,
            resolve_attn_implementation,
            resolve_precision,
            world_size,
        )

        n = int(n_processes or world_size())
        if self.global_batch % n:
            raise InputError(
                f"--global-batch {self.global_batch} is not divisible by the {n} processes: "
                f"use a multiple of {n} (each process embeds global/{n} rows)"
            )
        info = info if info is not None else device_info()
        precision = resolve_precision(self.precision, info)
        attn = resolve_attn_implementation(self.attn_implementation, info, precision)
        return ResolvedCompute(
            device=info,
            precision=precision,
            attn_implementation=attn,
            attn_requested=self.attn_implementation not in (None, AUTO),
            world_size=n,
            per_device_batch=self.global_batch // n,
        )


@dataclass(frozen=True)
class ResolvedCompute:
    """Hardware decisions of :meth:`ComputeSettings.resolve` (before the memory preflight)."""

    device: DeviceInfo
    precision: str
    attn_implementation: str
    attn_requested: bool
    world_size: int
    per_device_batch: int

    @property
    def gather_across_devices(self) -> bool:
        """Whether the loss gathers the embeddings of all processes (W > 1)."""
        return self.world_size > 1

    def training_arguments(self) -> dict[str, Any]:
        """Keyword arguments of ``transformers.TrainingArguments`` for precision and device.

        Example:
            >>> from hf_posbias.devices import DeviceInfo
            >>> ComputeSettings(precision="bf16").resolve(DeviceInfo("cpu", "cpu", bf16=True),
            ...     1).training_arguments()
            {'bf16': True, 'fp16': False, 'use_cpu': True}
        """
        return {
            "bf16": self.precision == "bf16",
            "fp16": self.precision == "fp16",
            "use_cpu": self.device.kind == "cpu",
        }


@dataclass(kw_only=True)
class TrainingSettings(ComputeSettings):
    """One bi-encoder training run (YHP26 protocol); every field is a flag of ``posbias train``.

    ``lr``/``max_length``/``pooling`` default to the model spec; ``max_steps`` (if set) overrides
    ``epochs``. ``record_batches`` keeps the row indices of every batch (tests, audits).
    """

    model: str = field(metadata={"help": "short name, checkpoint id or local folder"})
    config: str = field(metadata={"help": "begin | middle | end | uniform | b:m:e | ips"})
    data: str = field(metadata={"help": "training-set repo/folder (the pool for ips)"})
    out: str = field(metadata={"help": "output folder of the final checkpoint"})
    max_steps: int | None = field(default=None, metadata={"help": "stop after N steps"})
    epochs: float = field(default=3.0, metadata={"help": "passes over the training set"})
    lr: float | None = field(
        default=None,
        metadata={
            "help": "learning rate; unset = the model's (4e-5 below 400M parameters, else 2e-5)"
        },
    )
    pooling: PoolingName | None = field(
        default=None, metadata={"help": "override the model's pooling"}
    )
    max_length: int | None = field(
        default=None, metadata={"help": "max tokens per text; unset = the model's"}
    )
    warmup_ratio: float = field(default=0.1, metadata={"help": "linear warm-up share of steps"})
    scale: float = field(default=20.0, metadata={"help": "InfoNCE scale = 1 / temperature"})
    logging_steps: int = field(default=10, metadata={"help": "log the loss every N steps"})
    push_to_hub: str | None = field(
        default=None, metadata={"help": "upload checkpoint + card to this model repo id"}
    )
    hub_token: str | None = field(
        default=None, metadata={"help": "Hub token; unset = HF_TOKEN or the stored login"}
    )
    card: bool = field(default=True, metadata={"help": "write the model card README.md"})
    record_batches: bool = field(
        default=False, metadata={"help": "keep every batch's row indices in the result (audits)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pooling is not None:
            from hf_posbias.training.models import POOLINGS

            _check_choice("--pooling", self.pooling, POOLINGS)
        if self.max_steps is not None and self.max_steps < 1:
            raise InputError(f"--max-steps must be positive, got {self.max_steps}")
        if self.max_length is not None and self.max_length < 1:
            raise InputError(f"--max-length must be positive, got {self.max_length}")


TrainConfig = TrainingSettings
"""Former name of :class:`TrainingSettings` (kept for existing callers)."""


def _check_choice(flag: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        raise InputError(f"{flag} must be one of {', '.join(choices)}, got {value!r}")


def _auto_or_positive_int(flag: str, value: Any) -> str:
    """``"auto"`` or a positive integer's decimal string (ints are accepted)."""
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{flag} must be a positive integer or auto, got {value!r}")
    return str(int(text))


# --------------------------------------------------------------------------- parsing


def settings_parser(
    settings_cls: type[ComputeSettings] = TrainingSettings, **kwargs: Any
) -> HfArgumentParser:
    """An ``HfArgumentParser`` of ``settings_cls`` (kwargs go to ``argparse.ArgumentParser``)."""
    from transformers import HfArgumentParser

    return HfArgumentParser(settings_cls, **kwargs)


def parse_settings(
    argv: Sequence[str] | None,
    settings_cls: type[ComputeSettings] = TrainingSettings,
    **kwargs: Any,
) -> Any:
    """Parse command-line flags into ``settings_cls``.

    A bad value or an unknown flag is a one-line :class:`~hf_posbias.errors.InputError` (not
    argparse's usage dump), so the matrix scripts can validate every run's flags up front.
    ``--help`` prints the generated help and exits as usual.

    Example:
        >>> parse_settings(["--model", "m", "--config", "c", "--data", "d", "--out", "o",
        ...                 "--precision", "fp8"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: argument --precision: invalid choice: 'fp8' ...
    """
    parser = settings_parser(settings_cls, exit_on_error=False, **kwargs)
    try:
        namespace, unknown = parser.parse_known_args(list(argv) if argv is not None else None)
    except argparse.ArgumentError as err:
        raise InputError(str(err)) from None
    if unknown:
        raise InputError(f"unknown training flag(s): {' '.join(unknown)}")
    return settings_from_namespace(settings_cls, namespace)


def launch_main(
    argv: Sequence[str] | None,
    settings_cls: type[S],
    *,
    prog: str,
    description: str,
    run: Callable[[S], Any],
    report: Callable[[Any], str],
) -> int:
    """The body of a trainer's module entry point (``python -m …``, ``accelerate launch -m …``).

    Parses the flags into ``settings_cls``, calls ``run(settings)`` and prints
    ``report(result)`` on rank 0 (``result.world_size``, ``$RANK``); a user mistake prints one
    ``error:`` line to stderr and returns 2.

    Example:
        >>> launch_main(["--model", "m", "--config", "c", "--data", "d", "--out", "o",
        ...              "--precision", "fp8"], TrainingSettings, prog="t", description="",
        ...             run=print, report=str)
        2
    """
    import logging
    import os
    import sys

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        settings = parse_settings(argv, settings_cls, prog=prog, description=description)
        result = run(settings)
    except PosbiasError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if result.world_size == 1 or int(os.environ.get("RANK", "0")) == 0:
        print(report(result))
    return 0


def settings_from_namespace(settings_cls: type[S], namespace: argparse.Namespace) -> S:
    """Build ``settings_cls`` from a namespace parsed by a parser that holds its flags."""
    names = [f.name for f in dataclasses.fields(settings_cls) if f.init]
    return settings_cls(**{name: getattr(namespace, name) for name in names})


def defer_settings_arguments(
    parser: argparse.ArgumentParser, settings_cls: type[ComputeSettings]
) -> argparse.ArgumentParser:
    """Give ``parser`` the flags of ``settings_cls`` when it first parses, not now.

    ``posbias --help`` builds every verb's parser and must not import transformers (the
    ``HfArgumentParser`` home); a sub-command parser only parses when its verb was chosen, so
    the flags are generated by ``HfArgumentParser`` at that moment — then ``posbias train --help``
    lists them like any flag.
    """
    original = parser.parse_known_args

    def parse_known_args(args: Any = None, namespace: Any = None) -> Any:
        if not getattr(parser, "_posbias_settings", None):
            source = settings_parser(settings_cls, add_help=False)
            # What ArgumentParser(parents=[source]) does, after construction.
            parser._add_container_actions(source)
            parser._posbias_settings = settings_cls  # type: ignore[attr-defined]
        return original(args, namespace)

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]
    return parser


def settings_record(settings: ComputeSettings) -> dict[str, Any]:
    """The settings as a plain dict, secrets removed (for cards and logs).

    Example:
        >>> settings_record(TrainingSettings(model="m", config="c", data="d", out="o",
        ...                                   hub_token="hf_x"))["hub_token"] is None
        True
    """
    record = dataclasses.asdict(settings)
    if "hub_token" in record:
        record["hub_token"] = None
    return record
