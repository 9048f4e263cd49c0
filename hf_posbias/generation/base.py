"""Candidate records and the query-generator protocol (what every generator builds on).

A *query generator* turns one :class:`~hf_posbias.corpus.documents.Document` (already cut into
begin/middle/end segments) into at most one :class:`Candidate` per position. The generators
(:mod:`~hf_posbias.generation.ict`, :mod:`~hf_posbias.generation.llm`) import this module; they
are built by name in :mod:`hf_posbias.generation.generator_registry`, so this module imports
neither.

Outcomes are never dropped silently: a document that cannot be used at all raises
:class:`GenerationFailure` (the stage counts it by reason), and a position that cannot be produced
is counted in :attr:`GenerationResult.skipped`.

Example:
    >>> from hf_posbias.corpus.documents import Document
    >>> doc = Document("d1", "aa bb cc", "T", "0-10")
    >>> result = GenerationResult([make_candidate(doc, "end", "cc?", ["aa ", "bb ", "cc"],
    ...                                           generator="demo")])
    >>> [c.candidate_id for c in result.candidates]
    ['d1::end']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hf_posbias.errors import InputError

if TYPE_CHECKING:
    from hf_posbias.corpus.documents import Document


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
    """The pyarrow schema of a candidate row (keeps empty outputs typed and mergeable): one
    column per :class:`Candidate` field, in field order.

    Example:
        >>> candidate_schema().names[:3], str(candidate_schema().field("segments").type)
        (['candidate_id', 'doc_id', 'title'], 'list<item: string>')
    """
    from hf_posbias.shards import dataclass_schema

    return dataclass_schema(Candidate)


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
        >>> from hf_posbias.corpus.documents import Document
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
        >>> from hf_posbias.corpus.documents import Document
        >>> from hf_posbias.generation.ict import ICTGenerator
        >>> out = generate_batch(ICTGenerator(), [Document("e", "x" * 300, "", "256-512")])
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
