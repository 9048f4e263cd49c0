"""``--dtype auto`` for listwise *inference*: bf16 wherever the device computes it natively.

GPUs follow :func:`hf_posbias.devices.resolve_precision` (bf16 where supported, fp16 on older
CUDA GPUs). CPUs differ on purpose: ``devices``' ``auto`` keeps training in fp32 on a CPU, but
scoring is inference, and a CPU with native bf16 matmul kernels (AVX512-BF16 / AMX, as oneDNN
reports) scores a window about 1.5× faster in bf16 — so ``auto`` is bf16 there. If ``devices``
gains an inference rule with the same CPU probe, :func:`resolve_listwise_dtype` becomes a call
to it.

Example:
    >>> resolve_listwise_dtype("float32", "cpu")
    'float32'
"""

from __future__ import annotations

from hf_posbias.errors import InputError

DTYPES: tuple[str, ...] = ("auto", "float32", "bfloat16")
_TORCH_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def cpu_has_native_bf16() -> bool:
    """Whether oneDNN has native bf16 matmul kernels on this CPU."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def resolve_listwise_dtype(dtype: str, device: str) -> str:
    """A torch dtype name for scoring on ``device`` (see the module docstring)."""
    from hf_posbias.devices import device_info, resolve_precision

    if dtype not in DTYPES:
        raise InputError(f"unknown --dtype {dtype!r}: choose {', '.join(DTYPES)}")
    info = device_info(device)
    if dtype == "bfloat16" and not info.bf16:
        raise InputError(f"--dtype bfloat16: {info.describe()} has no bf16 support")
    if dtype != "auto":
        return dtype
    if info.kind == "cpu":
        return "bfloat16" if cpu_has_native_bf16() else "float32"
    return _TORCH_NAMES[resolve_precision("auto", info)]
