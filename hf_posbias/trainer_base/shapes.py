"""Model shapes: the real architectures of the registered bases, and what a step costs in FLOPs.

Nothing can be downloaded on the machines this runs on, yet planning a run (memory, time) and
benchmarking it need the *shape* of each paper base, not its weights. :func:`real_config` builds
the transformers config of each registered base with the sizes of its public ``config.json``,
written in code in one table (:data:`BASE_SHAPES`); a random-initialised model of that config
has the real parameter count, layer sizes and attention layout. :class:`ModelShape` condenses a
config or a model into the numbers the memory estimate and the FLOP count need.

FLOPs of one training step (model FLOPs, the numerator of MFU, as in PaLM, Chowdhery et al. 2022,
App. B): for every sequence of ``t`` tokens (queries and documents alike)::

    6 · N · t  +  12 · L · d_attn · t²

``N`` = non-embedding parameters (embedding look-ups are not matmuls), ``L`` = layers,
``d_attn`` = heads × head dim. ``6 N t`` is forward (2) + backward (4) through every weight;
``12 L d_attn t²`` is QKᵀ and AV (2 + 2 FLOP per query-key pair per dimension) forward and
backward. The extra forward of the gradient cache and checkpointing's recomputation are *not*
counted (they are hardware FLOPs, not model FLOPs): with both, the best possible MFU is 6/10.
Attention is counted over the full sequence even for sliding-window layers (an upper bound).

Example:
    >>> from hf_posbias.trainer_base.shapes import step_flops, ModelShape
    >>> shape = ModelShape(n_params=110_000_000, n_embedding_params=23_800_000, n_layers=12,
    ...                    hidden=768, intermediate=3072, n_heads=12, n_kv_heads=12, head_dim=64)
    >>> f"{step_flops(shape, [512] * 256):.3e}"
    '7.521e+13'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hf_posbias.errors import ModelLoadError

ENCODER_FAMILIES = ("bert", "longformer", "modernbert")
DECODER_FAMILIES = ("gpt2", "bloom", "llama", "qwen3")
FAMILIES = ENCODER_FAMILIES + DECODER_FAMILIES
"""Architecture families of :func:`tiny_config` (and of ``hf_posbias.testing``'s checkpoints)."""

CONFIG_CLASSES: dict[str, str] = {
    "bert": "BertConfig",
    "longformer": "LongformerConfig",
    "modernbert": "ModernBertConfig",
    "gpt2": "GPT2Config",
    "bloom": "BloomConfig",
    "llama": "LlamaConfig",
    "qwen3": "Qwen3Config",
}
"""Family → its transformers config class: what a real and a tiny config of it are built on."""

_GATED_MLP_TYPES = {"llama", "qwen2", "qwen3", "mistral", "modernbert"}


@dataclass(frozen=True)
class BaseShape:
    """A registered base's architecture: its family and the sizes of its public ``config.json``
    (the arguments its family's config class needs beyond its defaults)."""

    family: str
    sizes: Mapping[str, Any] = field(default_factory=dict)


_MODERNBERT_SIZES = {
    "vocab_size": 50368,
    "max_position_embeddings": 8192,
    "global_attn_every_n_layers": 3,
    "local_attention": 128,
    "pad_token_id": 50283,
    "bos_token_id": 50281,
    "eos_token_id": 50282,
    "cls_token_id": 50281,
    "sep_token_id": 50282,
}

BASE_SHAPES: dict[str, BaseShape] = {
    # The library defaults are bert-base-uncased.
    "bert-base": BaseShape("bert"),
    "longformer-base": BaseShape(
        "longformer",
        {
            "vocab_size": 50265,
            "max_position_embeddings": 4098,
            "attention_window": [512] * 12,
            "type_vocab_size": 1,
            "pad_token_id": 1,
            "bos_token_id": 0,
            "eos_token_id": 2,
            "sep_token_id": 2,
        },
    ),
    "modernbert-base": BaseShape(
        "modernbert",
        {
            **_MODERNBERT_SIZES,
            "hidden_size": 768,
            "intermediate_size": 1152,
            "num_hidden_layers": 22,
            "num_attention_heads": 12,
        },
    ),
    "modernbert-large": BaseShape(
        "modernbert",
        {
            **_MODERNBERT_SIZES,
            "hidden_size": 1024,
            "intermediate_size": 2624,
            "num_hidden_layers": 28,
            "num_attention_heads": 16,
        },
    ),
    "gpt2-medium": BaseShape(
        "gpt2", {"n_embd": 1024, "n_layer": 24, "n_head": 16, "n_positions": 1024}
    ),
    "bloom-560m": BaseShape(
        "bloom", {"hidden_size": 1024, "n_layer": 24, "n_head": 16, "vocab_size": 250880}
    ),
    # TinyLlama-NoPE has the TinyLlama-1.1B shape: removing rotary embeddings changes no
    # parameter or FLOP count.
    "tinyllama-nope": BaseShape(
        "llama",
        {
            "vocab_size": 32000,
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "num_hidden_layers": 22,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "max_position_embeddings": 2048,
        },
    ),
    "qwen3-0.6b": BaseShape(
        "qwen3",
        {
            "vocab_size": 151936,
            "hidden_size": 1024,
            "intermediate_size": 3072,
            "num_hidden_layers": 28,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "max_position_embeddings": 40960,
            "rope_theta": 1_000_000,
            "tie_word_embeddings": True,
        },
    ),
}
"""Registered base → its architecture, the one table of per-base shapes: :func:`real_config`
builds its config, :func:`tiny_shape_config` a tiny one of its family, and training's planning
reads a registered base's shape from here instead of its checkpoint."""


def base_shape(name: str) -> BaseShape:
    """The :class:`BaseShape` of registered base ``name``; a one-line error for any other name.

    Example:
        >>> base_shape("tinyllama-nope").family
        'llama'
    """
    shape = BASE_SHAPES.get(name)
    if shape is None:
        raise ModelLoadError(
            f"no built-in shape for {name!r}: choose from {', '.join(BASE_SHAPES)}"
        )
    return shape


def real_config(name: str) -> Any:
    """The transformers config of registered base ``name`` with its real sizes
    (:data:`BASE_SHAPES`).

    Example:
        >>> real_config("qwen3-0.6b").num_hidden_layers
        28
    """
    import transformers

    shape = base_shape(name)
    return getattr(transformers, CONFIG_CLASSES[shape.family])(**shape.sizes)


_TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
"""The tiny shape every family shares (hidden 64, 2 layers, 4 heads)."""
_TINY_MLP = {**_TINY, "intermediate_size": 128}


def _tiny_family_kwargs(family: str, max_positions: int) -> dict[str, Any]:
    """``family`` → the arguments of its tiny config."""
    decoder_ids = {"bos_token_id": 0, "eos_token_id": 0}
    families: dict[str, dict[str, Any]] = {
        "bert": {**_TINY_MLP, "max_position_embeddings": max_positions, "pad_token_id": 0},
        "longformer": {
            **_TINY_MLP,
            # Longformer's positions start after the padding index (RoBERTa's offset of 2)
            "max_position_embeddings": max_positions + 2,
            "attention_window": [32, 32],
            "pad_token_id": 0,
            "bos_token_id": 2,
            "eos_token_id": 3,
            "sep_token_id": 3,
        },
        "modernbert": {
            **_TINY_MLP,
            "max_position_embeddings": max_positions,
            "pad_token_id": 0,
            "cls_token_id": 2,
            "sep_token_id": 3,
            "bos_token_id": 2,
            "eos_token_id": 3,
            "global_attn_every_n_layers": 2,
            "local_attention": 32,
        },
        "gpt2": {
            "n_embd": 64,
            "n_layer": 2,
            "n_head": 4,
            "n_positions": max_positions,
            **decoder_ids,
        },
        "bloom": {"hidden_size": 64, "n_layer": 2, "n_head": 4, **decoder_ids},
        "llama": {
            **_TINY_MLP,
            "num_key_value_heads": 2,
            "max_position_embeddings": max_positions,
            **decoder_ids,
        },
        "qwen3": {
            **_TINY_MLP,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "max_position_embeddings": max_positions,
            **decoder_ids,
        },
    }
    if family not in families:
        raise ValueError(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}")
    return families[family]


def tiny_config(family: str, vocab_size: int, max_positions: int = 512, **overrides: Any) -> Any:
    """The transformers config of a tiny (hidden 64, 2 layers) model of ``family``."""
    import transformers

    kwargs = _tiny_family_kwargs(family, max_positions)
    cfg = getattr(transformers, CONFIG_CLASSES[family])(vocab_size=vocab_size, **kwargs)
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


def tiny_shape_config(name: str, vocab_size: int, max_positions: int = 512) -> Any:
    """A tiny (hidden 64, 2 layers) config of the same architecture as base ``name``."""
    family = base_shape(name).family
    return tiny_config(family, vocab_size=vocab_size, max_positions=max_positions)


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a transformer that memory and FLOP estimates need."""

    n_params: int
    n_embedding_params: int
    n_layers: int
    hidden: int
    intermediate: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    gated_mlp: bool = False
    attention_window: int | None = None
    """Span of local attention (Longformer), None for full attention."""
    model_type: str = ""

    @property
    def non_embedding_params(self) -> int:
        """Parameters that take part in matmuls (N of ``6 N t``)."""
        return self.n_params - self.n_embedding_params

    @classmethod
    def from_model(cls, model: Any) -> ModelShape:
        """The shape of a transformers model (or of a SentenceTransformer's first module)."""
        import torch

        from hf_posbias.trainer_base.attention import transformer_of

        hf = transformer_of(model)
        n_params = sum(p.numel() for p in hf.parameters())
        n_embed = sum(
            p.numel()
            for m in hf.modules()
            if isinstance(m, torch.nn.Embedding)
            for p in m.parameters(recurse=False)
        )
        return cls._from_config(hf.config, n_params, n_embed)

    @classmethod
    def from_config(cls, config: Any) -> ModelShape:
        """The shape of ``config``'s base model, counted on the meta device (no memory used)."""
        import torch
        from transformers import AutoModel

        with torch.device("meta"):
            model = AutoModel.from_config(config)
        return cls.from_model(model)

    @classmethod
    def _from_config(cls, config: Any, n_params: int, n_embed: int) -> ModelShape:
        get = lambda *keys, default=None: next(  # noqa: E731
            (getattr(config, k) for k in keys if getattr(config, k, None) is not None), default
        )
        hidden = int(get("hidden_size", "n_embd"))
        heads = int(get("num_attention_heads", "n_head"))
        intermediate = int(get("intermediate_size", "n_inner", default=4 * hidden) or 4 * hidden)
        window = get("attention_window")
        if isinstance(window, (list, tuple)):
            window = max(window)
        model_type = str(getattr(config, "model_type", ""))
        return cls(
            n_params=int(n_params),
            n_embedding_params=int(n_embed),
            n_layers=int(get("num_hidden_layers", "n_layer")),
            hidden=hidden,
            intermediate=intermediate,
            n_heads=heads,
            n_kv_heads=int(get("num_key_value_heads", default=heads)),
            head_dim=int(get("head_dim", default=hidden // heads)),
            gated_mlp=model_type in _GATED_MLP_TYPES,
            attention_window=int(window) + 1 if window else None,
            model_type=model_type,
        )


def sequence_flops(shape: ModelShape, tokens: int) -> float:
    """Model FLOPs of one training pass (forward + backward) over one sequence of ``tokens``."""
    d_attn = shape.n_heads * shape.head_dim
    return 6.0 * shape.non_embedding_params * tokens + 12.0 * shape.n_layers * d_attn * tokens**2


def step_flops(shape: ModelShape, sequence_lengths: Iterable[int]) -> float:
    """Model FLOPs of one step over sequences of the given token lengths (see module doc)."""
    return sum(sequence_flops(shape, int(t)) for t in sequence_lengths)
