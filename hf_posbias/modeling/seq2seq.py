"""Encoder–decoder checkpoints: ListT5's Fusion-in-Decoder T5 (:func:`load_fid_t5`).

ListT5's released checkpoints are saved from the authors' ``FiDT5`` class, a
``T5ForConditionalGeneration`` whose encoder is wrapped (``encoder.encoder.block.N.module.…``):
the wrapper only reshapes the inputs so that each passage is encoded alone, and holds no weights
of its own. :data:`FID_KEY_MAPPING` renames those keys to transformers' own T5 layout, so the
weights load into the stock class (a checkpoint already in that layout loads unchanged); the
passages are then encoded one by one by the caller (:mod:`hf_posbias.rerankers.listt5`), which
is all the wrapper did.

Example:
    >>> import re
    >>> key = "encoder.encoder.block.0.module.layer.0.SelfAttention.q.weight"
    >>> for pattern, new in FID_KEY_MAPPING.items():
    ...     key = re.sub(pattern, new, key)
    >>> key
    'encoder.block.0.layer.0.SelfAttention.q.weight'
"""

from __future__ import annotations

from typing import Any

from hf_posbias.errors import ModelLoadError
from hf_posbias.modeling.loaders import _load_failure
from hf_posbias.modeling.resolve import model_location

FID_KEY_MAPPING = {r"^encoder\.encoder\.": "encoder.", r"\.module\.": "."}
"""FiDT5's wrapped encoder keys → transformers' T5 keys (``from_pretrained(key_mapping=…)``)."""

FALLBACK_TOKENIZER = "t5-base"
"""The tokenizer ListT5's reference code falls back to when a checkpoint ships none."""


def load_fid_t5(
    name: str, *, dtype: str | None = None, device: str | None = None
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of a ListT5 / FiD-T5 checkpoint (a folder or a Hub id), in eval
    mode on ``device`` (default CUDA when available); ``dtype`` a torch dtype name, ``None``
    for the checkpoint's own. The tokenizer is the checkpoint's, else :data:`FALLBACK_TOKENIZER`
    as ListT5's reference code does. One :class:`~hf_posbias.errors.ModelLoadError` line when
    either does not load.

    Example:
        >>> load_fid_t5("/nonexistent")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.ModelLoadError: cannot load ListT5 model '/nonexistent': ...
    """
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    location = model_location(name)
    kwargs: dict[str, Any] = {"key_mapping": FID_KEY_MAPPING}
    if dtype:
        if not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise ModelLoadError(f"unknown dtype {dtype!r} (e.g. float32, bfloat16, float16)")
        kwargs["dtype"] = getattr(torch, dtype)
    try:
        model = T5ForConditionalGeneration.from_pretrained(location, **kwargs)
    except Exception as err:  # loading fails in many ways; all mean "cannot load this"
        raise _load_failure("ListT5 model", name, err) from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(location)
    except Exception:  # noqa: BLE001 - the reference code's fallback, then one line
        try:
            tokenizer = AutoTokenizer.from_pretrained(FALLBACK_TOKENIZER)
        except Exception as err:
            raise _load_failure(
                f"tokenizer of ListT5 model (its own, then {FALLBACK_TOKENIZER})", name, err
            ) from None
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return model.to(device).eval(), tokenizer
