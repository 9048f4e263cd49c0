"""Loading a model argument: :func:`load_model`, the one place that loads what a model name
means (the loader its source calls for), and the loaders of embedding models, registry models
and cross-encoders (and of a checkpoint's tokenizer and config), each with a one-line
:class:`~hf_posbias.errors.ModelLoadError`.

Evaluation (:func:`hf_posbias.evaluation.runs.mteb_models.load_mteb_model`: the loaded model
made ready for ``mteb.evaluate``), the embeddings of the analyses and the listwise first stage
(:func:`hf_posbias.embedding.load_embedder`), the study and the face (``pb.load_model``) load a
model argument through :func:`load_model`.

Example:
    >>> from hf_posbias.modeling.loaders import load_model
    >>> loaded = load_model("bm25")  # a packaged model or a folder: its SentenceTransformer
    >>> loaded.source, loaded.model
    ('bm25', None)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import ModelLoadError, first_line
from hf_posbias.modeling.hub_probe import (
    UnknownModelError,
    check_hub_model,
    hub_state,
    needs_remote_code,
)
from hf_posbias.modeling.mteb_registry import registry_needs_remote_code
from hf_posbias.modeling.resolve import (
    ENCODER_KINDS,
    ModelSettings,
    ModelSource,
    ResolvedModel,
    check_model_path,
    encoder_kind,
    is_local_model,
    known_model_names,
    known_reranker_names,
    model_display_name,
    model_location,
    resolve_model,
    with_suggestions,
)

if TYPE_CHECKING:
    from mteb.models.model_meta import ModelMeta
    from sentence_transformers import CrossEncoder, SentenceTransformer


def _remote_code_error(kind: str, name: str) -> ModelLoadError:
    return ModelLoadError(
        f"cannot load {kind} {name!r}: it needs its repository's own code; run it only if you "
        "trust the repository, with --trust-remote-code"
    )


def _load_failure(kind: str, name: str, err: Exception) -> ModelLoadError:
    line = first_line(err)
    if "trust_remote_code" in line:
        return _remote_code_error(kind, name)
    hint = ""
    if os.environ.get("HF_HUB_OFFLINE") == "1" or "offline" in line.lower():
        hint = " (offline: give a local path or a packaged model name such as all-MiniLM-L6-v2)"
    return ModelLoadError(f"cannot load {kind} {name!r}: {line}{hint}")


def load_tokenizer_config(
    folder: str | os.PathLike[str],
    name: str,
    *,
    kind: str = "checkpoint",
    pad_with_eos: bool = False,
) -> tuple[Any, Any]:
    """``(tokenizer, config)`` of a checkpoint folder without its weights; a one-line
    :class:`ModelLoadError` (``cannot load <kind> <name>: …``) when either does not load.

    ``pad_with_eos`` gives a tokenizer without a pad token its EOS token as pad token (decoders).

    Example:
        >>> load_tokenizer_config("/nonexistent", "x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.ModelLoadError: cannot load checkpoint 'x': ...
    """
    from transformers import AutoConfig, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        config = AutoConfig.from_pretrained(folder)
    except Exception as err:  # loading fails in many ways; all mean "cannot load this"
        raise _load_failure(kind, name, err) from None
    if pad_with_eos and tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, config


def load_sentence_transformer(
    name: str | os.PathLike[str],
    device: str | None = None,
    *,
    kind: str | None = None,
    **kwargs: Any,
) -> SentenceTransformer:
    """Load a :class:`~sentence_transformers.SentenceTransformer`, with a one-line error on failure.

    A local folder saved as a ``SparseEncoder`` or ``MultiVectorEncoder`` loads as that class
    (:func:`encoder_kind`); ``kind`` (a value of :data:`ENCODER_KINDS`, e.g. ``sparse``) forces
    the class, for a Hub id (a SPLADE checkpoint loads as a ``SparseEncoder``). The model's
    ``model_card_data.model_name`` is set to a unique display name so that mteb never files two
    local models under the same ``no_model_name`` cache entry.
    """
    resolved = model_location(name)
    if not Path(resolved).exists():  # a Hub id: the cache, then (online) the Hub, once
        state = check_hub_model("model", resolved, known_model_names)
        if state.local_only:
            kwargs.setdefault("local_files_only", True)
    import sentence_transformers

    if not kwargs.get("trust_remote_code") and needs_remote_code(resolved):
        raise _remote_code_error("embedding model", str(name))
    kind = kind or (encoder_kind(resolved) if Path(resolved).is_dir() else "bi-encoder")
    cls_name = next(k for k, v in ENCODER_KINDS.items() if v == kind)
    try:
        model = getattr(sentence_transformers, cls_name)(resolved, device=device, **kwargs)
    except Exception as err:  # loading fails in many ways; all are "this model cannot load"
        raise _load_failure("embedding model", str(name), err) from None
    if model.model_card_data is not None and not model.model_card_data.model_name:
        model.model_card_data.model_name = model_display_name(name)
    return model


def load_registry_model(
    meta: ModelMeta, *, device: str | None = None, trust_remote_code: bool = False
) -> Any:
    """mteb's own loader for a registry entry (its prompts and loader arguments), with a
    one-line :class:`ModelLoadError` when it fails.

    An entry whose loader runs its repository's code (:func:`registry_needs_remote_code`) loads
    only with ``trust_remote_code`` (``--trust-remote-code``).
    """
    if registry_needs_remote_code(meta) and not trust_remote_code:
        raise _remote_code_error("registry model", str(meta.name))
    try:
        return meta.load_model(device=device)
    except Exception as err:  # download, remote code, missing extra: one line either way
        raise _load_failure("embedding model", str(meta.name), err) from None


def load_named_sentence_transformer(
    name: str, *, device: str | None, settings: ModelSettings
) -> SentenceTransformer:
    """:func:`load_sentence_transformer` with the settings' remote-code opt-in; a Hub name that
    cannot load suggests the closest registry names."""
    try:
        return load_sentence_transformer(
            name, device=device, trust_remote_code=settings.trust_remote_code
        )
    except UnknownModelError:
        raise
    except ModelLoadError as err:
        if is_local_model(name) or "--trust-remote-code" in str(err):
            raise
        raise with_suggestions(err, name) from None


@dataclass(frozen=True)
class LoadedModel:
    """A model argument loaded once, by the loader its source calls for: :func:`load_model`'s
    answer.

    Attributes:
        resolved: what the argument is (:func:`~hf_posbias.modeling.resolve.resolve_model`:
            its source, where it loads from, its mteb registry entry).
        model: what was loaded: a sentence-transformers ``SentenceTransformer``,
            ``SparseEncoder`` or ``MultiVectorEncoder`` for a folder, a packaged model or a Hub
            id; mteb's own model for a registry entry (its prompts and loader arguments);
            ``None`` for ``bm25`` (an index its search builds from each corpus) and for
            ``openai:<model>`` (served elsewhere: nothing loads here).
        settings: how it was loaded (remote code; an endpoint's URL, key and batching).
    """

    resolved: ResolvedModel
    model: Any
    settings: ModelSettings

    @property
    def name(self) -> str:
        """The model argument as given."""
        return self.resolved.name

    @property
    def source(self) -> ModelSource:
        """``bm25``, ``endpoint``, ``folder``, ``packaged``, ``registry`` or ``hub``."""
        return self.resolved.source


def load_model(
    name: str | os.PathLike[str],
    *,
    device: str | None = None,
    settings: ModelSettings | None = None,
) -> LoadedModel:
    """Load a model argument, in the one resolver's order
    (:func:`~hf_posbias.modeling.resolve.resolve_model`): ``bm25`` and ``openai:<model>`` load
    nothing; an mteb registry entry loads with mteb's own loader (remote code only with
    ``settings.trust_remote_code``); a local folder, a packaged model or any other Hub id loads
    with sentence-transformers as the class its folder was saved as (dense, sparse,
    multi-vector). A path that does not exist, a name found nowhere or a model that cannot load
    is one :class:`~hf_posbias.errors.ModelLoadError` line (a Hub name suggests the closest
    registry names).

    Example:
        >>> load_model("./no-such-model")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.ModelLoadError: model path ./no-such-model does not exist
    """
    settings = settings if settings is not None else ModelSettings()
    check_model_path(name)
    resolved = resolve_model(name)
    if resolved.source in ("bm25", "endpoint"):
        return LoadedModel(resolved, None, settings)
    if resolved.meta is not None:
        trust = settings.trust_remote_code
        model = load_registry_model(resolved.meta, device=device, trust_remote_code=trust)
        return LoadedModel(resolved, model, settings)
    model = load_named_sentence_transformer(str(name), device=device, settings=settings)
    return LoadedModel(resolved, model, settings)


def is_sentence_transformers_model(model: Any) -> bool:
    """Whether ``model`` is a sentence-transformers model object (dense, sparse or
    multi-vector); never imports sentence-transformers (an object of it means it is loaded).

    Example:
        >>> is_sentence_transformers_model("all-MiniLM-L6-v2")
        False
    """
    import sys

    library = sys.modules.get("sentence_transformers")
    if library is None:
        return False
    kinds = tuple(
        getattr(library, name)
        for name in ("SentenceTransformer", "SparseEncoder", "MultiVectorEncoder")
        if hasattr(library, name)
    )
    return isinstance(model, kinds)


def weights_digest(model: Any) -> str:
    """A digest of a torch module's weights as they are now (names, dtypes, shapes, bytes):
    two objects with the same digest compute the same function.

    Example:
        >>> import torch
        >>> a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
        >>> weights_digest(a) == weights_digest(a), weights_digest(a) == weights_digest(b)
        (True, False)
    """
    import hashlib

    import torch

    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}:{flat.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:12]


def loaded_instance(model: Any) -> LoadedModel:
    """A sentence-transformers model object as a loaded model argument (``source="memory"``),
    so it evaluates as one loaded by name does: named after the folder or Hub id it was loaded
    from with a digest of its weights as they are now (:func:`weights_digest`), so a model
    changed in memory after loading is never taken for the one on disk.

    Raises:
        ModelLoadError: ``model`` is not a sentence-transformers model.
    """
    if not is_sentence_transformers_model(model):
        raise ModelLoadError(
            f"a model is a name (bm25, a folder, a Hub id, …), a model loaded by load_model "
            f"or a sentence-transformers model, not a {type(model).__name__}"
        )
    origin = getattr(getattr(model, "model_card_data", None), "base_model", None)
    if not origin:
        try:
            origin = model[0].auto_model.config._name_or_path
        except (AttributeError, IndexError, KeyError, TypeError):
            origin = None
    name = f"{model_display_name(origin or type(model).__name__)}@{weights_digest(model)}"
    return LoadedModel(ResolvedModel(name, "memory", name), model, ModelSettings())


def load_cross_encoder(
    name: str | os.PathLike[str], device: str | None = None, **kwargs: Any
) -> CrossEncoder:
    """Load a :class:`~sentence_transformers.CrossEncoder`, with a one-line error on failure."""
    from sentence_transformers import CrossEncoder

    resolved = model_location(name)
    local = Path(resolved).exists()
    if not local and check_hub_model("cross-encoder", resolved, known_reranker_names).local_only:
        kwargs.setdefault("local_files_only", True)
    if not kwargs.get("trust_remote_code") and needs_remote_code(resolved):
        raise _remote_code_error("cross-encoder", str(name))
    try:
        return CrossEncoder(resolved, device=device, **kwargs)
    except Exception as err:  # see load_sentence_transformer
        raise _load_failure("cross-encoder", str(name), err) from None


CROSS_ENCODER_PREFIX = "cross-encoder:"
"""Reranker argument prefix that forces the cross-encoder reading of a name."""


def config_architectures(name: str | os.PathLike[str], *, download: bool = False) -> list[str]:
    """The ``architectures`` of a model's ``config.json``: a local folder, a packaged model, a
    Hub id whose config is cached, or (``download=True``) fetched from the Hub; ``[]`` when
    unknown.

    Example:
        >>> config_architectures("/tmp")
        []
    """
    import json

    resolved = model_location(name)
    path: Path | None = Path(resolved) / "config.json"
    if not Path(resolved).exists():
        path = None
        from huggingface_hub import hf_hub_download, try_to_load_from_cache

        try:
            cached = try_to_load_from_cache(resolved, "config.json")
            if isinstance(cached, str):
                path = Path(cached)
            elif download and hub_state(resolved).exists:
                path = Path(hf_hub_download(resolved, "config.json"))
        except Exception:  # not a repo id, offline, no such repo: the architecture is unknown
            path = None
    if path is None or not path.is_file():
        return []
    try:
        return [str(a) for a in json.loads(path.read_text()).get("architectures") or []]
    except (OSError, ValueError, AttributeError):
        return []


def is_cross_encoder(name: str) -> bool:
    """Whether ``name`` is a cross-encoder without asking the Hub: ``cross-encoder:NAME`` or a
    model (local, packaged or cached) whose architecture is ``*ForSequenceClassification``.

    Example:
        >>> is_cross_encoder("cross-encoder:x"), is_cross_encoder("/tmp")
        (True, False)
    """
    if name.startswith(CROSS_ENCODER_PREFIX):
        return True
    try:
        architectures = config_architectures(name)
    except ModelLoadError:  # a packaged name whose package is missing
        return False
    return any(a.endswith("ForSequenceClassification") for a in architectures)
