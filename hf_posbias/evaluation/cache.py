"""An embedding cache in front of an mteb encoder: the shared corpus is encoded once per model.

mteb evaluates every ``hf_subset`` separately and re-encodes the corpus for each one. A position
task has one subset per bucket over the SAME corpus, so without a cache a 6-bucket task embeds
its corpus 6 times. :class:`CachedEncoder` implements mteb's encoder protocol (``encode``,
``similarity``, ``similarity_pairwise``, ``mteb_model_meta``) and answers repeated texts from
memory (optionally also from disk), counting what it actually sent to the model.

Cache keys are ``sha256(prompt key, text)``. The prompt key is the prompt type (query/document)
plus the prompt text the wrapped model would use for the task, so two tasks with identical
prompts share entries (SQuAD-PosQ and SQuAD-PosQ-tiny share a corpus) while a model with
task-specific prompts never mixes them. When the prompt cannot be resolved, the task name is part
of the key (safe, just less sharing).

The wrapper also carries the mteb model name/revision. OFFLINE_NOTES: every local model is
``no_model_name/available`` unless named, and mteb's result cache then returns the first model's
scores for the second — :func:`unique_model_meta` gives each checkpoint a content-derived revision.

Example:
    >>> import numpy as np
    >>> from hf_posbias.evaluation.cache import CachedEncoder
    >>> class Toy:  # the smallest object mteb would accept as an encoder
    ...     mteb_model_meta = None
    ...     def encode(self, inputs, **kwargs):
    ...         return np.array([[float(len(t))] for b in inputs for t in b["text"]])
    ...     def similarity(self, a, b): return a @ b.T
    ...     def similarity_pairwise(self, a, b): return (a * b).sum(-1)
    >>> cached = CachedEncoder(Toy())
    >>> texts = ["a", "bb", "a"]
    >>> cached.encode_texts(texts, prompt_type="document").ravel().tolist()
    [1.0, 2.0, 1.0]
    >>> _ = cached.encode_texts(texts, prompt_type="document")
    >>> (cached.stats.texts_encoded, cached.stats.cache_hits)
    (2, 4)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from mteb.abstasks.task_metadata import TaskMetadata
    from mteb.models.model_meta import ModelMeta

logger = logging.getLogger(__name__)


@dataclass
class EncodeStats:
    """What the cache saw and what it forwarded to the model."""

    calls: int = 0
    """``encode`` calls received (from mteb)."""
    model_calls: int = 0
    """``encode`` calls forwarded to the wrapped model (0 when everything was cached)."""
    texts_requested: int = 0
    texts_encoded: int = 0
    """Texts actually run through the model (forward passes over texts)."""
    cache_hits: int = 0
    encoded_by_type: dict[str, int] = field(default_factory=dict)
    """Texts encoded per prompt type (``query``/``document``)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


def _prompt_type_value(prompt_type: Any) -> str:
    if prompt_type is None:
        return "none"
    return str(getattr(prompt_type, "value", prompt_type))


def _hash_key(prompt_key: str, text: str) -> str:
    return hashlib.sha256(f"{prompt_key}\x00{text}".encode()).hexdigest()


class CachedEncoder:
    """mteb encoder wrapper with an embedding cache (memory, optionally disk) and counters.

    Args:
        model: any mteb ``EncoderProtocol`` (e.g. ``SentenceTransformerEncoderWrapper``).
        cache_dir: optional folder; embeddings persist under ``<cache_dir>/<name>/<revision>``
            so that different models never share a file.
        meta: the ``ModelMeta`` mteb records (name/revision must be unique per checkpoint);
            defaults to the wrapped model's.

    The wrapper deliberately does not implement ``index``/``search``: mteb must see an
    encoder so that it wraps it in its own ``SearchEncoderWrapper`` (exact search unchanged).
    """

    def __init__(
        self,
        model: Any,
        cache_dir: str | Path | None = None,
        meta: ModelMeta | None = None,
    ) -> None:
        if not hasattr(model, "encode"):
            raise TypeError("CachedEncoder needs an object with an mteb-style encode method")
        self.model = model
        self._meta = meta if meta is not None else getattr(model, "mteb_model_meta", None)
        self.stats = EncodeStats()
        self._store: dict[str, np.ndarray] = {}
        self._dirty = False
        self.cache_dir: Path | None = None
        if cache_dir is not None:
            name = getattr(self._meta, "name", None) or "unnamed"
            revision = getattr(self._meta, "revision", None) or "no_revision"
            safe = name.replace("/", "__").replace(" ", "_")
            self.cache_dir = Path(cache_dir).expanduser() / safe / revision
            self._load_disk()

    # -- mteb protocol ---------------------------------------------------------------------
    @property
    def mteb_model_meta(self) -> ModelMeta | None:
        """The metadata mteb files results under (unique name + revision)."""
        return self._meta

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Delegates to the wrapped model (its similarity function is unchanged)."""
        return self.model.similarity(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Delegates to the wrapped model."""
        return self.model.similarity_pairwise(embeddings1, embeddings2)

    def encode(
        self,
        inputs: Any,
        *,
        task_metadata: TaskMetadata | None = None,
        hf_split: str = "test",
        hf_subset: str = "default",
        prompt_type: Any = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """Encode a dataloader's texts, running only the ones not cached yet through the model."""
        dataset = inputs.dataset
        texts = [str(t) for t in dataset["text"]]
        prompt_key = self._prompt_key(task_metadata, prompt_type)
        keys = [_hash_key(prompt_key, t) for t in texts]
        missing: list[int] = []
        seen: set[str] = set()
        for i, key in enumerate(keys):
            if key not in self._store and key not in seen:
                missing.append(i)
                seen.add(key)
        self.stats.calls += 1
        self.stats.texts_requested += len(texts)
        self.stats.cache_hits += len(texts) - len(missing)
        if missing:
            from torch.utils.data import DataLoader

            loader = DataLoader(
                dataset.select(missing),
                batch_size=inputs.batch_size or 32,
                collate_fn=inputs.collate_fn,
                shuffle=False,
            )
            vectors = self.model.encode(
                loader,
                task_metadata=task_metadata,
                hf_split=hf_split,
                hf_subset=hf_subset,
                prompt_type=prompt_type,
                **kwargs,
            )
            vectors = _to_numpy(vectors)
            if len(vectors) != len(missing):
                raise RuntimeError(
                    f"model returned {len(vectors)} embeddings for {len(missing)} texts"
                )
            for i, vector in zip(missing, vectors, strict=True):
                self._store[keys[i]] = vector
            self.stats.model_calls += 1
            self.stats.texts_encoded += len(missing)
            kind = _prompt_type_value(prompt_type)
            self.stats.encoded_by_type[kind] = self.stats.encoded_by_type.get(kind, 0) + len(
                missing
            )
            self._dirty = True
            self.save()
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._store[k] for k in keys])

    # -- convenience -----------------------------------------------------------------------
    def encode_texts(
        self,
        texts: Sequence[str],
        *,
        prompt_type: Any = None,
        task_metadata: TaskMetadata | None = None,
        batch_size: int = 32,
    ) -> np.ndarray:
        """Encode plain strings through the cache (no mteb task needed)."""
        from datasets import Dataset
        from torch.utils.data import DataLoader

        dataset = Dataset.from_dict({"text": list(texts)})
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False)
        return self.encode(loader, task_metadata=task_metadata, prompt_type=prompt_type)

    def clear(self) -> None:
        """Drop the in-memory cache and reset the counters (the disk copy is kept)."""
        self._store.clear()
        self.stats = EncodeStats()

    def __len__(self) -> int:
        return len(self._store)

    # -- internals -------------------------------------------------------------------------
    def _prompt_key(self, task_metadata: TaskMetadata | None, prompt_type: Any) -> str:
        kind = _prompt_type_value(prompt_type)
        if task_metadata is None:
            return kind
        model_prompts = getattr(self.model, "model_prompts", "unknown")
        if model_prompts == "unknown":
            # Cannot tell which prompt the model would use: keep tasks apart.
            return f"{kind}|task={task_metadata.name}"
        if not model_prompts:
            return kind
        from mteb.models.abs_encoder import get_prompt_name

        prompt_name = get_prompt_name(model_prompts, task_metadata, prompt_type)
        prompt = model_prompts.get(prompt_name) if prompt_name else None
        return f"{kind}|prompt={prompt!r}"

    def _files(self) -> tuple[Path, Path]:
        assert self.cache_dir is not None
        return self.cache_dir / "embeddings.npy", self.cache_dir / "keys.json"

    def _load_disk(self) -> None:
        vectors_path, keys_path = self._files()
        if not (vectors_path.exists() and keys_path.exists()):
            return
        keys = json.loads(keys_path.read_text())
        vectors = np.load(vectors_path)
        if len(keys) != len(vectors):
            logger.warning("embedding cache %s is inconsistent; ignoring it", self.cache_dir)
            return
        self._store.update(zip(keys, vectors, strict=True))
        logger.info("loaded %d cached embeddings from %s", len(keys), self.cache_dir)

    def save(self) -> None:
        """Persist the cache to ``cache_dir`` (no-op without one or when nothing changed)."""
        if self.cache_dir is None or not self._dirty or not self._store:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        vectors_path, keys_path = self._files()
        keys = list(self._store)
        # Atomic replace: an interrupted run never leaves a half-written cache behind.
        tmp_vectors = vectors_path.with_name(f".embeddings.{os.getpid()}.npy")
        np.save(tmp_vectors, np.stack([self._store[k] for k in keys]))
        tmp_keys = keys_path.with_name(f".keys.{os.getpid()}.json")
        tmp_keys.write_text(json.dumps(keys))
        os.replace(tmp_vectors, vectors_path)
        os.replace(tmp_keys, keys_path)
        self._dirty = False


def _to_numpy(vectors: Any) -> np.ndarray:
    try:
        import torch

        if isinstance(vectors, torch.Tensor):
            vectors = vectors.detach().cpu()
            if vectors.is_floating_point() and vectors.dtype not in (torch.float32, torch.float64):
                vectors = vectors.float()
            return vectors.numpy()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    return np.asarray(vectors)


def folder_fingerprint(folder: str | Path, sample_bytes: int = 4 << 20) -> str:
    """A content hash of a model folder: file names, sizes and bytes (head+tail of big files).

    Two checkpoints trained from the same base have the same config and the same
    ``model_card_data``; only their weights differ, so the weights must be in the hash.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "w.bin").write_bytes(b"abc")
        >>> folder_fingerprint(d) == folder_fingerprint(d)
        True
    """
    from hf_posbias.hashing import folder_digest

    return folder_digest(folder, sample_bytes=sample_bytes)[:12]


def unique_model_meta(
    meta: ModelMeta | None,
    name: str,
    revision: str,
    **overrides: Any,
) -> ModelMeta:
    """A copy of ``meta`` (or an empty one) with the given unique ``name``/``revision``.

    mteb requires a ``/`` in model names; a bare name gets a ``local/`` prefix.
    """
    from mteb.models.model_meta import ModelMeta

    if "/" not in name:
        name = f"local/{name}"
    update = {"name": name, "revision": revision, **overrides}
    if meta is None:
        return ModelMeta.create_empty(overwrites=update)
    return meta.model_copy(update=update)
