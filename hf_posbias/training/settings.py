"""The one declaration of the training settings, parsed by :mod:`hf_posbias.settings`.

Every setting is a dataclass field declared with :func:`hf_posbias.settings.setting` (help,
default, renamed spellings), like every verb's settings. The flags of ``posbias train``,
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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from hf_posbias.errors import InputError
from hf_posbias.settings import (
    ProgressSettings,
    check_choice,
    check_positive,
    flag_name,
    parse_settings_args,
    setting,
    shared_setting,
)
from hf_posbias.training.models import PoolingName

if TYPE_CHECKING:
    from hf_posbias.devices import DeviceInfo

S = TypeVar("S", bound="ComputeSettings")

AUTO = "auto"
CHECKPOINTING_CHOICES: tuple[str, ...] = ("auto", "on", "off")
CPU_MINI_BATCH_ROWS = 32
"""Rows per cached-loss mini-batch on CPU with ``--mini-batch-size auto`` (the former default)."""


@dataclass(kw_only=True)
class ComputeSettings:
    """How a training step runs on the hardware (shared by every trainer of hf-posbias)."""

    global_batch: int = setting(
        "rows per optimisation step over all processes = the in-batch negatives of "
        "every query (YHP26: 256); each of W processes embeds global/W rows and the loss "
        "gathers all of them; must be divisible by W",
        default=256,
        aliases=("--batch-size",),
    )
    precision: Literal["auto", "fp32", "bf16", "fp16"] = setting(
        "mixed precision: auto = bf16 on GPUs that support it, fp16 with loss "
        "scaling on older GPUs, fp32 on CPU",
        default="auto",
    )
    gradient_checkpointing: Literal["auto", "on", "off"] = setting(
        "recompute activations in the backward pass (less memory, about 25% more "
        "compute); auto = only when the memory preflight needs it (never on CPU)",
        default="auto",
    )
    mini_batch_size: str = setting(
        "rows embedded at once by the cached loss (GradCache): N, or auto = the "
        "memory preflight packs mini-batches by tokens to fill the GPU "
        f"({CPU_MINI_BATCH_ROWS} rows on CPU)",
        default=AUTO,
    )
    mini_batch_tokens: int | None = setting(
        "pack embedding mini-batches by token count instead of rows "
        "(sentence-transformers' mini_batch_num_tokens); must hold the longest sequence",
        default=None,
    )
    attn_implementation: str | None = setting(
        "attention kernel: eager | sdpa | flex_attention | flash_attention_2 | "
        "flash_attention_3; unset = the best installed: flash_attention_2 on a GPU in "
        "bf16/fp16 when flash-attn is installed, else sdpa (a model without it keeps its own)",
        default=None,
    )
    device_memory_gib: float | None = setting(
        "device memory the memory preflight may plan for, GiB; unset = the whole "
        "GPU; lower it on a shared GPU",
        default=None,
    )
    seed: int = shared_setting("seed", default=42)

    def __post_init__(self) -> None:
        check_choice("precision", self.precision, ("auto", "fp32", "bf16", "fp16"))
        check_choice("gradient_checkpointing", self.gradient_checkpointing, CHECKPOINTING_CHOICES)
        self.mini_batch_size = _auto_or_positive_int("mini_batch_size", self.mini_batch_size)
        check_positive(self, "global_batch", "mini_batch_tokens")
        if self.device_memory_gib is not None and self.device_memory_gib <= 0:
            raise InputError(
                f"{flag_name('device_memory_gib')} must be positive, got {self.device_memory_gib}"
            )

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
                f"{flag_name('global_batch')} {self.global_batch} is not divisible by the {n} "
                "processes: "
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
class TrainingSettings(ComputeSettings, ProgressSettings):
    """One bi-encoder training run (YHP26 protocol); every field is a flag of ``posbias train``.

    ``lr``/``max_length``/``pooling`` default to the model spec; ``max_steps`` (if set) overrides
    ``epochs``. ``record_batches`` keeps the row indices of every batch (tests, audits).
    """

    model: str = setting("short name, checkpoint id or local folder")
    config: str = setting("begin | middle | end | uniform | b:m:e | ips")
    data: str = setting("training-set repo/folder (the pool for ips)")
    out: str = shared_setting("out")
    max_steps: int | None = shared_setting("max_steps", default=None)
    epochs: float = shared_setting("epochs", default=3.0)
    lr: float | None = setting(
        "learning rate; unset = the model's (4e-5 below 400M parameters, else 2e-5)", default=None
    )
    pooling: PoolingName | None = setting("override the model's pooling", default=None)
    max_length: int | None = setting("max tokens per text; unset = the model's", default=None)
    warmup_ratio: float = setting("linear warm-up share of steps", default=0.1)
    scale: float = setting("InfoNCE scale = 1 / temperature", default=20.0)
    logging_steps: int = shared_setting("logging_steps", default=10)
    push_to_hub: str | None = setting(
        "upload checkpoint + card to this model repo id", default=None
    )
    hub_token: str | None = shared_setting("hub_token", default=None)
    card: bool = setting("write the model card README.md", default=True)
    record_batches: bool = setting(
        "keep every batch's row indices in the result (audits)", default=False
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pooling is not None:
            from hf_posbias.training.models import POOLINGS

            check_choice("pooling", self.pooling, POOLINGS)
        check_positive(self, "max_steps", "max_length")


TrainConfig = TrainingSettings
"""Former name of :class:`TrainingSettings` (kept for existing callers)."""


def _auto_or_positive_int(field_name: str, value: Any) -> str:
    """``"auto"`` or a positive integer's decimal string (ints are accepted)."""
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    if not text.isdigit() or int(text) < 1:
        raise InputError(
            f"{flag_name(field_name)} must be a positive integer or auto, got {value!r}"
        )
    return str(int(text))


# --------------------------------------------------------------------------- parsing


def parse_settings(
    argv: Sequence[str] | None,
    settings_cls: type[S] = TrainingSettings,  # type: ignore[assignment]
    **kwargs: Any,
) -> S:
    """Parse flags into ``settings_cls`` (:func:`hf_posbias.settings.parse_settings_args`).

    A bad value or an unknown flag is a one-line :class:`~hf_posbias.errors.InputError` (not
    argparse's usage dump), so the matrix scripts can validate every run's flags up front.

    Example:
        >>> parse_settings(["--model", "m", "--config", "c", "--data", "d", "--out", "o",
        ...                 "--precision", "fp8"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: argument --precision: invalid choice: 'fp8' ...
    """
    return parse_settings_args(settings_cls, argv, **kwargs)
