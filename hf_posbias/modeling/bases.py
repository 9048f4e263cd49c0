"""The base models trained in YHP26 (§4, App. D) plus user-defined ones: what a base name means.

Each base is a :class:`ModelSpec`: checkpoint id, encoder/decoder, positional encoding, pooling,
size, maximum length, and the two values that follow from them in YHP26's setup (App. D) — the
learning rate (4e-5 below 400M parameters, 2e-5 above) and the query prefix (``"query: "`` for
encoders, ``"Retrieve a relevant passage: "`` for decoders; never a document prefix).

Short names: ``bert-base``, ``longformer-base``, ``modernbert-base``, ``modernbert-large``,
``gpt2-medium``, ``bloom-560m``, ``tinyllama-nope``, ``qwen3-0.6b`` (or their checkpoint ids).
Anything else is either a registered name (:func:`register_model` from Python; a third party's
package registers a :class:`ModelSpec` by an entry point of the group ``hf_posbias.bases``:
:data:`BASE_REGISTRY`, docs/extending.md) or a model the one resolver finds on this machine, a
local folder or a packaged model (spec inferred from its ``config.json`` or its
sentence-transformers modules).

Example:
    >>> from hf_posbias.modeling.bases import get_model_spec
    >>> spec = get_model_spec("gpt2-medium")
    >>> spec.kind, spec.pooling, spec.lr, spec.query_prefix
    ('decoder', 'lasttoken', 4e-05, 'Retrieve a relevant passage: ')
    >>> get_model_spec("Qwen/Qwen3-0.6B").name
    'qwen3-0.6b'
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from hf_posbias.errors import ModelLoadError
from hf_posbias.plugins import GROUPS, Registry
from hf_posbias.rows.readers import read_json
from hf_posbias.suggestions import suggest

Kind = Literal["encoder", "decoder"]
PoolingName = Literal["cls", "mean", "max", "lasttoken"]
POOLINGS: tuple[str, ...] = ("cls", "mean", "max", "lasttoken")

ENCODER_PREFIX = "query: "
DECODER_PREFIX = "Retrieve a relevant passage: "
LARGE_MODEL_PARAMS_M = 400.0
"""Models at or above this many million parameters train at 2e-5, smaller ones at 4e-5 (App. D)."""


def default_lr(params_m: float | None) -> float:
    """YHP26 App. D's learning rate by scale: 4e-5 below 400M parameters, 2e-5 above.

    An unknown size gets the small-model rate (every unknown checkpoint we infer is small enough
    to be trained on the machines this runs on; the user can always pass ``--lr``).
    """
    if params_m is not None and params_m >= LARGE_MODEL_PARAMS_M:
        return 2e-5
    return 4e-5


@dataclass(frozen=True)
class ModelSpec:
    """One trainable base model and the protocol values derived from it.

    ``lr`` and ``query_prefix`` default to YHP26 App. D's rules (by size and by kind) when left
    ``None``; ``document_prefix`` is empty in YHP26 (App. D: no document prefix).
    """

    name: str
    checkpoint: str
    kind: Kind
    positional_encoding: str
    pooling: PoolingName
    params_m: float | None
    max_length: int
    lr: float = 0.0
    query_prefix: str = ""
    document_prefix: str = ""
    is_sentence_transformer: bool = False
    inferred: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in ("encoder", "decoder"):
            raise ModelLoadError(f"model kind must be encoder or decoder, got {self.kind!r}")
        if self.pooling not in POOLINGS:
            raise ModelLoadError(
                f"pooling must be one of {', '.join(POOLINGS)}, got {self.pooling!r}"
            )
        # Frozen dataclass: fill the derived defaults once, here.
        if not self.lr:
            object.__setattr__(self, "lr", default_lr(self.params_m))
        if not self.query_prefix:
            prefix = ENCODER_PREFIX if self.kind == "encoder" else DECODER_PREFIX
            object.__setattr__(self, "query_prefix", prefix)

    @property
    def is_decoder(self) -> bool:
        """Whether the model is a causal decoder (last-token pooling, EOS as pad token)."""
        return self.kind == "decoder"


def _spec(
    name: str, ckpt: str, kind: Kind, pe: str, pool: PoolingName, p: float, n: int
) -> ModelSpec:
    return ModelSpec(name, ckpt, kind, pe, pool, p, n)


_BUILTIN: tuple[ModelSpec, ...] = (
    _spec("bert-base", "google-bert/bert-base-uncased", "encoder", "APE", "cls", 110, 512),
    _spec("longformer-base", "allenai/longformer-base-4096", "encoder", "APE", "mean", 149, 4096),
    _spec("modernbert-base", "answerdotai/ModernBERT-base", "encoder", "RoPE", "cls", 149, 8192),
    _spec("modernbert-large", "answerdotai/ModernBERT-large", "encoder", "RoPE", "cls", 395, 8192),
    _spec("gpt2-medium", "openai-community/gpt2-medium", "decoder", "APE", "lasttoken", 355, 1024),
    _spec("bloom-560m", "bigscience/bloom-560m", "decoder", "ALiBi", "lasttoken", 560, 2048),
    _spec(
        "tinyllama-nope", "AntNLP/TinyLlama-NoPE-1.1B", "decoder", "none", "lasttoken", 1100, 2048
    ),
    _spec("qwen3-0.6b", "Qwen/Qwen3-0.6B", "decoder", "RoPE", "lasttoken", 600, 32768),
)
# Note: ModernBERT-large has 395M parameters, under the 400M threshold by size, but YHP26
# trains it at 2e-5 (App. D): the table value wins over the rule.
_BUILTIN = tuple(replace(s, lr=2e-5) if s.name == "modernbert-large" else s for s in _BUILTIN)

PAPER_MODELS: tuple[str, ...] = tuple(s.name for s in _BUILTIN)
"""The eight bases of YHP26 in its Table 2 order."""

BASE_REGISTRY: Registry[ModelSpec] = Registry(
    GROUPS["bases"], ModelSpec, what="base model", builtins=lambda: _BUILTIN
)
"""The base registry: the eight bases of YHP26, the ones :func:`register_model` adds, then the
plugins of the entry-point group ``hf_posbias.bases`` (each a :class:`ModelSpec`)."""

REGISTERED_IN_PYTHON = "register_model"
"""The :meth:`~hf_posbias.plugins.Registry.source` of a base added by :func:`register_model`."""


def register_model(spec: ModelSpec, overwrite: bool = False) -> ModelSpec:
    """Add a user-defined base under ``spec.name`` (refuses to replace one unless ``overwrite``).

    Example:
        >>> from hf_posbias.modeling.bases import ModelSpec, register_model, get_model_spec
        >>> _ = register_model(ModelSpec("my-e5", "intfloat/e5-small-v2", "encoder", "APE",
        ...                              "mean", 33, 512), overwrite=True)
        >>> get_model_spec("my-e5").lr
        4e-05
    """
    if BASE_REGISTRY.get(spec.name) is not None and not overwrite:
        raise ModelLoadError(f"model name {spec.name!r} is already registered")
    return BASE_REGISTRY.add(spec, source=REGISTERED_IN_PYTHON, overwrite=True)


def model_names() -> list[str]:
    """All registered short names, paper models first (plugins' last; none imported)."""
    return BASE_REGISTRY.names()


# Decoder families by config model_type, for checkpoints saved without a *ForCausalLM head.
_DECODER_TYPES = {"gpt2", "bloom", "llama", "qwen2", "qwen3", "mistral", "gpt_neox", "phi", "opt"}
_CLS_ENCODER_TYPES = {"bert", "modernbert"}
_PE_BY_TYPE = {
    "bert": "APE",
    "longformer": "APE",
    "roberta": "APE",
    "gpt2": "APE",
    "modernbert": "RoPE",
    "llama": "RoPE",
    "qwen3": "RoPE",
    "qwen2": "RoPE",
    "bloom": "ALiBi",
}


def _count_params_m(folder: Path) -> float | None:
    """Parameter count (millions) read from safetensors headers — no weights are loaded."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    from safetensors import safe_open

    total = 0
    for path in files:
        with safe_open(str(path), framework="np") as handle:
            for key in handle.keys():  # noqa: SIM118 (safe_open is not a dict)
                n = 1
                for dim in handle.get_slice(key).get_shape():
                    n *= dim
                total += n
    return round(total / 1e6, 3)


def _config_max_length(config: dict) -> int:
    for key in ("max_position_embeddings", "n_positions", "seq_length"):
        if isinstance(config.get(key), int):
            value = int(config[key])
            # RoBERTa-style embeddings reserve padding_idx + 1 positions.
            if config.get("model_type") in ("roberta", "longformer", "xlm-roberta", "camembert"):
                value -= int(config.get("pad_token_id", 1) or 1) + 1
            return value
    return 2048  # ALiBi / NoPE models have no table; 2k is YHP26 Table 2's value for them.


def infer_spec_from_folder(path: str | Path, name: str | None = None) -> ModelSpec:
    """Infer a :class:`ModelSpec` from a local checkpoint folder.

    A sentence-transformers folder (``modules.json``) keeps its own pooling. A plain checkpoint is
    a decoder when its config's ``architectures`` name a ``*ForCausalLM``/``*LMHeadModel`` class
    or its ``model_type`` is a known decoder family; decoders pool the last token, BERT/ModernBERT
    the CLS token, other encoders the mean (Longformer in YHP26 Table 2).
    """
    folder = Path(path).expanduser()
    is_st = (folder / "modules.json").is_file()
    config_path = folder / "config.json"
    if not config_path.is_file():
        # sentence-transformers 6 may keep the transformer in a sub-folder.
        nested = sorted(folder.glob("*/config.json"))
        if not nested:
            raise ModelLoadError(f"{folder} has no config.json: not a transformers checkpoint")
        config_path = nested[0]
    config = read_json(config_path)
    model_type = str(config.get("model_type", ""))
    archs = [str(a) for a in config.get("architectures") or []]
    is_decoder = model_type in _DECODER_TYPES or any(
        a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs
    )
    pooling: PoolingName
    if is_st:
        pooling = _st_folder_pooling(folder) or "mean"
    elif is_decoder:
        pooling = "lasttoken"
    else:
        pooling = "cls" if model_type in _CLS_ENCODER_TYPES else "mean"
    return ModelSpec(
        name=name or folder.name,
        checkpoint=str(folder),
        kind="decoder" if is_decoder else "encoder",
        positional_encoding=_PE_BY_TYPE.get(model_type, "unknown"),
        pooling=pooling,
        params_m=_count_params_m(config_path.parent),
        max_length=_config_max_length(config),
        is_sentence_transformer=is_st,
        inferred=True,
    )


def _st_folder_pooling(folder: Path) -> PoolingName | None:
    for modules_entry in read_json(folder / "modules.json"):
        if "Pooling" in str(modules_entry.get("type", "")):
            cfg = folder / str(modules_entry.get("path", "")) / "config.json"
            if cfg.is_file():
                data = read_json(cfg)
                mode = data.get("pooling_mode")
                if isinstance(mode, str) and mode in POOLINGS:
                    return mode  # type: ignore[return-value]
                # Older configs: one boolean per mode.
                for key, value in data.items():
                    if value is True and key.startswith("pooling_mode_"):
                        short = {"cls_token": "cls", "mean_tokens": "mean", "max_tokens": "max"}
                        mode = short.get(key[len("pooling_mode_") :], key[len("pooling_mode_") :])
                        if mode in POOLINGS:
                            return mode  # type: ignore[return-value]
    return None


def get_model_spec(name_or_path: str | Path) -> ModelSpec:
    """The spec of a short name, a paper checkpoint id, a local folder, or a packaged model.

    Registered bases first (:data:`BASE_REGISTRY`: a base is a training recipe), then the one
    resolver, :func:`hf_posbias.modeling.resolve.resolve_model` (a local folder or a packaged
    model). Unknown names raise a one-line :class:`~hf_posbias.errors.ModelLoadError` listing the
    registered names and the closest of them.

    Example:
        >>> from hf_posbias.modeling.bases import get_model_spec
        >>> get_model_spec("modernbert-large").lr
        2e-05
        >>> get_model_spec("modernbert-larg")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.ModelLoadError: unknown model 'modernbert-larg': ... (did you mean ...
    """
    from hf_posbias.modeling.resolve import resolve_model

    text = str(name_or_path)
    named = BASE_REGISTRY.get(text)
    if named is not None:
        return named
    for spec in BASE_REGISTRY.items().values():
        if spec.checkpoint == text:
            return spec
    resolved = resolve_model(text, registry=False)
    if resolved.is_local:
        display = text if resolved.source == "packaged" else None
        return infer_spec_from_folder(Path(resolved.location), name=display)
    raise ModelLoadError(
        f"unknown model {text!r}: not a registered name ({', '.join(model_names())}) "
        f"nor an existing local folder{suggest(text, model_names(), n=3)}"
    )
