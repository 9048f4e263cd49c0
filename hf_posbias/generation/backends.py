"""Chat backends for the LLM query generators: OpenAI-compatible HTTP and local ``transformers``.

Both implement :class:`ChatBackend`: ``complete(messages, …) -> str`` for one conversation and
``complete_many(batch, …)`` for many, in order. Failures come back as typed errors:

- :class:`EndpointUnreachable` — the service cannot be used at all (connection refused, retries
  exhausted on 429/5xx, bad API key). Generators abort the stage on it; finished shards stay and a
  rerun resumes.
- :class:`RequestRejected` — this one request was refused (HTTP 400 such as a prompt longer
  than the context window). Generators count it as a skipped position/excluded document.

Example:
    >>> from hf_posbias.generation.backends import OpenAIChatBackend
    >>> backend = OpenAIChatBackend("gpt-4o-mini", base_url="http://127.0.0.1:9/v1",
    ...                             max_retries=0)
    >>> backend.params()["model"], backend.params()["base_url"]
    ('gpt-4o-mini', 'http://127.0.0.1:9/v1')
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from hf_posbias.errors import BackendError, first_line

Messages = list[dict[str, str]]

FALLBACK_CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
"""Minimal chat template for tokenizers that ship none (role tags, then an assistant tag)."""


class EndpointUnreachable(BackendError):
    """The backend cannot serve any request (connection, auth, persistent 429/5xx)."""


class RequestRejected(BackendError):
    """The backend refused one request (e.g. HTTP 400): counted, the run goes on."""


@runtime_checkable
class ChatBackend(Protocol):
    """A chat-completion service: one conversation → one assistant message.

    ``complete_many`` keeps the order of ``batch`` and returns a :class:`BackendError` in place
    of each request that failed; ``params()`` describes the backend for the stage manifest.
    """

    def complete(
        self,
        messages: Messages,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seed: int | None = None,
    ) -> str: ...

    def complete_many(
        self,
        batch: Sequence[Messages],
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seeds: Sequence[int | None] | None = None,
    ) -> list[str | BackendError]: ...

    def params(self) -> dict[str, Any]: ...


class OpenAIChatBackend:
    """Any OpenAI-compatible chat endpoint through the official ``openai`` client.

    Works with the OpenAI API and with local servers that speak the same protocol (vLLM,
    TGI, ``transformers serve``, llama.cpp): pass their ``base_url`` (``http://host:port/v1``).
    The API key is read from the environment variable ``api_key_env``; local servers usually
    accept any key, so a missing key is only an error for the default OpenAI URL.

    Connection errors, timeouts, HTTP 408/409/429 and 5xx are retried ``max_retries`` times
    with exponential backoff (``backoff`` seconds, doubled each time, with jitter); the client's
    own retries are disabled so that this is the only retry policy. Requests run concurrently
    on ``max_concurrency`` threads.

    Example:
        >>> OpenAIChatBackend("m", base_url="http://127.0.0.1:9/v1", max_retries=0,
        ...                   backoff=0).complete([{"role": "user", "content": "hi"}])
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.generation.backends.EndpointUnreachable: cannot reach ... endpoint http...
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        max_retries: int = 5,
        timeout: float = 60,
        backoff: float = 1.0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.max_concurrency = max(1, int(max_concurrency))
        self.max_retries = max(0, int(max_retries))
        self.timeout = float(timeout)
        self.backoff = float(backoff)
        self._client: Any = None

    @property
    def url(self) -> str:
        """The endpoint's base URL, for messages."""
        return self.base_url or "https://api.openai.com/v1"

    def params(self) -> dict[str, Any]:
        """What identifies this backend's outputs (model and endpoint; not the key)."""
        return {"backend": "openai", "model": self.model, "base_url": self.base_url}

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            key = os.environ.get(self.api_key_env)
            if not key:
                if self.base_url is None:
                    raise EndpointUnreachable(
                        f"no API key: set the environment variable {self.api_key_env} "
                        f"(or give --base-url for a local server)"
                    )
                key = "EMPTY"  # vLLM / TGI / transformers serve accept any key
            self._client = openai.OpenAI(
                api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
        return self._client

    def complete(
        self,
        messages: Messages,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seed: int | None = None,
    ) -> str:
        """One chat completion; raises :class:`EndpointUnreachable` / :class:`RequestRejected`."""
        import openai

        client = self._get_client()
        extra: dict[str, Any] = {} if seed is None else {"seed": int(seed)}
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                response = client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    temperature=temperature,
                    top_p=top_p,
                    max_tokens=max_tokens,
                    **extra,
                )
                return response.choices[0].message.content or ""
            except (openai.APIConnectionError, openai.APIStatusError) as err:
                status = getattr(err, "status_code", None)
                retryable = status is None or status in (408, 409, 429) or status >= 500
                if status in (401, 403):
                    raise EndpointUnreachable(
                        f"endpoint {self.url} refused the API key from ${self.api_key_env} "
                        f"(HTTP {status})"
                    ) from None
                if not retryable:
                    raise RequestRejected(
                        f"endpoint {self.url} rejected the request (HTTP {status}): "
                        f"{first_line(err)}"
                    ) from None
                if attempt + 1 == attempts:
                    raise EndpointUnreachable(
                        f"cannot reach OpenAI-compatible endpoint {self.url} after {attempts} "
                        f"attempt(s): {type(err).__name__}: {first_line(err)}"
                    ) from None
                # Exponential backoff with jitter so concurrent threads do not retry in lockstep.
                time.sleep(self.backoff * (2**attempt) * (0.5 + random.random() / 2))
        raise AssertionError("unreachable")  # the loop always returns or raises

    def complete_many(
        self,
        batch: Sequence[Messages],
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seeds: Sequence[int | None] | None = None,
    ) -> list[str | BackendError]:
        """Many completions on a thread pool, in order; failures returned as errors."""
        seeds = list(seeds) if seeds is not None else [None] * len(batch)
        self._get_client()  # fail once, up front, on a missing key

        def one(index: int) -> str | BackendError:
            try:
                return self.complete(
                    batch[index],
                    temperature=temperature,
                    top_p=top_p,
                    max_tokens=max_tokens,
                    seed=seeds[index],
                )
            except BackendError as err:
                return err

        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(one, range(len(batch))))


class TransformersChatBackend:
    """A local causal LM through ``transformers``, prompted with the tokenizer's chat template.

    Tokenizers without a chat template get :data:`FALLBACK_CHAT_TEMPLATE`. Sampling uses the
    given ``temperature``/``top_p`` (``temperature=0`` = greedy) with the torch RNG seeded per
    request inside a forked RNG state, so results do not depend on request order. A prompt that
    does not fit the model's context is a :class:`RequestRejected` (counted, not truncated:
    truncation would silently cut the target segment out). The model loads on first use, or
    explicitly with :meth:`load`.

    Example:
        >>> backend = TransformersChatBackend("/nonexistent/model")
        >>> backend.load()
        Traceback (most recent call last):
        ...
        hf_posbias.errors.ModelLoadError: cannot load causal LM '/nonexistent/model': ...
    """

    def __init__(
        self,
        model_path_or_id: str,
        gguf_file: str | None = None,
        device: str | None = None,
        max_new_tokens: int = 512,
        dtype: str | None = None,
    ) -> None:
        self.model_name = model_path_or_id
        self.gguf_file = gguf_file
        self.device = device
        self.max_new_tokens = int(max_new_tokens)
        self.dtype = dtype
        self._model: Any = None
        self._tokenizer: Any = None

    def params(self) -> dict[str, Any]:
        """What identifies this backend's outputs."""
        return {
            "backend": "transformers",
            "model": self.model_name,
            "gguf_file": self.gguf_file,
            "max_new_tokens": self.max_new_tokens,
            "dtype": self.dtype,
        }

    def load(self) -> None:
        """Load tokenizer and model (idempotent); failures → one-line ModelLoadError."""
        if self._model is not None:
            return
        from hf_posbias.modeling import load_causal_lm

        model, tokenizer = load_causal_lm(
            self.model_name, gguf_file=self.gguf_file, dtype=self.dtype, device=self.device
        )
        if not getattr(tokenizer, "chat_template", None):
            tokenizer.chat_template = FALLBACK_CHAT_TEMPLATE
        device = str(model.device)
        self._model = model
        self._tokenizer = tokenizer
        self.device = device

    def _context_size(self) -> int | None:
        config = self._model.config
        for attr in ("max_position_embeddings", "n_positions", "seq_length"):
            value = getattr(config, attr, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    def complete(
        self,
        messages: Messages,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seed: int | None = None,
    ) -> str:
        """Generate the assistant reply to ``messages``."""
        import torch

        self.load()
        tok, model = self._tokenizer, self._model
        prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs = tok(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        n_prompt = int(inputs["input_ids"].shape[1])
        new_tokens = min(int(max_tokens), self.max_new_tokens)
        context = self._context_size()
        if context is not None and n_prompt + new_tokens > context:
            raise RequestRejected(
                f"prompt of {n_prompt} tokens + {new_tokens} new tokens exceeds the context "
                f"of {self.model_name!r} ({context})"
            )
        sample = temperature > 0
        options: dict[str, Any] = {"do_sample": sample, "max_new_tokens": new_tokens}
        if sample:
            options.update(temperature=float(temperature), top_p=float(top_p), top_k=0)
        devices = (
            [torch.device(self.device).index or 0] if str(self.device).startswith("cuda") else []
        )
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            if seed is not None:
                torch.manual_seed(int(seed))
            output = model.generate(**inputs, pad_token_id=tok.pad_token_id, **options)
        return tok.decode(output[0, n_prompt:], skip_special_tokens=True)

    def complete_many(
        self,
        batch: Sequence[Messages],
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seeds: Sequence[int | None] | None = None,
    ) -> list[str | BackendError]:
        """Completions one after another (one local model), in order."""
        seeds = list(seeds) if seeds is not None else [None] * len(batch)
        results: list[str | BackendError] = []
        for messages, seed in zip(batch, seeds, strict=True):
            try:
                results.append(
                    self.complete(
                        messages,
                        temperature=temperature,
                        top_p=top_p,
                        max_tokens=max_tokens,
                        seed=seed,
                    )
                )
            except RequestRejected as err:
                results.append(err)
        return results
