"""The generate stage: documents → candidates, resumable and shardable.

:func:`run_generation` maps a :class:`~hf_posbias.generation.base.QueryGenerator` over documents
with :func:`hf_posbias.shards.run_sharded`. Each shard row records one *document's* outcome —
its candidates, the positions it skipped and why, or the reason it was excluded — so the report
is rebuilt from the shards and stays exact after a kill and rerun. Under ``accelerate launch``
every process generates its own shards and the main process writes ``candidates.parquet`` and
``report.json``.

Example:
    >>> import tempfile
    >>> from hf_posbias.corpus.documents import prepare_documents
    >>> from hf_posbias.generation.generator_registry import make_generator
    >>> from hf_posbias.generation.stage import run_generation
    >>> text = " ".join(f"Line {i} says the bridge has {i} arches in total." for i in range(9))
    >>> docs, _ = prepare_documents([{"id": "a", "text": text}, {"id": "b", "text": "tiny " * 60}])
    >>> cands, report = run_generation(docs, make_generator("ict"), tempfile.mkdtemp(),
    ...                                progress=False)
    >>> len(cands), report.documents_excluded
    (3, {'no_eligible_sentence': 1})
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.corpus.documents import Document, bin_position_counts
from hf_posbias.errors import InputError
from hf_posbias.generation.base import (
    Candidate,
    GenerationFailure,
    QueryGenerator,
    candidate_schema,
    generate_batch,
)
from hf_posbias.jsonable import JsonRecord
from hf_posbias.positions import POSITIONS
from hf_posbias.rows.arrow import ParquetRows
from hf_posbias.shards import (
    ParquetRowWriter,
    dataclass_schema,
    process_info,
    run_sharded,
    wait_for_everyone,
    write_json,
    write_shard,
)

CANDIDATES_FILE = "candidates.parquet"
REPORT_FILE = "report.json"
SHARD_SIZE = 32
"""Documents per generate shard (the unit of resumption and of distribution)."""


@dataclass
class GenerationReport(JsonRecord):
    """What the generate stage produced and what it could not — every loss is counted
    (``to_dict``: its ``report.json``).

    Example:
        >>> r = GenerationReport(generator="ict", documents_in=2, documents_excluded={"x": 1})
        >>> r.summary_lines()[:3]
        ['generate: ict', '  documents in: 2', '  documents with candidates: 0']
    """

    generator: str = ""
    documents_in: int = 0
    documents_with_candidates: int = 0
    documents_excluded: dict[str, int] = field(default_factory=dict)
    positions_skipped: dict[str, int] = field(default_factory=dict)
    candidates: int = 0
    per_bin_position: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def summary_lines(self) -> list[str]:
        """Human-readable lines for the CLI stage report."""
        lines = [
            f"generate: {self.generator}",
            f"  documents in: {self.documents_in}",
            f"  documents with candidates: {self.documents_with_candidates}",
            f"  candidates: {self.candidates}",
        ]
        for reason, count in sorted(self.documents_excluded.items()):
            shown = ", ".join(self.examples.get(reason, []))
            lines.append(f"  WARNING documents excluded ({reason}): {count} (e.g. {shown})")
        for reason, count in sorted(self.positions_skipped.items()):
            lines.append(f"  WARNING positions skipped ({reason}): {count}")
        for label, row in self.per_bin_position.items():
            cells = " / ".join(f"{row.get(p, 0)}" for p in POSITIONS)
            lines.append(f"  bin {label}: {cells} (begin / middle / end)")
        return lines


@dataclass
class DocumentOutcome:
    """One generate shard row: a document's candidates (as :meth:`Candidate.to_row` rows) and
    the positions it skipped (a JSON object of position → reason), or why it was excluded."""

    doc_id: str
    process_index: int
    excluded: str | None = None
    excluded_detail: str | None = None
    skipped: str = "{}"
    candidates: list[dict[str, Any]] = field(default_factory=list)

    @staticmethod
    def schema() -> Any:
        """The shard files' columns: one per field."""
        import pyarrow as pa

        return dataclass_schema(
            DocumentOutcome,
            process_index=pa.int32(),
            candidates=pa.list_(pa.struct(list(candidate_schema()))),
        )


def documents_fingerprint(documents: Sequence[Document]) -> str:
    """A hash of the documents' ids, texts and segment offsets (pins the manifest to the input).

    Example:
        >>> docs = [Document("a", "some text")]
        >>> documents_fingerprint(docs) == documents_fingerprint([Document("a", "some text")])
        True
    """
    digest = hashlib.sha256()
    for doc in documents:
        offsets = [(s.start, s.end) for s in doc.segments]
        digest.update(json.dumps([doc.id, doc.text, offsets]).encode("utf-8"))
    return digest.hexdigest()[:16]


def run_generation(
    documents: Sequence[Document],
    generator: QueryGenerator,
    out_dir: str | Path,
    *,
    shard_size: int = SHARD_SIZE,
    progress: bool = True,
    overwrite: bool = False,
    remote: Callable[[list[int]], None] | None = None,
) -> tuple[Sequence[Candidate], GenerationReport]:
    """Generate candidates for ``documents`` into ``out_dir``, resumably.

    Writes ``out_dir/shards/*.parquet`` (one row per document) and ``manifest.json`` as it goes,
    then — on the main process — ``candidates.parquet`` (the candidate contract, document order,
    then begin/middle/end) and ``report.json``. A rerun after a kill skips finished shards; a
    rerun with another generator configuration or other documents is refused
    (:class:`~hf_posbias.errors.InputError`) unless ``overwrite``. Backend errors (an
    unreachable endpoint) propagate and leave finished shards in place for the rerun.

    Args:
        documents: segmented documents (``corpus.prepare_documents``); ids must be unique.
        generator: any :class:`~hf_posbias.generation.base.QueryGenerator`.
        out_dir: the stage folder.
        shard_size: documents per shard (unit of resumption and of ``accelerate`` distribution).
        progress: report progress (in shards of ``shard_size`` documents).
        overwrite: replace a stage folder pinned to other settings instead of refusing.
        remote: make the missing shards elsewhere (see :func:`hf_posbias.shards.run_sharded`;
            each shard through :func:`generate_shard`, e.g. as executor units).

    Returns:
        ``(candidates, report)``; every process returns the merged result, the candidates read
        lazily from ``candidates.parquet`` (:func:`load_candidates`): the stage holds one
        shard of documents and one row group of candidates at a time.
    """
    # One pass over the documents (a lazy file of any size): what is held is their ids.
    seen: set[str] = set()
    repeated: set[str] = set()
    for doc in documents:
        (repeated if doc.id in seen else seen).add(doc.id)
    duplicates = sorted(repeated)
    del seen
    if duplicates:
        raise InputError(
            f"document ids must be unique; duplicated: {', '.join(duplicates[:5])}"
            + (" …" if len(duplicates) > 5 else "")
        )
    params = {
        "stage": "generate",
        "generator": generator.name,
        "generator_params": generator.params(),
        "documents": len(documents),
        "documents_fingerprint": documents_fingerprint(documents),
    }
    proc = process_info()

    def work(shard: list[Document]) -> list[dict[str, Any]]:
        return document_rows(generator, shard, proc.index)

    rows = run_sharded(
        documents,
        work,
        out_dir,
        shard_size=shard_size,
        params=params,
        desc=f"generate ({generator.name})",
        schema=DocumentOutcome.schema(),
        progress=progress,
        overwrite=overwrite,
        remote=remote,
        merge=False,
    )
    out = Path(out_dir)
    report = _collect(rows, generator.name, out / CANDIDATES_FILE if proc.is_main else None)
    if proc.is_main:
        write_json(out / REPORT_FILE, report.to_dict())
    wait_for_everyone()
    return load_candidates(out), report


def document_rows(
    generator: QueryGenerator, shard: Sequence[Document], process_index: int = 0
) -> list[dict[str, Any]]:
    """One shard row per document: its candidates, the positions it skipped, or why it was
    excluded (what a generate shard file holds)."""
    # Batch generators (LLM) overlap requests across the whole shard. Progress is counted
    # in shards by run_sharded: a bar per shard would print a line per shard in a log.
    outcomes = generate_batch(generator, list(shard))
    rows = []
    for doc, outcome in zip(shard, outcomes, strict=True):
        row = DocumentOutcome(doc.id, process_index)
        if isinstance(outcome, GenerationFailure):
            row.excluded, row.excluded_detail = outcome.reason, outcome.detail[:500]
        else:
            row.skipped = json.dumps(outcome.skipped, sort_keys=True)
            row.candidates = [c.to_row() for c in outcome.candidates]
        rows.append(vars(row))
    return rows


def generate_shard(
    corpus_dir: str | Path,
    out_dir: str | Path,
    generator: str,
    options: dict[str, Any],
    shard_size: int,
    index: int,
) -> None:
    """Write shard ``index`` of a generate stage on a worker: the documents are read from
    ``corpus_dir`` and the generator is built from its name and options (nothing loaded is
    handed over), so the file equals the one :func:`run_generation` writes here.

    Example:
        >>> import tempfile
        >>> from hf_posbias.corpus.documents import prepare_documents, write_documents
        >>> from hf_posbias.shards import shard_path
        >>> text = " ".join(f"Line {i} says the bridge has {i} arches in total." for i in range(9))
        >>> docs, report = prepare_documents([{"id": "a", "text": text}])
        >>> corpus, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> _ = write_documents(docs, report, corpus)
        >>> generate_shard(corpus, out, "ict", {"seed": 1}, 32, 0)
        >>> shard_path(out, 0).is_file()
        True
    """
    from hf_posbias.corpus.documents import load_documents
    from hf_posbias.generation.generator_registry import make_generator

    documents = load_documents(Path(corpus_dir))
    model = make_generator(generator, **options)
    write_shard(
        documents,
        lambda shard: document_rows(model, shard),
        out_dir,
        index,
        shard_size,
        schema=DocumentOutcome.schema(),
    )


def _collect(rows: Iterable[dict[str, Any]], name: str, path: Path | None) -> GenerationReport:
    """Flatten per-document shard rows into candidates, written to ``path`` (``None``: not
    written) row group by row group, and rebuild the report from them in the same pass."""
    report = GenerationReport(generator=name)
    skipped: Counter[str] = Counter()
    excluded: Counter[str] = Counter()

    def candidates(writer: ParquetRowWriter | None) -> Iterator[dict[str, Any]]:
        for row in rows:
            report.documents_in += 1
            if row["excluded"] is not None:
                excluded[row["excluded"]] += 1
                ids = report.examples.setdefault(row["excluded"], [])
                if len(ids) < 5:
                    ids.append(row["doc_id"])
                continue
            skipped.update(json.loads(row["skipped"]))
            doc_candidates = [Candidate.from_row(c).to_row() for c in row["candidates"]]
            if doc_candidates:
                report.documents_with_candidates += 1
            report.candidates += len(doc_candidates)
            if writer is not None:
                writer.write(doc_candidates)
            yield from doc_candidates

    if path is None:
        report.per_bin_position = bin_position_counts(candidates(None))
    else:
        with ParquetRowWriter(path, schema=candidate_schema()) as writer:
            report.per_bin_position = bin_position_counts(candidates(writer))
    report.documents_excluded = dict(sorted(excluded.items()))
    report.positions_skipped = dict(sorted(skipped.items()))
    return report


def load_candidates(path: str | Path) -> Sequence[Candidate]:
    """Read ``candidates.parquet`` (or a stage folder holding it) back into candidates, lazily
    (:class:`hf_posbias.rows.arrow.ParquetRows`: a row group at a time).

    Example:
        >>> load_candidates("/nonexistent")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: candidates not found: /nonexistent/candidates.parquet
    """
    path = Path(path)
    if path.is_dir() or path.suffix != ".parquet":
        path = path / CANDIDATES_FILE
    if not path.exists():
        raise InputError(f"candidates not found: {path}")
    return ParquetRows([path], convert=Candidate.from_row)


def candidate_rows(path: str | Path) -> Sequence[dict[str, Any]]:
    """The candidates of :func:`load_candidates` as rows (``Candidate.to_row``), lazily: what
    verification reads."""
    candidates = load_candidates(path)
    return ParquetRows(candidates.paths, convert=_candidate_row)  # type: ignore[attr-defined]


def _candidate_row(row: dict[str, Any]) -> dict[str, Any]:
    return Candidate.from_row(row).to_row()
