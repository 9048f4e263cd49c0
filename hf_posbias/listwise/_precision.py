"""``--dtype auto`` for the listwise rerankers: bf16 where the device supports it, else fp32.

Kept in this one private function until ``hf_posbias.devices`` (issue 8: bf16 detection and
``auto`` precision for the whole toolkit) lands; the integrator swaps
:func:`resolve_listwise_dtype` for it.

Example:
    >>> resolve_listwise_dtype("float32", "cpu")
    'float32'
"""

from __future__ import annotations

from hf_posbias.errors import InputError

DTYPES: tuple[str, ...] = ("auto", "float32", "bfloat16")


def resolve_listwise_dtype(dtype: str, device: str) -> str:
    """``auto`` → ``bfloat16`` on a CUDA device or a CPU with bf16 kernels, else ``float32``."""
    if dtype not in DTYPES:
        raise InputError(f"unknown --dtype {dtype!r}: choose {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    import torch

    if device.startswith("cuda"):
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    # oneDNN reports whether this CPU has native bf16 (AVX512-BF16 / AMX) matmul kernels.
    try:
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        native = False
    return "bfloat16" if native else "float32"


def default_device() -> str:
    """``cuda`` when a GPU is visible, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
