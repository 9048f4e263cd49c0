"""YHP26's two-stage persona prompt for position-controlled queries.

Stage 1, once per document: the LLM sees the document and the 20 personas most similar to it
and picks a configuration — a persona, a difficulty (``high_school`` | ``university`` | ``phd``)
and a query length (``short`` < 10 words | ``medium`` 10–20 | ``long`` > 20) — as JSON. A document
whose configuration does not parse (or is invalid) is **excluded and counted**.

Stage 2, once per (document, position), reusing the same configuration for all three positions:
given the full document and the target segment marked with its position, the LLM returns JSON
``{query, answer, reasoning}`` for a query answerable only from that segment. A reply that does
not parse skips that position and is counted. Sampling defaults to temperature 1.0, top_p 1.0.

By default both stages ask for their JSON schema (:func:`stage1_schema`, :data:`STAGE2_SCHEMA`):
a local LM decodes under it (:mod:`~hf_posbias.generation.constrained`), an endpoint receives it
as ``response_format``. ``constrained=False`` (``--no-constrained``) decodes free-form, as the
paper did. Failure reasons: ``stage{1,2}_parse_error`` (no JSON object), ``stage1_invalid_config``
/ ``stage2_invalid_output`` (JSON with unusable fields), ``stage{1,2}_truncated`` (no usable JSON
before the token budget ran out), ``stage{1,2}_backend_rejected`` (the request was refused).

The positive is the unchanged document; ``segments`` are its original begin/middle/end texts.

Example:
    >>> from hf_posbias.generation.llm import extract_json_object
    >>> extract_json_object('Sure! ```json\\n{"query": "Who?", "answer": "Ann"}\\n``` Done.')
    {'query': 'Who?', 'answer': 'Ann'}
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hf_posbias.corpus.documents import Document
from hf_posbias.errors import BackendError, InputError
from hf_posbias.generation.backends import (
    ChatBackend,
    ChatReply,
    Messages,
    RequestRejected,
    complete_all,
    make_chat_backend,
    reply_decoding,
)
from hf_posbias.generation.base import (
    GenerationFailure,
    GenerationResult,
    make_candidate,
    reject_unknown_options,
    stable_seed,
)
from hf_posbias.generation.constrained import compile_json_schema, schema_key
from hf_posbias.generation.personas import DEFAULT_PERSONA_MODEL, PersonaPool
from hf_posbias.positions import POSITIONS

logger = logging.getLogger(__name__)

DIFFICULTIES: tuple[str, ...] = ("high_school", "university", "phd")
QUERY_LENGTHS: dict[str, str] = {
    "short": "fewer than 10 words",
    "medium": "10 to 20 words",
    "long": "more than 20 words",
}

STAGE1_SYSTEM = "You design realistic search queries. You answer with one JSON object only."
"""System message of both stages."""

STAGE1_PROMPT = """Read the document below and choose a configuration for search queries about it.

Title: {title}
<document>
{document}
</document>

Candidate personas (people who might search for information in this document):
{personas}

Choose:
- "persona": the number of the persona above who would most plausibly search for this document;
- "difficulty": one of "high_school", "university", "phd";
- "query_length": one of "short" (fewer than 10 words), "medium" (10 to 20 words), \
"long" (more than 20 words).

Answer with a single JSON object and nothing else, for example:
{{"persona": 3, "difficulty": "university", "query_length": "medium"}}"""
"""Stage 1 (once per document): pick persona (by number), difficulty and query length.

Placeholders: ``title``, ``document``, ``personas`` (a numbered list, ``1. …``)."""

STAGE2_PROMPT = """You are {persona}.
Write one search query you would type into a search engine, at {difficulty} level of \
expertise, {length} long.

The query must be answerable ONLY from the TARGET SEGMENT, which is the {position} third of \
the document, and not from the other parts of the document. Do not copy a sentence verbatim.

Full document (title: {title}):
<document>
{document}
</document>

TARGET SEGMENT (the {position} of the document):
<target_segment position="{position}">
{segment}
</target_segment>

Answer with a single JSON object and nothing else:
{{"query": "<the query>", "answer": "<its answer, from the target segment>", \
"reasoning": "<why only the target segment answers it>"}}"""
"""Stage 2 (once per document × position), same persona/difficulty/length for all positions.

Placeholders: ``persona``, ``difficulty`` (e.g. ``university``), ``length`` (e.g. ``10 to 20
words``), ``position``, ``title``, ``document``, ``segment``."""

PROMPTS_FINGERPRINT = hashlib.sha256(
    "\x1f".join([STAGE1_SYSTEM, STAGE1_PROMPT, STAGE2_PROMPT]).encode()
).hexdigest()[:16]

QUERY_MAX_CHARS = 200
"""Longest query Stage 2 may write under constraints (a "long" query is > 20 words)."""
QUERY_PATTERN = r"^\S(.*\S)?$"
"""A Stage-2 query under constraints: one line, not blank, no surrounding whitespace."""
ANSWER_MAX_CHARS = 150
REASONING_MAX_CHARS = 150
# The three caps bound a constrained Stage-2 reply to ~500 characters, which fits the default
# 512-token budget even at one character per token (a tiny or confused model's worst case).


def stage1_schema(n_personas: int) -> dict[str, Any]:
    """The JSON schema of a Stage-1 reply when ``n_personas`` personas are offered.

    Example:
        >>> stage1_schema(3)["properties"]["persona"]
        {'type': 'integer', 'enum': [1, 2, 3]}
    """
    return {
        "title": "stage1_configuration",
        "type": "object",
        "properties": {
            "persona": {"type": "integer", "enum": list(range(1, int(n_personas) + 1))},
            "difficulty": {"type": "string", "enum": list(DIFFICULTIES)},
            "query_length": {"type": "string", "enum": list(QUERY_LENGTHS)},
        },
        "required": ["persona", "difficulty", "query_length"],
        "additionalProperties": False,
    }


STAGE2_SCHEMA: dict[str, Any] = {
    "title": "stage2_query",
    "type": "object",
    "properties": {
        # Not blank, no leading/trailing whitespace, one line. Anchored on purpose: JSON Schema
        # patterns search, but some engines (xgrammar, so vLLM) full-match them; this one means
        # the same under both readings.
        "query": {"type": "string", "pattern": QUERY_PATTERN, "maxLength": QUERY_MAX_CHARS},
        "answer": {"type": "string", "maxLength": ANSWER_MAX_CHARS},
        "reasoning": {"type": "string", "maxLength": REASONING_MAX_CHARS},
    },
    "required": ["query", "answer", "reasoning"],
    "additionalProperties": False,
}
"""The JSON schema of a Stage-2 reply (``{query, answer, reasoning}``)."""

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in an LLM reply (code fences and surrounding prose tolerated).

    Raises ``ValueError`` when the reply holds no JSON object.

    Example:
        >>> extract_json_object('The config is {"persona": 2} as asked.')
        {'persona': 2}
        >>> extract_json_object("no json here")
        Traceback (most recent call last):
        ...
        ValueError: no JSON object in reply
    """
    decoder = json.JSONDecoder()
    chunks = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in chunks:
        for match in re.finditer(r"\{", chunk):
            try:
                value, _ = decoder.raw_decode(chunk, match.start())
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise ValueError("no JSON object in reply")


@dataclass(frozen=True)
class QueryConfig:
    """The Stage-1 choice reused for all three positions of a document."""

    persona: str
    difficulty: str
    query_length: str


def parse_stage1(reply: str, personas: Sequence[str]) -> QueryConfig:
    """Validate a Stage-1 reply; raises :class:`GenerationFailure` (reason code) when unusable.

    ``persona`` may be the number from the list (int or digit string) or the exact persona text.
    Difficulty and length are normalised (``"High School"`` → ``high_school``, ``"PhD"`` → ``phd``).

    Example:
        >>> parse_stage1('{"persona": "2", "difficulty": "PhD", "query_length": "Short"}',
        ...              ["a cook", "a pilot"])
        QueryConfig(persona='a pilot', difficulty='phd', query_length='short')
    """
    try:
        data = extract_json_object(reply)
    except ValueError as err:
        raise GenerationFailure("stage1_parse_error", str(err)) from None
    choice = data.get("persona")
    persona: str | None = None
    if isinstance(choice, bool):
        persona = None
    elif isinstance(choice, int) or (isinstance(choice, str) and choice.strip().isdigit()):
        number = int(choice)
        persona = personas[number - 1] if 1 <= number <= len(personas) else None
    elif isinstance(choice, str):
        wanted = " ".join(choice.split()).lower()
        persona = next((p for p in personas if p.lower() == wanted), None)
    if persona is None:
        raise GenerationFailure("stage1_invalid_config", f"persona {choice!r} not in the list")
    difficulty = _norm(data.get("difficulty")).replace("ph.d.", "phd").replace("ph.d", "phd")
    if difficulty not in DIFFICULTIES:
        raise GenerationFailure("stage1_invalid_config", f"difficulty {data.get('difficulty')!r}")
    length = _norm(data.get("query_length"))
    if length not in QUERY_LENGTHS:
        raise GenerationFailure(
            "stage1_invalid_config", f"query_length {data.get('query_length')!r}"
        )
    return QueryConfig(persona, difficulty, length)


def _norm(value: Any) -> str:
    return re.sub(r"[\s-]+", "_", str(value).strip().lower()) if isinstance(value, str) else ""


def parse_stage2(reply: str) -> dict[str, str]:
    """Validate a Stage-2 reply: ``query`` non-empty; ``answer``/``reasoning`` strings if given.

    Raises ``ValueError`` with a reason code (``stage2_parse_error`` | ``stage2_invalid_output``).

    Example:
        >>> parse_stage2('{"query": " Who wrote it? ", "answer": "Ann", "reasoning": "r"}')
        {'query': 'Who wrote it?', 'answer': 'Ann', 'reasoning': 'r'}
    """
    try:
        data = extract_json_object(reply)
    except ValueError:
        raise ValueError("stage2_parse_error") from None
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ValueError("stage2_invalid_output")
    out = {"query": " ".join(query.split())}
    for key in ("answer", "reasoning"):
        value = data.get(key, "")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValueError("stage2_invalid_output")
        out[key] = str(value).strip()
    return out


def _messages(prompt: str) -> Messages:
    return [{"role": "system", "content": STAGE1_SYSTEM}, {"role": "user", "content": prompt}]


def _seed31(*parts: object) -> int:
    # Many servers take a signed 32-bit seed.
    return stable_seed(*parts) % (2**31)


class PersonaQueryGenerator:
    """YHP26's two-stage persona generator over any :class:`ChatBackend`.

    Args:
        backend: an :class:`~hf_posbias.generation.backends.OpenAIChatBackend` or
            :class:`~hf_posbias.generation.backends.TransformersChatBackend` (or any backend).
        personas: the persona pool (top-``top_k`` similar personas offered in Stage 1).
        top_k: personas offered per document (20 in YHP26).
        temperature, top_p: sampling (1.0, 1.0 in YHP26).
        max_tokens: reply budget per request.
        seed: base seed; each request gets a seed derived from (seed, doc, stage, position),
            honoured by backends that support seeds (vLLM, TGI, local transformers).
        constrained: ask for each stage's JSON schema (:func:`stage1_schema`,
            :data:`STAGE2_SCHEMA`): decoded under it by the local backend, sent as
            ``response_format`` to endpoints. ``False`` decodes free-form, as YHP26 did, so that
            parse failures can be measured.
        progress: show a progress bar per stage (requests done / total).
        name: generator name recorded in every candidate.
        stage1_prompt, stage2_prompt: a prompt file (a Jinja template with the stage's
            variables, :mod:`hf_posbias.generation.prompt_files`) replacing the shipped
            :data:`STAGE1_PROMPT` / :data:`STAGE2_PROMPT`.

    Every candidate's ``meta`` records how each stage was decoded (``stage1_decoding``,
    ``stage2_decoding``: ``json_schema`` | ``free_form`` | ``free_form_fallback``).

    Example:
        >>> from hf_posbias.generation.backends import OpenAIChatBackend
        >>> gen = PersonaQueryGenerator(OpenAIChatBackend("m", base_url="http://127.0.0.1:9/v1"),
        ...                             PersonaPool(["a cook"]), name="openai")
        >>> gen.params()["temperature"], gen.params()["top_k"], gen.params()["constrained"]
        (1.0, 20, True)
    """

    def __init__(
        self,
        backend: ChatBackend,
        personas: PersonaPool,
        *,
        top_k: int = 20,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        seed: int = 0,
        constrained: bool = True,
        progress: bool = False,
        name: str = "persona-llm",
        stage1_prompt: str | None = None,
        stage2_prompt: str | None = None,
    ) -> None:
        from hf_posbias.generation.prompt_files import stage_prompt

        self.stage1_prompt = stage_prompt(stage1_prompt, "stage1", STAGE1_PROMPT)
        self.stage2_prompt = stage_prompt(stage2_prompt, "stage2", STAGE2_PROMPT)
        if int(top_k) < 1:
            raise InputError(f"top_k must be >= 1, got {top_k}")
        if int(max_tokens) < 1:
            raise InputError(f"max_tokens must be >= 1, got {max_tokens}")
        self.backend = backend
        self.personas = personas
        self.top_k = int(top_k)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_tokens = int(max_tokens)
        self.seed = int(seed)
        self.constrained = bool(constrained)
        self.progress = bool(progress)
        self.name = name

    @property
    def offered(self) -> int:
        """How many personas each Stage-1 prompt lists."""
        return min(self.top_k, len(self.personas.personas))

    def schemas(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The (Stage 1, Stage 2) JSON schemas requested, or ``None`` when free-form."""
        return (stage1_schema(self.offered), STAGE2_SCHEMA) if self.constrained else None

    def params(self) -> dict[str, Any]:
        """Everything that changes the output (pinned in the stage manifest)."""
        schemas = self.schemas()
        return {
            "method": "yhp26-two-stage",
            "backend": self.backend.params(),
            "personas": self.personas.params(),
            "top_k": self.top_k,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "prompts": PROMPTS_FINGERPRINT
            if (self.stage1_prompt, self.stage2_prompt) == (STAGE1_PROMPT, STAGE2_PROMPT)
            else hashlib.sha256(
                "\x1f".join(
                    [STAGE1_SYSTEM, str(self.stage1_prompt), str(self.stage2_prompt)]
                ).encode()
            ).hexdigest()[:16],
            "constrained": self.constrained,
            "schemas": (
                hashlib.sha256("\x1f".join(map(schema_key, schemas)).encode()).hexdigest()[:16]
                if schemas
                else None
            ),
        }

    @staticmethod
    def _check(reply: str | BackendError) -> str | RequestRejected:
        # A dead endpoint aborts the stage (finished shards stay; rerun resumes); a rejected
        # request only costs its own document/position.
        if isinstance(reply, RequestRejected | str):
            return reply
        raise reply

    def _ask(
        self,
        requests: list[Messages],
        seeds: list[int],
        schema: dict[str, Any] | None,
        stage: str,
    ) -> list[ChatReply | BackendError]:
        """All requests of one stage, in order, with a progress bar and a fallback count."""
        # Chunks of a few requests per concurrent slot keep the bar moving without idling the
        # endpoint's threads; a local model answers one request at a time anyway.
        concurrency = getattr(self.backend, "max_concurrency", None)
        replies = complete_all(
            self.backend,
            requests,
            seeds,
            chunk=4 * int(concurrency) if concurrency else 1,
            desc=f"{self.name} {stage}",
            progress=self.progress,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            json_schema=schema,
        )
        fallbacks = sum(
            not isinstance(r, BackendError) and reply_decoding(r) == "free_form_fallback"
            for r in replies
        )
        if fallbacks:
            logger.warning(
                "warning: %s %s: %d of %d request(s) answered free-form because the endpoint "
                "refused response_format",
                self.name,
                stage,
                fallbacks,
                len(replies),
            )
        return replies

    def generate(self, document: Document) -> GenerationResult:
        """Both stages for one document; raises :class:`GenerationFailure` when Stage 1 fails."""
        outcome = self.generate_batch([document])[0]
        if isinstance(outcome, GenerationFailure):
            raise outcome
        return outcome

    def generate_batch(
        self, documents: Sequence[Document]
    ) -> list[GenerationResult | GenerationFailure]:
        """Both stages for many documents, overlapping requests (Stage 1 for all, then Stage 2)."""
        outcomes: list[GenerationResult | GenerationFailure | None] = [None] * len(documents)
        usable: list[int] = []
        for i, doc in enumerate(documents):
            if tuple(s.position for s in doc.segments) != POSITIONS:
                outcomes[i] = GenerationFailure("unsegmented_document", doc.id)
            else:
                usable.append(i)
        schemas = self.schemas()
        if usable and callable(getattr(self.backend, "load", None)):
            # A local model that cannot load (a broken GGUF) fails before the persona encoder.
            self.backend.load()
        offered = self.personas.top_k_many([documents[i].text for i in usable], self.top_k)
        stage1 = [
            _messages(
                self.stage1_prompt.format(
                    title=documents[i].title or "(untitled)",
                    document=documents[i].text,
                    personas="\n".join(f"{n}. {p}" for n, p in enumerate(options, start=1)),
                )
            )
            for i, options in zip(usable, offered, strict=True)
        ]
        replies = self._ask(
            stage1,
            [_seed31(self.seed, "stage1", documents[i].id) for i in usable],
            schemas[0] if schemas else None,
            "stage 1",
        )
        configs: dict[int, tuple[QueryConfig, str]] = {}
        for i, options, reply in zip(usable, offered, replies, strict=True):
            checked = self._check(reply)
            if isinstance(checked, RequestRejected):
                outcomes[i] = GenerationFailure("stage1_backend_rejected", str(checked))
                continue
            try:
                configs[i] = (parse_stage1(checked, options), reply_decoding(checked))
            except GenerationFailure as failure:
                if _truncated(checked):
                    failure = GenerationFailure("stage1_truncated", failure.detail)
                outcomes[i] = failure

        jobs = [(i, seg) for i in configs for seg in documents[i].segments]
        stage2 = []
        for i, seg in jobs:
            doc, config = documents[i], configs[i][0]
            stage2.append(
                _messages(
                    self.stage2_prompt.format(
                        persona=config.persona.rstrip("."),
                        difficulty=config.difficulty.replace("_", " "),
                        length=QUERY_LENGTHS[config.query_length],
                        position=seg.position,
                        title=doc.title or "(untitled)",
                        document=doc.text,
                        segment=seg.text,
                    )
                )
            )
        replies = self._ask(
            stage2,
            [_seed31(self.seed, "stage2", documents[i].id, s.position) for i, s in jobs],
            schemas[1] if schemas else None,
            "stage 2",
        )
        for i in configs:
            outcomes[i] = GenerationResult()
        for (i, seg), reply in zip(jobs, replies, strict=True):
            result = outcomes[i]
            assert isinstance(result, GenerationResult)
            checked = self._check(reply)
            if isinstance(checked, RequestRejected):
                result.skip("stage2_backend_rejected")
                continue
            try:
                parsed = parse_stage2(checked)
            except ValueError as err:
                result.skip("stage2_truncated" if _truncated(checked) else str(err))
                continue
            doc, (config, config_decoding) = documents[i], configs[i]
            result.candidates.append(
                make_candidate(
                    doc,
                    seg.position,
                    parsed["query"],
                    [s.text for s in doc.segments],
                    answer=parsed["answer"],
                    generator=self.name,
                    meta={
                        "persona": config.persona,
                        "difficulty": config.difficulty,
                        "query_length": config.query_length,
                        "query_words": len(parsed["query"].split()),
                        "reasoning": parsed["reasoning"],
                        "stage1_decoding": config_decoding,
                        "stage2_decoding": reply_decoding(checked),
                    },
                )
            )
        return [o if o is not None else GenerationFailure("internal") for o in outcomes]


def _truncated(reply: str) -> bool:
    """An unparseable reply cut by the token budget (counted apart from plain parse errors)."""
    return getattr(reply, "finish_reason", None) == "length"


BACKEND_OPTIONS: dict[str, tuple[str, ...]] = {
    "openai": ("base_url", "api_key_env", "max_concurrency", "max_retries", "timeout", "backoff"),
    "local-lm": ("gguf_file", "device", "max_new_tokens", "dtype"),
}
PROMPT_OPTIONS = (
    "top_k",
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "constrained",
    "progress",
    "stage1_prompt",
    "stage2_prompt",
)
PERSONA_OPTIONS = ("personas", "persona_model", "persona_limit", "persona_cache_dir")


def build_llm_generator(name: str, **options: Any) -> PersonaQueryGenerator:
    """Build the ``"openai"`` or ``"local-lm"`` generator (see :func:`make_generator`).

    ``personas`` defaults to the project's own pool (:meth:`PersonaPool.default`). With
    ``constrained`` (the default) the local LM needs llguidance: checked here, before any model
    or persona embedding loads.

    Example:
        >>> build_llm_generator("openai")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: generator 'openai' needs a model (the chat model to prompt)
        >>> gen = build_llm_generator("openai", model="gpt-4o-mini", constrained=False)
        >>> gen.params()["personas"]["source"], gen.params()["constrained"]
        ('hf-posbias default personas', False)
    """
    allowed = ("model",) + BACKEND_OPTIONS[name] + PROMPT_OPTIONS + PERSONA_OPTIONS
    reject_unknown_options(options, allowed, name)
    model = options.get("model")
    if not model:
        raise InputError(f"generator {name!r} needs a model (the chat model to prompt)")
    spec = options.get("personas")
    persona_model = options.get("persona_model") or DEFAULT_PERSONA_MODEL
    if isinstance(spec, PersonaPool):
        pool = spec
    elif not spec:
        pool = PersonaPool.default(model=persona_model, cache_dir=options.get("persona_cache_dir"))
    else:
        pool = PersonaPool.load(
            spec,
            model=persona_model,
            limit=options.get("persona_limit"),
            cache_dir=options.get("persona_cache_dir"),
        )
    backend_kwargs = {k: options[k] for k in BACKEND_OPTIONS[name] if options.get(k) is not None}
    backend = make_chat_backend(name, str(model), **backend_kwargs)
    prompt_kwargs = {k: options[k] for k in PROMPT_OPTIONS if options.get(k) is not None}
    generator = PersonaQueryGenerator(backend, pool, name=name, **prompt_kwargs)
    schemas = generator.schemas()
    if name == "local-lm" and schemas:
        # Fail before the model loads: llguidance missing, or a schema it cannot compile.
        for schema in schemas:
            compile_json_schema(schema)
    return generator
