"""What this machine can do: default device, bf16/fp16 support, precision and attention choices.

One home for hardware capability questions, shared by training (the bi-encoder trainer and the
listwise LLM fine-tune) and inference. Every decision function takes a :class:`DeviceInfo`, so
the rules can be tested on a CPU-only machine with a described GPU (no CUDA needed):

- :func:`resolve_precision` — the **training** rule: ``auto`` is bf16 on GPUs that support it,
  fp16 (with loss scaling) on older CUDA GPUs, fp32 on CPU/MPS (CPU training stays fp32: bf16
  autocast there is slower for the small models the demo trains); an explicit precision the
  hardware lacks is a one-line :class:`~hf_posbias.errors.InputError`.
- :func:`resolve_inference_dtype` — the **inference** rule (a torch dtype name for ``--dtype``):
  GPUs as the training rule, CPUs bf16 where they compute it natively (:func:`cpu_has_native_bf16`:
  AVX512-BF16 / AMX, as oneDNN reports — a 20-passage listwise window scores about 1.5× faster
  there), fp32 elsewhere.
- :func:`resolve_attn_implementation` — default: the best attention kernel installed
  (flash-attention 2 on a CUDA GPU in bf16/fp16 when the ``flash_attn`` package imports, else
  PyTorch's ``sdpa``); an explicit implementation that is not installed is a one-line error.
- :func:`dense_peak_flops` — the device's dense matmul peak (for MFU), from vendor data sheets.
- :func:`check_device` — a requested ``--device`` that this machine lacks is one line naming it
  and the devices it has (:func:`available_devices`), before anything loads: every verb with
  ``--device`` and the trainers' probe (:func:`device_info`) go through it.

torch is imported only by :func:`device_info` and :func:`available_devices` (the probes of the
real machine), never to refuse a CUDA device on a CPU-only torch build.

Example:
    >>> from hf_posbias.devices import DeviceInfo, resolve_precision
    >>> resolve_precision("auto", DeviceInfo(kind="cpu", name="cpu"))
    'fp32'
    >>> h100 = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", total_memory=80 * 2**30,
    ...                   bf16=True, fp16=True)
    >>> resolve_precision("auto", h100)
    'bf16'
    >>> resolve_precision("auto", DeviceInfo(kind="cuda", name="Tesla V100", fp16=True))
    'fp16'
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Literal

from hf_posbias.errors import InputError
from hf_posbias.settings import flag_name

_PRECISION, _DTYPE, _ATTN, _DEVICE = (
    flag_name(n) for n in ("precision", "dtype", "attn_implementation", "device")
)

Precision = Literal["fp32", "bf16", "fp16"]
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "bf16", "fp16")
ATTN_IMPLEMENTATIONS: tuple[str, ...] = (
    "eager",
    "sdpa",
    "flex_attention",
    "flash_attention_2",
    "flash_attention_3",
)
# The Python package each kernel needs (None: part of torch itself).
_ATTN_PACKAGES: dict[str, str | None] = {
    "eager": None,
    "sdpa": None,
    "flex_attention": None,
    "flash_attention_2": "flash_attn",
    "flash_attention_3": "flash_attn_interface",
}
_GIB = 2**30


@dataclass(frozen=True)
class DeviceInfo:
    """One compute device as the training code sees it.

    ``total_memory`` is in bytes (``None`` where it cannot be read: CPU, MPS). ``bf16``/``fp16``
    say whether the device *runs* that dtype at all: on every CPU bf16 runs (autocast and bf16
    tensors work, emulated in fp32 arithmetic where the CPU has no bf16 instructions) and fp16
    training does not (no loss scaler for CPU). ``bf16_native`` says whether bf16 matmuls run on
    bf16 hardware: AVX512-BF16 / AMX on a CPU (oneDNN's report), compute capability ≥ 8.0 on a
    CUDA GPU — only there is bf16 faster than fp32.
    """

    kind: str
    name: str
    total_memory: int | None = None
    bf16: bool = False
    fp16: bool = False
    count: int = 1
    bf16_native: bool = False

    @property
    def is_gpu(self) -> bool:
        """Whether this is an accelerator (CUDA or MPS), not the CPU."""
        return self.kind in ("cuda", "mps")

    def describe(self) -> str:
        """``"NVIDIA H100 80GB HBM3 (cuda, 79.1 GiB)"``-style one-liner.

        Example:
            >>> DeviceInfo(kind="cpu", name="cpu").describe()
            'cpu (cpu)'
        """
        memory = f", {self.total_memory / _GIB:.1f} GiB" if self.total_memory else ""
        return f"{self.name} ({self.kind}{memory})"


def default_device() -> str:
    """``"cuda"`` when a CUDA GPU is visible, else ``"mps"`` on Apple silicon, else ``"cpu"``.

    Example:
        >>> default_device() in ("cuda", "mps", "cpu")
        True
    """
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


DEVICE_KINDS: tuple[str, ...] = ("cpu", "cuda", "mps")
"""The torch devices a ``--device`` may name (``cuda`` and ``cuda:N``, N from 0)."""


def _torch_build() -> tuple[str, bool]:
    """(torch's version, whether it is built with CUDA or ROCm), read from ``torch/version.py``
    without importing torch (seconds on a small machine): a CPU build answers a ``cuda`` request
    at once."""
    import re

    spec = importlib.util.find_spec("torch")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = os.path.join(folder, "version.py")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                text = file.read()
            version = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", text)
            gpu = re.search(r"^(cuda|hip)\b[^=]*=\s*['\"]", text, re.MULTILINE)
            return (version.group(1) if version else "?"), gpu is not None
    return "not installed", False


def _is_mac() -> bool:
    import sys

    return sys.platform == "darwin"


def available_devices() -> list[str]:
    """The torch devices of this machine: ``cpu``, then ``cuda:0`` … and ``mps`` where present
    (torch is imported only when it could have a GPU: a CUDA build, or a Mac).

    Example:
        >>> available_devices()[0]
        'cpu'
    """
    _, gpu_build = _torch_build()
    if not gpu_build and not _is_mac():
        return ["cpu"]
    import torch

    found = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def check_device(requested: str | None) -> str | None:
    """``requested`` (a ``--device``) when this machine has it; ``None`` (automatic) passes.

    A device that is not here is one line naming it and what is available, before anything
    loads (the one check of every verb's ``--device``, and of :func:`device_info`): a CUDA
    device on a CPU-only torch is answered without importing torch.

    Example:
        >>> check_device("cpu"), check_device(None)
        ('cpu', None)
        >>> check_device("gpu")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --device gpu: unknown device (cpu, cuda, cuda:N or mps); ...
    """
    if requested is None or not str(requested).strip():
        return None
    text = str(requested).strip()
    kind, _, index = text.partition(":")
    if kind not in DEVICE_KINDS or (index and (kind == "mps" or not index.isdigit())):
        where = f"available here: {', '.join(available_devices())}"
        raise InputError(f"{_DEVICE} {text}: unknown device (cpu, cuda, cuda:N or mps); {where}")
    if kind == "cpu":
        return text
    version, gpu_build = _torch_build()
    if kind == "cuda" and not gpu_build:
        raise InputError(
            f"{_DEVICE} {text}: no CUDA here (torch {version} is built without CUDA); "
            "available: cpu"
        )
    available = available_devices()
    if kind == "mps" and "mps" not in available:
        why = "" if _is_mac() else " (MPS runs on Apple silicon Macs)"
        raise InputError(f"{_DEVICE} mps: no Apple MPS device here{why}; available: "
                         f"{', '.join(available)}")  # fmt: skip
    gpus = [d for d in available if d.startswith("cuda:")]
    if kind == "cuda" and (not gpus or (index and f"cuda:{int(index)}" not in gpus)):
        seen = f"{len(gpus)} CUDA GPU{'s' if len(gpus) != 1 else ''} visible"
        raise InputError(f"{_DEVICE} {text}: {seen}; available: {', '.join(available)}")
    return text


def device_info(device: str | None = None) -> DeviceInfo:
    """Probe ``device`` (default: :func:`default_device`) and describe what it supports.

    ``bf16_native`` is probed (:func:`cpu_has_native_bf16` on a CPU).

    Example:
        >>> info = device_info("cpu")
        >>> info.kind, info.bf16, info.fp16, info.bf16_native == cpu_has_native_bf16()
        ('cpu', True, False, True)
    """
    check_device(device)  # a device that is not here: one line, not torch's error
    import torch

    kind = (device or default_device()).split(":")[0]
    if kind == "cuda":
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        return DeviceInfo(
            kind="cuda",
            name=str(props.name),
            total_memory=int(props.total_memory),
            bf16=bool(torch.cuda.is_bf16_supported()),
            fp16=True,
            count=int(torch.cuda.device_count()),
            bf16_native=bool(torch.cuda.is_bf16_supported(including_emulation=False)),
        )
    if kind == "mps":
        # MPS mixed precision is young; auto stays fp32 there, fp16 may be asked for explicitly.
        return DeviceInfo(kind="mps", name="Apple MPS", bf16=False, fp16=True)
    return DeviceInfo(
        kind="cpu", name="cpu", bf16=True, fp16=False, bf16_native=cpu_has_native_bf16()
    )


def cpu_has_native_bf16() -> bool:
    """Whether oneDNN has native bf16 matmul kernels on this CPU (AVX512-BF16 or AMX).

    Example:
        >>> isinstance(cpu_has_native_bf16(), bool)
        True
    """
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def resolve_precision(requested: str, info: DeviceInfo) -> Precision:
    """The precision a run uses: ``requested`` (``auto|fp32|bf16|fp16``) checked against ``info``.

    Example:
        >>> resolve_precision("bf16", DeviceInfo(kind="cpu", name="cpu", bf16=True))
        'bf16'
        >>> v100 = DeviceInfo(kind="cuda", name="Tesla V100", fp16=True)
        >>> resolve_precision("bf16", v100)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --precision bf16: Tesla V100 (cuda) has no bf16 support; ...
    """
    if requested not in PRECISIONS:
        raise InputError(f"{_PRECISION} must be one of {', '.join(PRECISIONS)}, got {requested!r}")
    if requested == "auto":
        if info.kind == "cuda":
            return "bf16" if info.bf16 else "fp16" if info.fp16 else "fp32"
        return "fp32"
    if requested == "bf16" and not info.bf16:
        raise InputError(
            f"{_PRECISION} bf16: {info.describe()} has no bf16 support; "
            f"use {_PRECISION} fp16, fp32 or auto"
        )
    if requested == "fp16" and not info.fp16:
        raise InputError(
            f"{_PRECISION} fp16: {info.describe()} cannot train in fp16 (no loss scaler there); "
            f"use {_PRECISION} bf16, fp32 or auto"
        )
    return requested  # type: ignore[return-value]


INFERENCE_DTYPES: tuple[str, ...] = ("auto", "float32", "bfloat16")
"""Values of ``--dtype`` for inference (torch dtype names)."""
_TORCH_DTYPE_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def resolve_inference_dtype(requested: str, info: DeviceInfo) -> str:
    """The torch dtype name a model *scores* in: ``requested`` (``--dtype``) checked against
    ``info``, or for ``auto`` the inference rule (see the module docstring).

    Unlike :func:`resolve_precision` (training), ``auto`` is bf16 on a CPU with native bf16
    kernels: inference has no fp32 master weights to keep, and there bf16 is faster.

    Example:
        >>> native = DeviceInfo(kind="cpu", name="cpu", bf16=True, bf16_native=True)
        >>> resolve_inference_dtype("auto", native), resolve_precision("auto", native)
        ('bfloat16', 'fp32')
        >>> resolve_inference_dtype("auto", DeviceInfo(kind="cpu", name="cpu", bf16=True))
        'float32'
        >>> resolve_inference_dtype("auto", DeviceInfo(kind="cuda", name="Tesla V100", fp16=True))
        'float16'
        >>> resolve_inference_dtype("bfloat16", DeviceInfo(kind="mps", name="Apple MPS"))
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --dtype bfloat16: Apple MPS (mps) has no bf16 support
    """
    if requested not in INFERENCE_DTYPES:
        raise InputError(f"unknown {_DTYPE} {requested!r}: choose {', '.join(INFERENCE_DTYPES)}")
    if requested == "bfloat16" and not info.bf16:
        raise InputError(f"{_DTYPE} bfloat16: {info.describe()} has no bf16 support")
    if requested != "auto":
        return requested
    if info.kind == "cpu":
        return "bfloat16" if info.bf16_native else "float32"
    return _TORCH_DTYPE_NAMES[resolve_precision("auto", info)]


def attn_implementation_installed(name: str) -> bool:
    """Whether the kernel behind attention implementation ``name`` can be imported here.

    Example:
        >>> attn_implementation_installed("sdpa")
        True
    """
    if name not in _ATTN_PACKAGES:
        return False
    package = _ATTN_PACKAGES[name]
    if name == "flex_attention":
        return importlib.util.find_spec("torch.nn.attention.flex_attention") is not None
    return package is None or importlib.util.find_spec(package) is not None


def best_attn_implementation(info: DeviceInfo, precision: str) -> str:
    """The fastest attention kernel installed for this device and precision.

    flash-attention 2 needs a CUDA GPU and half precision (it has no fp32 kernels); everywhere
    else PyTorch's fused ``sdpa`` is the best that always exists.

    Example:
        >>> best_attn_implementation(DeviceInfo(kind="cpu", name="cpu"), "fp32")
        'sdpa'
    """
    if (
        info.kind == "cuda"
        and precision in ("bf16", "fp16")
        and attn_implementation_installed("flash_attention_2")
    ):
        return "flash_attention_2"
    return "sdpa"


def resolve_attn_implementation(requested: str | None, info: DeviceInfo, precision: str) -> str:
    """``requested`` validated (known and installed), or :func:`best_attn_implementation`.

    Example:
        >>> cpu = DeviceInfo(kind="cpu", name="cpu")
        >>> resolve_attn_implementation(None, cpu, "fp32")
        'sdpa'
        >>> resolve_attn_implementation("flash_attention_9", cpu, "fp32")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --attn-implementation 'flash_attention_9' is unknown: ...
    """
    if requested is None or requested == "auto":
        return best_attn_implementation(info, precision)
    if requested not in ATTN_IMPLEMENTATIONS:
        raise InputError(
            f"{_ATTN} {requested!r} is unknown: choose from {', '.join(ATTN_IMPLEMENTATIONS)}"
        )
    if not attn_implementation_installed(requested):
        raise InputError(
            f"{_ATTN} {requested}: the {_ATTN_PACKAGES[requested]} package is not "
            f"installed; install it or use {_ATTN} sdpa"
        )
    if requested.startswith("flash_attention") and info.kind != "cuda":
        raise InputError(
            f"{_ATTN} {requested} needs a CUDA GPU, this is {info.describe()}; use {_ATTN} sdpa"
        )
    return requested


def world_size() -> int:
    """Number of processes of this run (``WORLD_SIZE`` set by ``accelerate launch``/torchrun).

    Read from the environment so that it is known before any model or process group exists.

    Example:
        >>> isinstance(world_size(), int)
        True
    """
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


# Dense (no sparsity) peak TFLOP/s from NVIDIA data sheets, by precision of the matmuls:
# bf16/fp16 tensor cores, tf32 tensor cores (fp32 with TF32 matmuls allowed), plain fp32.
# Matched by substring of the device name, most specific first.
_PEAK_TFLOPS: tuple[tuple[tuple[str, ...], dict[str, float]], ...] = (
    (("H100", "PCIe"), {"bf16": 756.0, "fp16": 756.0, "tf32": 378.0, "fp32": 51.2}),
    (("H100",), {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9}),
    (("H200",), {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9}),
    (("A100",), {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    (("V100",), {"fp16": 125.0, "fp32": 15.7}),
)


def dense_peak_flops(info: DeviceInfo, precision: str, tf32: bool = False) -> float | None:
    """The device's dense peak FLOP/s for matmuls in ``precision`` (None when not known).

    ``tf32``: fp32 matmuls run on TF32 tensor cores (``torch.backends.cuda.matmul.allow_tf32``).
    CPUs have no data-sheet figure here: measure one (the throughput benchmark does).

    Example:
        >>> h100 = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", bf16=True, fp16=True)
        >>> dense_peak_flops(h100, "bf16")
        989400000000000.0
        >>> dense_peak_flops(DeviceInfo(kind="cpu", name="cpu"), "fp32") is None
        True
    """
    if info.kind != "cuda":
        return None
    key = "tf32" if precision == "fp32" and tf32 else precision
    for needles, peaks in _PEAK_TFLOPS:
        if all(n in info.name for n in needles):
            value = peaks.get(key)
            return value * 1e12 if value is not None else None
    return None


# Data-sheet descriptions of common training GPUs, for planning runs from a machine without one
# (``scripts/run_matrix.py --dry-run --plan-for h100``). Memory is the nominal decimal size
# (80 GB = 80e9 bytes), a little below what the driver reports, so plans err on the safe side.
KNOWN_GPUS: dict[str, DeviceInfo] = {
    "h100": DeviceInfo(
        "cuda", "NVIDIA H100 80GB HBM3", 80 * 10**9, bf16=True, fp16=True, bf16_native=True
    ),
    "h100-pcie": DeviceInfo(
        "cuda", "NVIDIA H100 PCIe", 80 * 10**9, bf16=True, fp16=True, bf16_native=True
    ),
    "h200": DeviceInfo("cuda", "NVIDIA H200", 141 * 10**9, bf16=True, fp16=True, bf16_native=True),
    "a100-80gb": DeviceInfo(
        "cuda", "NVIDIA A100-SXM4-80GB", 80 * 10**9, bf16=True, fp16=True, bf16_native=True
    ),
    "a100-40gb": DeviceInfo(
        "cuda", "NVIDIA A100-SXM4-40GB", 40 * 10**9, bf16=True, fp16=True, bf16_native=True
    ),
    "v100-32gb": DeviceInfo("cuda", "Tesla V100-SXM2-32GB", 32 * 10**9, bf16=False, fp16=True),
}


def described_device(name: str) -> DeviceInfo:
    """A :data:`KNOWN_GPUS` entry (``h100``, ``h200``, ``a100-80gb`` …) or ``cpu``.

    Example:
        >>> described_device("h200").total_memory
        141000000000
        >>> described_device("tpu")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: unknown device 'tpu': choose from cpu, h100, ...
    """
    key = name.strip().lower()
    if key == "cpu":
        return DeviceInfo(kind="cpu", name="cpu", bf16=True, fp16=False)
    if key not in KNOWN_GPUS:
        raise InputError(f"unknown device {name!r}: choose from cpu, {', '.join(KNOWN_GPUS)}")
    return KNOWN_GPUS[key]
