"""YHP26's two-stage persona prompt for position-controlled queries.

Stage 1, once per document: the LLM sees the document and the 20 personas most similar to it
and picks a configuration — a persona, a difficulty (``high_school`` | ``university`` | ``phd``)
and a query length (``short`` < 10 words | ``medium`` 10–20 | ``long`` > 20) — as JSON. A document
whose configuration does not parse (or is invalid) is **excluded and counted**.

Stage 2, once per (document, position), reusing the same configuration for all three positions:
given the full document and the target segment marked with its position, the LLM returns JSON
``{query, answer, reasoning}`` for a query answerable only from that segment. A reply that does
not parse skips that position and is counted. Sampling defaults to temperature 1.0, top_p 1.0.

The positive is the unchanged document; ``segments`` are its original begin/middle/end texts.

Example:
    >>> from hf_posbias.generation.llm import extract_json_object
    >>> extract_json_object('Sure! ```json\\n{"query": "Who?", "answer": "Ann"}\\n``` Done.')
    {'query': 'Who?', 'answer': 'Ann'}
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hf_posbias import POSITIONS
from hf_posbias.corpus import Document
from hf_posbias.errors import BackendError, InputError
from hf_posbias.generation.backends import (
    ChatBackend,
    OpenAIChatBackend,
    RequestRejected,
    TransformersChatBackend,
)
from hf_posbias.generation.base import (
    GenerationFailure,
    GenerationResult,
    make_candidate,
    reject_unknown_options,
    stable_seed,
)
from hf_posbias.generation.personas import DEFAULT_PERSONA_MODEL, PersonaPool

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


def _messages(prompt: str) -> list[dict[str, str]]:
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
        name: generator name recorded in every candidate.

    Example:
        >>> from hf_posbias.generation.backends import OpenAIChatBackend
        >>> gen = PersonaQueryGenerator(OpenAIChatBackend("m", base_url="http://127.0.0.1:9/v1"),
        ...                             PersonaPool(["a cook"]), name="openai")
        >>> gen.params()["temperature"], gen.params()["top_k"]
        (1.0, 20)
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
        name: str = "persona-llm",
    ) -> None:
        if int(top_k) < 1:
            raise InputError(f"top_k must be >= 1, got {top_k}")
        self.backend = backend
        self.personas = personas
        self.top_k = int(top_k)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_tokens = int(max_tokens)
        self.seed = int(seed)
        self.name = name

    def params(self) -> dict[str, Any]:
        """Everything that changes the output (pinned in the stage manifest)."""
        return {
            "method": "yhp26-two-stage",
            "backend": self.backend.params(),
            "personas": self.personas.params(),
            "top_k": self.top_k,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "prompts": PROMPTS_FINGERPRINT,
        }

    def _sampling(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}

    @staticmethod
    def _check(reply: str | BackendError) -> str | RequestRejected:
        # A dead endpoint aborts the stage (finished shards stay; rerun resumes); a rejected
        # request only costs its own document/position.
        if isinstance(reply, RequestRejected | str):
            return reply
        raise reply

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
        offered = self.personas.top_k_many([documents[i].text for i in usable], self.top_k)
        stage1 = [
            _messages(
                STAGE1_PROMPT.format(
                    title=documents[i].title or "(untitled)",
                    document=documents[i].text,
                    personas="\n".join(f"{n}. {p}" for n, p in enumerate(options, start=1)),
                )
            )
            for i, options in zip(usable, offered, strict=True)
        ]
        replies = self.backend.complete_many(
            stage1,
            seeds=[_seed31(self.seed, "stage1", documents[i].id) for i in usable],
            **self._sampling(),
        )
        configs: dict[int, QueryConfig] = {}
        for i, options, reply in zip(usable, offered, replies, strict=True):
            checked = self._check(reply)
            if isinstance(checked, RequestRejected):
                outcomes[i] = GenerationFailure("stage1_backend_rejected", str(checked))
                continue
            try:
                configs[i] = parse_stage1(checked, options)
            except GenerationFailure as failure:
                outcomes[i] = failure

        jobs = [(i, seg) for i in configs for seg in documents[i].segments]
        stage2 = []
        for i, seg in jobs:
            doc, config = documents[i], configs[i]
            stage2.append(
                _messages(
                    STAGE2_PROMPT.format(
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
        replies = self.backend.complete_many(
            stage2,
            seeds=[_seed31(self.seed, "stage2", documents[i].id, s.position) for i, s in jobs],
            **self._sampling(),
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
                result.skip(str(err))
                continue
            doc, config = documents[i], configs[i]
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
                    },
                )
            )
        return [o if o is not None else GenerationFailure("internal") for o in outcomes]


BACKEND_OPTIONS: dict[str, tuple[str, ...]] = {
    "openai": ("base_url", "api_key_env", "max_concurrency", "max_retries", "timeout", "backoff"),
    "local-lm": ("gguf_file", "device", "max_new_tokens", "dtype"),
}
PROMPT_OPTIONS = ("top_k", "temperature", "top_p", "max_tokens", "seed")
PERSONA_OPTIONS = ("personas", "persona_model", "persona_limit", "persona_cache_dir")


def build_llm_generator(name: str, **options: Any) -> PersonaQueryGenerator:
    """Build the ``"openai"`` or ``"local-lm"`` generator (see :func:`make_generator`).

    Example:
        >>> build_llm_generator("openai", model="gpt-4o-mini")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: generator 'openai' needs personas: a .jsonl/.txt file ...
    """
    allowed = ("model",) + BACKEND_OPTIONS[name] + PROMPT_OPTIONS + PERSONA_OPTIONS
    reject_unknown_options(options, allowed, name)
    model = options.get("model")
    if not model:
        raise InputError(f"generator {name!r} needs a model (the chat model to prompt)")
    spec = options.get("personas")
    if not spec:
        raise InputError(
            f"generator {name!r} needs personas: a .jsonl/.txt file or a Hub dataset id such "
            "as proj-persona/PersonaHub"
        )
    if isinstance(spec, PersonaPool):
        pool = spec
    else:
        pool = PersonaPool.load(
            spec,
            model=options.get("persona_model") or DEFAULT_PERSONA_MODEL,
            limit=options.get("persona_limit"),
            cache_dir=options.get("persona_cache_dir"),
        )
    backend_kwargs = {k: options[k] for k in BACKEND_OPTIONS[name] if options.get(k) is not None}
    backend: ChatBackend
    if name == "openai":
        backend = OpenAIChatBackend(str(model), **backend_kwargs)
    else:
        backend = TransformersChatBackend(str(model), **backend_kwargs)
    prompt_kwargs = {k: options[k] for k in PROMPT_OPTIONS if options.get(k) is not None}
    return PersonaQueryGenerator(backend, pool, name=name, **prompt_kwargs)
