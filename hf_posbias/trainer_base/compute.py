"""How a training step runs on the hardware: the compute settings every trainer shares.

:class:`ComputeSettings` holds the global batch and its split over processes, precision,
gradient checkpointing, mini-batching of the cached loss, attention kernel, memory budget and
seed. Each trainer's settings inherit it without repeating a field (the bi-encoder's
:class:`~hf_posbias.training.training_settings.TrainingSettings`, the listwise LLM fine-tune's
``ListwiseTrainingSettings``), and :meth:`ComputeSettings.resolve` turns it into hardware
decisions (:class:`ResolvedCompute`) with one-line errors before any model is loaded.

Example:
    >>> from hf_posbias.devices import DeviceInfo
    >>> s = ComputeSettings(precision="bf16", mini_batch_size="16")
    >>> s.mini_batch_rows, s.resolve(DeviceInfo("cpu", "cpu", bf16=True), 1).precision
    (16, 'bf16')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hf_posbias.errors import InputError
from hf_posbias.setting_values import above, at_least
from hf_posbias.settings import (
    Settings,
    check_choice,
    setting,
    setting_label,
    shared_setting,
)

if TYPE_CHECKING:
    from hf_posbias.devices import DeviceInfo

AUTO = "auto"
CHECKPOINTING_CHOICES: tuple[str, ...] = ("auto", "on", "off")
CPU_MINI_BATCH_ROWS = 32
"""Rows per cached-loss mini-batch on CPU with ``--mini-batch-size auto`` (the former default)."""


@dataclass(kw_only=True)
class ComputeSettings(Settings):
    """How a training step runs on the hardware (shared by every trainer of hf-posbias)."""

    global_batch: int = shared_setting(
        "global_batch",
        default=256,
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
    mini_batch_size: str = shared_setting(
        "mini_batch_size",
        default=AUTO,
    )
    mini_batch_tokens: int | None = setting(
        "pack embedding mini-batches by token count instead of rows "
        "(sentence-transformers' mini_batch_num_tokens); must hold the longest sequence",
        default=None,
        range=at_least(1),
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
        range=above(0),
    )
    seed: int = shared_setting("seed")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("precision", self.precision, ("auto", "fp32", "bf16", "fp16"))
        check_choice("gradient_checkpointing", self.gradient_checkpointing, CHECKPOINTING_CHOICES)
        self.mini_batch_size = _auto_or_positive_int("mini_batch_size", self.mini_batch_size)

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
                f"{setting_label('global_batch')} {self.global_batch} is not divisible by the {n} "
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


def _auto_or_positive_int(field_name: str, value: Any) -> str:
    """``"auto"`` or a positive integer's decimal string (ints are accepted)."""
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    if not text.isdigit() or int(text) < 1:
        raise InputError(
            f"{setting_label(field_name)} must be a positive integer or auto, got {value!r}"
        )
    return str(int(text))
