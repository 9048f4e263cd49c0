"""Embeddings from any model argument: what the listwise dense first stage and ``posbias
analyze`` encode with.

:func:`load_embedder` loads a model argument where every model argument loads
(:func:`hf_posbias.modeling.loaders.load_model`): ``openai:<model>`` (an embeddings endpoint,
:mod:`hf_posbias.evaluation.runs.endpoint`), a local folder or packaged model, a name in mteb's
model registry (loaded by mteb, encoded through mteb's protocol so that its prompts and
instructions apply), any other Hub id (remote code only with ``--trust-remote-code``). Evaluation
makes the same loaded models ready for ``mteb.evaluate``
(:mod:`hf_posbias.evaluation.runs.mteb_models`).

Example:
    >>> import numpy as np
    >>> e = TextEmbedder("toy", lambda texts, kind: np.ones((len(texts), 2)))
    >>> [round(float(x), 3) for x in e.embed(["a"], "query")[0]]
    [0.707, 0.707]
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hf_posbias.errors import ModelLoadError
from hf_posbias.modeling.loaders import load_model
from hf_posbias.modeling.resolve import ModelSettings, model_display_name


class TextEmbedder:
    """Unit-norm query/document embeddings from any model argument the resolver takes (except
    ``bm25``): what the listwise dense first stage and ``posbias analyze`` encode with.

    ``encode_fn(texts, kind)`` returns one row per text (``kind``: ``query`` or ``document``);
    rows are normalised here. A model backed by a sentence-transformers model exposes its
    ``tokenizer``, ``prompts`` and ``max_seq_length`` (the analyses' truncation checks); an
    endpoint has none (``None``).
    """

    def __init__(
        self,
        name: str,
        encode_fn: Callable[[list[str], str], Any],
        *,
        sentence_transformer: Any = None,
        kind: str = "bi-encoder",
        source: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self._encode = encode_fn
        self.sentence_transformer = sentence_transformer
        self.source = dict(source or {})

    @property
    def tokenizer(self) -> Any:
        """The sentence-transformers model's tokenizer, ``None`` for an endpoint."""
        return getattr(self.sentence_transformer, "tokenizer", None)

    @property
    def prompts(self) -> dict[str, str]:
        """The sentence-transformers model's prompts (``{}`` when it has none)."""
        return dict(getattr(self.sentence_transformer, "prompts", None) or {})

    @property
    def max_seq_length(self) -> int | None:
        """Longest input in tokens (``None``: unknown, e.g. an endpoint)."""
        return getattr(self.sentence_transformer, "max_seq_length", None)

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        if self.sentence_transformer is None:
            raise ModelLoadError(f"{self.name}: its maximum sequence length cannot be changed")
        self.sentence_transformer.max_seq_length = value

    def describe(self) -> dict[str, Any]:
        """What the embeddings depend on besides the texts: the model's name and kind, where it
        came from (``source``: a local folder's content hash, a registry revision and prompts,
        an endpoint's URL), its prompts and its maximum length in tokens. What a cache of its
        results is keyed on (the listwise first stage's lists, ``first_stage.json``).

        Example:
            >>> TextEmbedder("toy", lambda texts, kind: [[1.0]], source={"x": 1}).describe()
            {'model': 'toy', 'kind': 'bi-encoder', 'prompts': {}, 'max_seq_length': None, 'x': 1}
        """
        return {
            "model": self.name,
            "kind": self.kind,
            "prompts": self.prompts,
            "max_seq_length": self.max_seq_length,
            **self.source,
        }

    @property
    def similarity_fn_name(self) -> str | None:
        """The sentence-transformers model's own similarity function (``cosine``, ``dot``, …);
        ``None`` when it has none (an endpoint: its embeddings are compared by cosine)."""
        name = getattr(self.sentence_transformer, "similarity_fn_name", None)
        return None if name is None else str(getattr(name, "value", name))

    def embed(
        self, texts: list[str] | tuple[str, ...], kind: str, *, normalize: bool = True
    ) -> Any:
        """Unit-norm embeddings of ``texts`` as ``kind`` (``query`` or ``document``);
        ``normalize=False``: the model's own vectors (a dot-product model's scores need them)."""
        import numpy as np

        vectors = np.asarray(self._encode([str(t) for t in texts], kind), dtype=np.float32)
        if not normalize:
            return vectors
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)


def _st_encode(model: Any, batch_size: int) -> Callable[[list[str], str], Any]:
    def encode(texts: list[str], kind: str) -> Any:
        prompts = getattr(model, "prompts", None) or {}
        kwargs: dict[str, Any] = {"prompt_name": kind} if prompts.get(kind) else {}
        return model.encode(
            texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False, **kwargs
        )

    return encode


def _mteb_encode(model: Any, batch_size: int) -> Callable[[list[str], str], Any]:
    """Encode through mteb's protocol, so a registry model applies its own prompts and
    instructions (those of a retrieval task: mteb's SciFact, whose claims and abstracts are what
    the analyses read)."""

    def encode(texts: list[str], kind: str) -> Any:
        import mteb
        from datasets import Dataset
        from mteb._create_dataloaders import create_dataloader
        from mteb.types import PromptType

        metadata = mteb.get_task("SciFact").metadata
        prompt_type = PromptType.query if kind == "query" else PromptType.document
        loader = create_dataloader(
            Dataset.from_dict({"id": [str(i) for i in range(len(texts))], "text": texts}),
            task_metadata=metadata,
            prompt_type=prompt_type,
            batch_size=batch_size,
        )
        return model.encode(
            loader,
            task_metadata=metadata,
            hf_split="test",
            hf_subset="default",
            prompt_type=prompt_type,
        )

    return encode


def load_embedder(
    name: str | os.PathLike[str],
    *,
    settings: ModelSettings | None = None,
    device: str | None = None,
    batch_size: int = 32,
) -> TextEmbedder:
    """A :class:`TextEmbedder` for a model argument, loaded by
    :func:`~hf_posbias.modeling.loaders.load_model`: ``openai:<model>`` (an embeddings endpoint,
    ``settings``' URL and key), a local folder or packaged model, a name in mteb's model registry
    (with its prompts), any other Hub id (remote code only with ``settings.trust_remote_code``).
    An unknown name suggests the closest registry names.

    Example:
        >>> load_embedder("bm25")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.ModelLoadError: bm25 ranks documents but does not embed them
    """
    text = str(name)
    settings = settings or ModelSettings()
    loaded = load_model(text, device=device, settings=settings)
    if loaded.source == "bm25":
        raise ModelLoadError("bm25 ranks documents but does not embed them")
    if loaded.source == "endpoint":
        from hf_posbias.evaluation.runs.endpoint import embedding_endpoint

        endpoint = embedding_endpoint(text, settings)
        return TextEmbedder(
            text,
            lambda texts, kind: endpoint.embed(texts),
            kind="endpoint",
            source={"base_url": settings.base_url},
        )
    meta = loaded.resolved.meta
    if meta is not None:
        model = loaded.model
        inner = getattr(model, "model", None)
        st = inner if hasattr(inner, "max_seq_length") else None
        encode = _mteb_encode(model, batch_size)
        source = {
            "revision": meta.revision,
            "registry_prompts": (meta.loader_kwargs or {}).get("model_prompts"),
        }
        return TextEmbedder(
            str(meta.name), encode, sentence_transformer=st, kind="registry", source=source
        )
    st = loaded.model
    encode = _st_encode(st, batch_size)
    return TextEmbedder(
        model_display_name(text), encode, sentence_transformer=st, source=_st_source(text)
    )


def _st_source(name: str) -> dict[str, Any]:
    """A local (or packaged) folder's content hash: retrained weights in the same folder are
    another model. A Hub id is known by its name."""
    from pathlib import Path

    from hf_posbias.modeling.resolve import model_location

    resolved = Path(model_location(name))
    if not resolved.is_dir():
        return {}
    from hf_posbias.hashing import folder_fingerprint

    return {"content": folder_fingerprint(resolved)}
