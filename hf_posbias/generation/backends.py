"""Chat backends for the LLM query generators: OpenAI-compatible HTTP and local ``transformers``.

Both implement :class:`ChatBackend` (``complete_many(batch, …)``: many conversations, in order)
and answer one conversation with ``complete(messages, …) -> ChatReply``
(:class:`BatchCompletion`). A :class:`ChatReply` is the reply text (a ``str``) that also says
how it was decoded and why it ended.

**Structured output.** Pass ``json_schema=SCHEMA`` to ask for one JSON document valid under the
schema. The local backend decodes under the schema (llguidance, :mod:`~hf_posbias.generation.
constrained`): the reply always parses unless the token budget ran out
(``finish_reason == "length"``). The OpenAI-compatible backend sends the schema as
``response_format`` (vLLM, TGI, OpenAI enforce it); a server that refuses it (HTTP 400/422 for
the schema, accepted without it) gets the same request free-form, that reply is marked
``decoding == "free_form_fallback"``, one warning is logged, and later requests go free-form
directly. Callers count the fallbacks from the replies.

Failures come back as typed errors:

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

import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from hf_posbias.errors import BackendError, InputError, first_line
from hf_posbias.settings import Settings, flag_name, shared_setting

Messages = list[dict[str, str]]

logger = logging.getLogger(__name__)

DECODINGS: tuple[str, ...] = ("json_schema", "free_form", "free_form_fallback")
"""How a reply was decoded: under its JSON schema; free-form because none was asked; free-form
because the endpoint refused the schema."""


class ChatReply(str):
    """An assistant reply: the text itself, plus how it was decoded and why it ended.

    ``decoding`` is one of :data:`DECODINGS`; ``finish_reason`` is ``"stop"`` (the model ended
    it), ``"length"`` (the token budget ran out) or ``None`` (the server did not say). Being a
    ``str``, it goes wherever reply text went before.

    Example:
        >>> reply = ChatReply('{"answer":"yes"}', decoding="json_schema", finish_reason="stop")
        >>> reply.startswith("{"), reply.decoding, reply.finish_reason
        (True, 'json_schema', 'stop')
    """

    decoding: str
    finish_reason: str | None

    def __new__(
        cls, text: str, decoding: str = "free_form", finish_reason: str | None = None
    ) -> ChatReply:
        if decoding not in DECODINGS:
            raise ValueError(f"unknown decoding {decoding!r}")
        reply = super().__new__(cls, text)
        reply.decoding = decoding
        reply.finish_reason = finish_reason
        return reply


def endpoint_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as sent in ``response_format``: without string-length keywords.

    OpenAI's strict structured outputs accept a subset of JSON Schema that excludes
    ``minLength``/``maxLength``; endpoints bound reply length with ``max_tokens`` instead.

    Example:
        >>> endpoint_schema({"type": "object", "properties": {"q": {"type": "string",
        ...                  "maxLength": 9}}})
        {'type': 'object', 'properties': {'q': {'type': 'string'}}}
    """
    if isinstance(schema, dict):
        return {
            k: endpoint_schema(v) for k, v in schema.items() if k not in ("minLength", "maxLength")
        }
    if isinstance(schema, list):
        return [endpoint_schema(v) for v in schema]
    return schema


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI ``response_format`` object for a JSON schema (strict; named by its title).

    Example:
        >>> response_format({"title": "stage 1", "type": "object"})["json_schema"]["name"]
        'stage_1'
    """
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", str(schema.get("title") or "response"))[:64]
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": endpoint_schema(schema), "strict": True},
    }


CHAT_BACKENDS: tuple[str, ...] = ("openai", "local-lm")
"""Backend names: ``openai`` = :class:`OpenAIChatBackend`, ``local-lm`` =
:class:`TransformersChatBackend` (the LLM query generators and the segment audit's judge)."""

FALLBACK_CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
"""Minimal chat template for tokenizers that ship none (role tags, then an assistant tag)."""


@dataclass(kw_only=True)
class EndpointSettings(Settings):
    """An OpenAI-compatible endpoint (query generation, the segment audit, listwise rerankers)."""

    base_url: str | None = shared_setting(
        "base_url",
        default=None,
    )
    api_key_env: str = shared_setting("api_key_env", default="OPENAI_API_KEY")


class EndpointUnreachable(BackendError):
    """The backend cannot serve any request (connection, auth, persistent 429/5xx)."""


class RequestRejected(BackendError):
    """The backend refused one request (e.g. HTTP 400): counted, the run goes on."""


@runtime_checkable
class ChatBackend(Protocol):
    """A chat-completion service: one assistant message per conversation of a batch.

    ``complete_many`` keeps the order of ``batch`` and returns a :class:`BackendError` in place
    of each request that failed; ``params()`` describes the backend for the stage manifest. (The
    built-in backends also answer one conversation with ``complete``: :class:`BatchCompletion`.)
    ``json_schema`` asks for a reply that is one JSON document valid under the schema (see the
    module docstring for what each backend guarantees).
    """

    def complete_many(
        self,
        batch: Sequence[Messages],
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seeds: Sequence[int | None] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> list[ChatReply | BackendError]: ...

    def params(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ChatRequest:
    """One conversation and how its reply is decoded: each request of ``complete`` or
    ``complete_many``, as a backend's ``_complete`` receives it (:class:`BatchCompletion`).

    Example:
        >>> ChatRequest([{"role": "user", "content": "hi"}], temperature=0.0).max_tokens
        512
    """

    messages: Messages
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = None
    json_schema: dict[str, Any] | None = None


class BatchCompletion:
    """``complete`` and ``complete_many``, the entry points every chat backend shares.

    Both take their keywords apart into one :class:`ChatRequest` per conversation; a backend
    implements :meth:`_complete` (one request → one reply), says how the requests of a batch run
    (:meth:`_run_all`: one after another by default) and which errors come back in the list
    instead of being raised (:attr:`returned_errors`).
    """

    returned_errors: tuple[type[BackendError], ...] = (BackendError,)

    def complete(
        self,
        messages: Messages,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seed: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> ChatReply:
        """The reply to ``messages`` (under ``json_schema`` if given); failures are raised."""
        return self._complete(
            ChatRequest(messages, temperature, top_p, max_tokens, seed, json_schema)
        )

    def complete_many(
        self,
        batch: Sequence[Messages],
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seeds: Sequence[int | None] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> list[ChatReply | BackendError]:
        """Completions of ``batch``, in order; failures returned as errors."""
        seeds = list(seeds) if seeds is not None else [None] * len(batch)
        if len(seeds) != len(batch):
            raise ValueError(f"{len(seeds)} seeds for {len(batch)} requests")
        requests = [
            ChatRequest(messages, temperature, top_p, max_tokens, seed, json_schema)
            for messages, seed in zip(batch, seeds)
        ]

        def one(index: int) -> ChatReply | BackendError:
            try:
                return self._complete(requests[index])
            except self.returned_errors as err:
                return err

        return self._run_all(one, len(batch))

    def _complete(self, request: ChatRequest) -> ChatReply:
        """One request → one reply: what each backend implements."""
        raise NotImplementedError

    def _run_all(
        self, one: Callable[[int], ChatReply | BackendError], n: int
    ) -> list[ChatReply | BackendError]:
        """One request after another (one local model)."""
        return [one(index) for index in range(n)]


class OpenAIEndpoint:
    """The client side every OpenAI-compatible endpoint shares: key, retries, concurrency.

    The API key is read from the environment variable ``api_key_env``; local servers usually
    accept any key, so a missing key is only an error for the default OpenAI URL. Connection
    errors, timeouts, HTTP 408/409/429 and 5xx are retried ``max_retries`` times with
    exponential backoff (:meth:`call`); :class:`OpenAIChatBackend` and the embeddings encoder
    (:class:`hf_posbias.evaluation.runs.endpoint.EndpointEncoder`) build on it.
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
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The endpoint's base URL, for messages."""
        return self.base_url or "https://api.openai.com/v1"

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            key = os.environ.get(self.api_key_env)
            if not key:
                if self.base_url is None:
                    raise EndpointUnreachable(
                        f"no API key: set the environment variable {self.api_key_env} "
                        f"(or give {flag_name('base_url')} for a local server)"
                    )
                key = "EMPTY"  # vLLM / TGI / transformers serve accept any key
            self._client = openai.OpenAI(
                api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
        return self._client

    def call(self, request: Callable[[Any], Any]) -> Any:
        """``request(client)`` with this endpoint's retry policy; typed errors on failure."""
        import openai

        client = self._get_client()
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return request(client)
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


class OpenAIChatBackend(BatchCompletion, OpenAIEndpoint):
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

    def __init__(self, model: str, base_url: str | None = None, **options: Any) -> None:
        super().__init__(model, base_url, **options)
        self._schema_refused: str | None = None

    def params(self) -> dict[str, Any]:
        """What identifies this backend's outputs (model and endpoint; not the key)."""
        return {"backend": "openai", "model": self.model, "base_url": self.base_url}

    @property
    def schema_refused(self) -> str | None:
        """Why the endpoint refused ``response_format`` (``None`` while it has not)."""
        return self._schema_refused

    def _complete(self, request: ChatRequest) -> ChatReply:
        """One chat completion; raises :class:`EndpointUnreachable` / :class:`RequestRejected`.

        With ``json_schema`` the request carries ``response_format``; if the endpoint rejects
        that request but answers the same one without it, the schema is taken as unsupported:
        the free-form reply is returned (``decoding="free_form_fallback"``), a warning is logged
        once, and later requests skip ``response_format``.
        """
        messages, json_schema = request.messages, request.json_schema
        sampling: dict[str, Any] = {
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            sampling["seed"] = int(request.seed)
        if json_schema is None:
            return self._request(messages, sampling, "free_form")
        if self._schema_refused is None:
            try:
                return self._request(
                    messages,
                    {**sampling, "response_format": response_format(json_schema)},
                    "json_schema",
                )
            except RequestRejected as refusal:
                # The retry tells a refused schema from a request that is bad anyway (a prompt
                # over the context); in the second case the retry raises that rejection.
                reply = self._request(messages, sampling, "free_form_fallback")
                self._note_refusal(refusal)
                return reply
        return self._request(messages, sampling, "free_form_fallback")

    def _note_refusal(self, refusal: RequestRejected) -> None:
        with self._lock:
            if self._schema_refused is not None:
                return
            self._schema_refused = str(refusal)
        logger.warning(
            "warning: %s refused response_format (%s); requests are sent free-form from now "
            "on and counted as decoding=free_form_fallback",
            self.url,
            refusal,
        )

    def _request(self, messages: Messages, options: dict[str, Any], decoding: str) -> ChatReply:
        response = self.call(
            lambda client: client.chat.completions.create(
                model=self.model, messages=messages, **options
            )
        )
        choice = response.choices[0]
        return ChatReply(
            choice.message.content or "",
            decoding=decoding,
            finish_reason=getattr(choice, "finish_reason", None),
        )

    def _run_all(
        self, one: Callable[[int], ChatReply | BackendError], n: int
    ) -> list[ChatReply | BackendError]:
        """On a thread pool (an endpoint serves requests concurrently), in order."""
        self._get_client()  # fail once, up front, on a missing key
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(one, range(n)))


class TransformersChatBackend(BatchCompletion):
    """A local causal LM through ``transformers``, prompted with the tokenizer's chat template.

    A tokenizer without a chat template gets :data:`FALLBACK_CHAT_TEMPLATE` and a logged
    warning (a base model rarely follows such a prompt). Sampling uses the given
    ``temperature``/``top_p`` (``temperature=0`` = greedy) with the torch RNG seeded per request
    inside a forked RNG state, so results do not depend on request order. A prompt that does not
    fit the model's context is a :class:`RequestRejected` (counted, not truncated: truncation
    would silently cut the target segment out). The model loads on first use, or explicitly with
    :meth:`load`. ``model_path_or_id`` is a folder, a Hub id, a packaged name (``smollm2-135m``)
    or a ``.gguf`` file (dequantised once into the hf-posbias cache).

    With ``json_schema`` the reply is decoded under the schema
    (:class:`~hf_posbias.generation.constrained.JsonSchemaLogitsProcessor`, applied before
    temperature and top-p): it is one schema-valid JSON document unless the token budget ran
    out first (``finish_reason == "length"``).

    Example:
        >>> backend = TransformersChatBackend("/nonexistent/model")
        >>> backend.load()
        Traceback (most recent call last):
        ...
        hf_posbias.errors.ModelLoadError: cannot load causal LM '/nonexistent/model': ...
    """

    # A local model only rejects prompts too long for its context; anything else is a bug.
    returned_errors = (RequestRejected,)

    def __init__(
        self,
        model_path_or_id: str,
        gguf_file: str | None = None,
        device: str | None = None,
        max_new_tokens: int = 512,
        dtype: str | None = None,
    ) -> None:
        path = Path(model_path_or_id)
        if gguf_file is None and path.suffix == ".gguf" and path.is_file():
            # A path to a GGUF file names its folder and the file.
            model_path_or_id, gguf_file = str(path.parent), path.name
        self.model_name = model_path_or_id
        self.gguf_file = gguf_file
        self.device = device
        self.max_new_tokens = int(max_new_tokens)
        self.dtype = dtype
        self._model: Any = None
        self._tokenizer: Any = None
        self._grammar_tokenizer: Any = None
        self._grammars: dict[str, str] = {}

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
        from hf_posbias.modeling.causal_lm import load_causal_lm

        model, tokenizer = load_causal_lm(
            self.model_name, gguf_file=self.gguf_file, dtype=self.dtype, device=self.device
        )
        if not getattr(tokenizer, "chat_template", None):
            logger.warning(
                "warning: %s has no chat template; prompting it with a minimal role-tag "
                "template (a base model rarely follows it: prefer an instruct model)",
                self.model_name,
            )
            tokenizer.chat_template = FALLBACK_CHAT_TEMPLATE
        device = str(model.device)
        self._model = model
        self._tokenizer = tokenizer
        self.device = device

    def _context_size(self) -> int | None:
        from hf_posbias.modeling.causal_lm import context_length

        return context_length(self._model)

    def _eos_token_ids(self) -> list[int]:
        eos = self._model.generation_config.eos_token_id
        if eos is None:
            eos = self._tokenizer.eos_token_id
        return [] if eos is None else [int(e) for e in (eos if isinstance(eos, list) else [eos])]

    def _constraint(self, json_schema: dict[str, Any], prompt_length: int) -> Any:
        """A fresh logits processor for ``json_schema`` (grammar and tokenizer cached)."""
        from hf_posbias.generation.constrained import (
            JsonSchemaLogitsProcessor,
            compile_json_schema,
            grammar_tokenizer,
            schema_key,
        )

        key = schema_key(json_schema)
        if key not in self._grammars:
            self._grammars[key] = compile_json_schema(json_schema)
        if self._grammar_tokenizer is None:
            vocab = int(self._model.get_output_embeddings().weight.shape[0])
            self._grammar_tokenizer = grammar_tokenizer(
                self._tokenizer, vocab, self._eos_token_ids() or None, self.model_name
            )
        return JsonSchemaLogitsProcessor(
            self._grammar_tokenizer, self._grammars[key], prompt_length
        )

    def _complete(self, request: ChatRequest) -> ChatReply:
        """Generate the assistant reply to the request's messages (under its schema if any)."""
        import torch
        from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

        temperature, top_p, json_schema = request.temperature, request.top_p, request.json_schema
        self.load()
        tok, model = self._tokenizer, self._model
        prompt = tok.apply_chat_template(
            request.messages, tokenize=False, add_generation_prompt=True
        )
        inputs = tok(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        n_prompt = int(inputs["input_ids"].shape[1])
        new_tokens = min(int(request.max_tokens), self.max_new_tokens)
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
        if json_schema is not None:
            # The schema mask must come before temperature and top-p (generate applies its own
            # warpers first): a nucleus holding only disallowed tokens would leave nothing.
            processors = [self._constraint(json_schema, n_prompt)]
            if sample:
                if temperature != 1.0:
                    processors.append(TemperatureLogitsWarper(float(temperature)))
                if top_p < 1.0:
                    processors.append(TopPLogitsWarper(float(top_p)))
                options.update(temperature=1.0, top_p=1.0)
            options["logits_processor"] = LogitsProcessorList(processors)
        devices = (
            [torch.device(self.device).index or 0] if str(self.device).startswith("cuda") else []
        )
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            if request.seed is not None:
                torch.manual_seed(int(request.seed))
            output = model.generate(**inputs, pad_token_id=tok.pad_token_id, **options)
        generated = output[0, n_prompt:].tolist()
        ended = bool(generated) and generated[-1] in self._eos_token_ids()
        finish = "length" if len(generated) >= new_tokens and not ended else "stop"
        return ChatReply(
            tok.decode(generated, skip_special_tokens=True),
            decoding="free_form" if json_schema is None else "json_schema",
            finish_reason=finish,
        )


def make_chat_backend(name: str, model: str, **options: Any) -> ChatBackend:
    """The chat backend called ``name`` (one of :data:`CHAT_BACKENDS`) for ``model``; ``options``
    go to its constructor. Nothing loads here.

    Example:
        >>> make_chat_backend("openai", "gpt-4o-mini").params()["model"]
        'gpt-4o-mini'
        >>> make_chat_backend("vllm", "m")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: unknown chat backend 'vllm'; choose from openai, local-lm
    """
    if name == "openai":
        return OpenAIChatBackend(model, **options)
    if name == "local-lm":
        return TransformersChatBackend(model, **options)
    raise InputError(f"unknown chat backend {name!r}; choose from {', '.join(CHAT_BACKENDS)}")


def reply_decoding(reply: str) -> str:
    """How a reply was decoded (one of :data:`DECODINGS`); a plain string, from a backend outside
    this package, was not constrained.

    Example:
        >>> reply_decoding(ChatReply("{}", decoding="json_schema")), reply_decoding("yes")
        ('json_schema', 'free_form')
    """
    return getattr(reply, "decoding", "free_form")


def complete_all(
    backend: ChatBackend,
    requests: Sequence[Messages],
    seeds: Sequence[int | None],
    *,
    chunk: int,
    desc: str,
    unit: str = "request",
    progress: bool = True,
    **sampling: Any,
) -> list[ChatReply | BackendError]:
    """Every request through ``backend.complete_many`` in chunks of ``chunk``, in order, with a
    progress report; one reply (or the :class:`BackendError` of a refused request) each.
    ``sampling`` (temperature, top_p, max_tokens, json_schema) goes to every call.
    """
    from hf_posbias.progress import progress as progress_bar

    if len(seeds) != len(requests):
        raise ValueError(f"{len(seeds)} seeds for {len(requests)} requests")
    replies: list[ChatReply | BackendError] = []
    with progress_bar(
        total=len(requests), desc=desc, unit=unit, disable=not progress or not requests
    ) as bar:
        for start in range(0, len(requests), chunk):
            batch = list(requests[start : start + chunk])
            out = backend.complete_many(batch, seeds=list(seeds[start : start + chunk]), **sampling)
            if len(out) != len(batch):
                raise RuntimeError(f"backend returned {len(out)} replies for {len(batch)} requests")
            replies.extend(out)
            bar.update(len(batch))
    return replies
