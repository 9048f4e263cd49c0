"""``openai:<model>``: any OpenAI-compatible ``/v1/embeddings`` endpoint as an mteb encoder.

The client side (API key from an environment variable, retries with backoff, a concurrency
limit) is the generation backend's :class:`~hf_posbias.generation.backends.OpenAIEndpoint`.
Texts go out in batches of ``batch_size`` on ``max_concurrency`` threads; every answer is
checked — one vector per input, all of one size, all finite — and a wrong one stops the run in
one line (:class:`~hf_posbias.errors.BackendError`) instead of scoring garbage. Scores are
cosine similarities, as for the sentence-transformers models most endpoints serve. What
``openai:<model>`` means is the resolver's
(:func:`~hf_posbias.modeling.resolve.parse_endpoint_model`).

Example:
    >>> from hf_posbias.modeling.resolve import ModelSettings
    >>> endpoint = embedding_endpoint("openai:text-embedding-3-small", ModelSettings())
    >>> endpoint.model, endpoint.batch_size
    ('text-embedding-3-small', 64)
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hf_posbias.errors import BackendError
from hf_posbias.generation.backends import OpenAIEndpoint
from hf_posbias.modeling.resolve import parse_endpoint_model


def embedding_endpoint(spec: str, settings: Any) -> EmbeddingEndpoint:
    """The :class:`EmbeddingEndpoint` of ``openai:<model>`` with a
    :class:`~hf_posbias.modeling.resolve.ModelSettings`' URL, key, batching, concurrency and
    retries."""
    from hf_posbias.errors import ModelLoadError

    model = parse_endpoint_model(spec)
    if model is None:
        raise ModelLoadError(f"{spec!r}: give the endpoint's model as openai:<model>")
    return EmbeddingEndpoint(
        model,
        settings.base_url,
        batch_size=settings.endpoint_batch_size,
        api_key_env=settings.api_key_env,
        max_concurrency=settings.max_concurrency,
        max_retries=settings.max_retries,
    )


class EmbeddingEndpoint(OpenAIEndpoint):
    """Batched, concurrent, checked calls to ``/v1/embeddings``."""

    def __init__(self, model: str, base_url: str | None = None, *, batch_size: int = 64, **kw: Any):
        super().__init__(model, base_url, **kw)
        self.batch_size = max(1, int(batch_size))
        self.dimension: int | None = None

    def _one_batch(self, texts: list[str]) -> np.ndarray:
        response = self.call(lambda client: client.embeddings.create(model=self.model, input=texts))
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise BackendError(
                f"endpoint {self.url} returned {len(data)} vectors for {len(texts)} texts"
            )
        sizes = {len(item.embedding) for item in data}
        with self._lock:
            expected = self.dimension if self.dimension is not None else next(iter(sizes))
            if sizes != {expected}:
                raise BackendError(
                    f"endpoint {self.url} returned vectors of size "
                    f"{', '.join(map(str, sorted(sizes - {expected}) or sizes))}, "
                    f"expected {expected}"
                )
            self.dimension = expected
        vectors = np.asarray([item.embedding for item in data], dtype=np.float32)
        bad = int((~np.isfinite(vectors)).any(axis=1).sum())
        if bad:
            raise BackendError(f"endpoint {self.url} returned {bad} vector(s) with NaN or inf")
        return vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        chunks = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return np.concatenate(list(pool.map(self._one_batch, chunks)))


class EndpointEncoder:
    """An mteb encoder backed by :class:`EmbeddingEndpoint` (cosine similarity)."""

    def __init__(self, endpoint: EmbeddingEndpoint, meta: Any) -> None:
        self.endpoint = endpoint
        self.mteb_model_meta = meta

    def encode(self, inputs: Any, **kwargs: Any) -> np.ndarray:
        """Embed every text of mteb's data loader (the same texts a local model receives)."""
        texts = [text for batch in inputs for text in batch["text"]]
        return self.endpoint.embed(texts)

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Cosine similarity matrix."""
        from sentence_transformers.util import cos_sim

        return cos_sim(np.asarray(embeddings1), np.asarray(embeddings2))

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Row-wise cosine similarity."""
        from sentence_transformers.util import pairwise_cos_sim

        return pairwise_cos_sim(np.asarray(embeddings1), np.asarray(embeddings2))
