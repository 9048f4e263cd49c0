"""The attention kernel and activation checkpointing of a loaded model, for both trainers.

Which ``attn_implementation`` a checkpoint loads with (:func:`model_attn_implementation`), which
one the loaded model runs (:func:`attn_implementation_of`), and switching activation
checkpointing on or off (:func:`set_activation_checkpointing`), for a SentenceTransformer (the
bi-encoder) and a transformers model (the listwise causal LM) alike (:func:`transformer_of`).
transformers loads inside the functions.

Example:
    >>> from transformers import BertConfig, BertModel
    >>> bert = BertModel(BertConfig(hidden_size=32, num_hidden_layers=1,
    ...                             num_attention_heads=2, intermediate_size=64))
    >>> supports_activation_checkpointing(bert), attn_implementation_of(bert) in ("sdpa", "eager")
    (True, True)
"""

from __future__ import annotations

from typing import Any


def model_attn_implementation(config: Any, wanted: str, requested: bool) -> str | None:
    """The ``attn_implementation`` to load a checkpoint with, given its config.

    ``wanted`` is the resolved choice (:func:`hf_posbias.devices.resolve_attn_implementation`).
    A model class that lacks it keeps transformers' own default (``None``) unless the user asked
    for it explicitly (``requested``): then loading fails with transformers' one-line reason.

    Example:
        >>> from transformers import BloomConfig, BertConfig
        >>> model_attn_implementation(BertConfig(), "sdpa", requested=False)
        'sdpa'
        >>> model_attn_implementation(BloomConfig(), "sdpa", requested=False) is None
        True
    """
    if requested or wanted == "eager":
        return wanted
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    try:
        model_class = MODEL_MAPPING[type(config)]
    except KeyError:
        return None
    flag = {
        "sdpa": "_supports_sdpa",
        "flex_attention": "_supports_flex_attn",
        "flash_attention_2": "_supports_flash_attn",
        "flash_attention_3": "_supports_flash_attn",
    }.get(wanted)
    if flag and getattr(model_class, flag, False):
        return wanted
    if wanted.startswith("flash") and getattr(model_class, "_supports_sdpa", False):
        return "sdpa"
    return None


def transformer_of(model: Any) -> Any:
    """The transformers model inside a SentenceTransformer (or ``model`` itself).

    Example:
        >>> from transformers import BertConfig, BertModel
        >>> bert = BertModel(BertConfig(hidden_size=32, num_hidden_layers=1,
        ...                             num_attention_heads=2, intermediate_size=64))
        >>> transformer_of(bert) is bert
        True
    """
    first = model[0] if hasattr(model, "encode") and hasattr(model, "__getitem__") else None
    return first.auto_model if first is not None and hasattr(first, "auto_model") else model


def attn_implementation_of(model: Any) -> str:
    """The attention implementation the loaded model (ST or transformers) actually runs."""
    config = transformer_of(model).config
    return str(getattr(config, "_attn_implementation", None) or "eager")


def supports_activation_checkpointing(model: Any) -> bool:
    """Whether the model's transformer supports activation (gradient) checkpointing."""
    return bool(getattr(transformer_of(model), "supports_gradient_checkpointing", False))


def set_activation_checkpointing(model: Any, enabled: bool) -> None:
    """Switch activation checkpointing of a SentenceTransformer's (or a transformers model's)
    layers on or off.

    Non-reentrant checkpointing: it works with inputs that do not require gradients (the
    gradient cache re-embeds token ids) and with DDP's unused-parameter detection.
    """
    hf = transformer_of(model)
    if enabled:
        if hasattr(hf, "activation_checkpointing_enable"):
            hf.activation_checkpointing_enable(
                activation_checkpointing_kwargs={"use_reentrant": False}
            )
        else:  # transformers before activation_checkpointing_* (the name changed in 5.x)
            hf.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    elif any(getattr(m, "gradient_checkpointing", False) is True for m in hf.modules()):
        if hasattr(hf, "activation_checkpointing_disable"):
            hf.activation_checkpointing_disable()
        else:
            hf.gradient_checkpointing_disable()
