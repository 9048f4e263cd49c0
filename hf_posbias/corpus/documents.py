"""Documents, length bins and segments: what every stage after the corpus reads.

A document is assigned a length bin by **characters** (tokenizer-agnostic, as in YHP26) and cut
into ``k`` equal character segments whose cut points move to the nearest whitespace, so that no
word is split. :func:`prepare_documents` turns records into documents and counts every record it
drops; :func:`write_documents` / :func:`load_documents` keep them as ``documents.parquet``.
Where records come from is :mod:`hf_posbias.corpus.sources`.

Example:
    >>> from hf_posbias.corpus.documents import LengthBins, prepare_documents, segment_spans
    >>> LengthBins().assign(700)
    '512-1024'
    >>> spans = segment_spans("one two three four five six", 3)
    >>> [s for s in spans]
    [(0, 7), (7, 18), (18, 27)]
    >>> docs, report = prepare_documents([{"id": "a", "text": "word " * 80}])
    >>> docs[0].length_bin, [s.position for s in docs[0].segments]
    ('256-512', ['begin', 'middle', 'end'])
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.jsonable import JsonRecord
from hf_posbias.positions import POSITIONS

logger = logging.getLogger(__name__)


DEFAULT_BIN_EDGES: tuple[int, ...] = (256, 512, 1024, 2048, 4096, 8192)
"""YHP26's five character-length bins: 256–512, 512–1024, 1024–2048, 2048–4096, 4096–8192."""


@dataclass(frozen=True)
class LengthBins:
    """Half-open character-length bins ``[edges[i], edges[i+1])``.

    Example:
        >>> bins = LengthBins((100, 200, 400))
        >>> bins.labels
        ('100-200', '200-400')
        >>> bins.assign(99), bins.assign(100), bins.assign(399), bins.assign(400)
        (None, '100-200', '200-400', None)
    """

    edges: tuple[int, ...] = DEFAULT_BIN_EDGES

    def __post_init__(self) -> None:
        edges = tuple(int(e) for e in self.edges)
        if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])) or edges[0] < 0:
            raise InputError(
                f"length-bin edges must be at least two increasing non-negative integers, "
                f"got {list(self.edges)}"
            )
        object.__setattr__(self, "edges", edges)

    @classmethod
    def parse(cls, spec: str | Sequence[int] | None) -> LengthBins:
        """Build bins from ``"256,512,1024"`` or a sequence of edges (``None`` = YHP26 default)."""
        if spec is None:
            return cls()
        if isinstance(spec, str):
            try:
                edges = tuple(int(part) for part in spec.split(",") if part.strip())
            except ValueError as err:
                raise InputError(
                    f"length-bin edges must be comma-separated integers, got {spec!r}"
                ) from err
            return cls(edges)
        return cls(tuple(spec))

    @property
    def labels(self) -> tuple[str, ...]:
        """Bin labels in order, e.g. ``'256-512'``."""
        return tuple(f"{lo}-{hi}" for lo, hi in zip(self.edges, self.edges[1:]))

    def assign(self, n_chars: int) -> str | None:
        """The label of the bin holding ``n_chars``, or ``None`` when out of range."""
        for lo, hi in zip(self.edges, self.edges[1:]):
            if lo <= n_chars < hi:
                return f"{lo}-{hi}"
        return None


def position_names(k: int) -> tuple[str, ...]:
    """Names of ``k`` segments: begin/middle/end for thirds, ``p1``…``pk`` otherwise."""
    return POSITIONS if k == 3 else tuple(f"p{i + 1}" for i in range(k))


def segment_spans(text: str, k: int, snap_window: int | None = None) -> list[tuple[int, int]]:
    """Cut ``text`` into ``k`` contiguous character spans of (nearly) equal length.

    Each ideal cut point ``i * len(text) / k`` moves to the nearest whitespace within
    ``snap_window`` characters (default: half a segment, at most 60) so that no word is
    split; where the window holds no whitespace the exact cut is kept. The spans cover the text
    exactly, so offsets map back to the original string.

    Args:
        text: the document text.
        k: number of segments (3 for training data, 5 for mirror reversal, 10 for analyses).
        snap_window: how far a cut may move to reach whitespace.

    Returns:
        ``k`` ``(start, end)`` pairs, ``start`` of the first 0, ``end`` of the last ``len(text)``.
    """
    if k < 1:
        raise InputError(f"number of segments must be >= 1, got {k}")
    n = len(text)
    if n < k:
        raise InputError(f"a text of {n} characters cannot be cut into {k} segments")
    window = snap_window if snap_window is not None else min(60, max(1, n // (2 * k)))
    cuts = [0]
    for i in range(1, k):
        ideal = round(i * n / k)
        best = ideal
        for delta in range(window + 1):
            # Prefer cutting just before a whitespace run so the next segment starts at it.
            if ideal - delta > cuts[-1] and text[ideal - delta].isspace():
                best = ideal - delta
                break
            if ideal + delta < n and text[ideal + delta].isspace():
                best = ideal + delta
                break
        best = max(best, cuts[-1] + 1)
        cuts.append(min(best, n - (k - i)))
    cuts.append(n)
    return list(zip(cuts, cuts[1:]))


@dataclass(frozen=True)
class Segment:
    """One character span of a document: ``text[start:end]``."""

    position: str
    index: int
    start: int
    end: int
    text: str


@dataclass
class Document:
    """A corpus document with its length bin and position segments."""

    id: str
    text: str
    title: str = ""
    length_bin: str | None = None
    segments: list[Segment] = field(default_factory=list)

    @property
    def n_chars(self) -> int:
        """Length in characters (the unit of the length bins)."""
        return len(self.text)

    def segment(self, k: int = 3) -> list[Segment]:
        """Cut the document into ``k`` segments (see :func:`segment_spans`)."""
        names = position_names(k)
        return [
            Segment(names[i], i, s, e, self.text[s:e])
            for i, (s, e) in enumerate(segment_spans(self.text, k))
        ]

    def to_row(self) -> dict[str, Any]:
        """A flat row for parquet: segments as parallel lists of offsets."""
        return {
            "id": self.id,
            "title": self.title,
            "text": self.text,
            "length_bin": self.length_bin,
            "n_chars": self.n_chars,
            "segment_starts": [s.start for s in self.segments],
            "segment_ends": [s.end for s in self.segments],
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Document:
        """Inverse of :meth:`to_row`."""
        text = row["text"]
        starts, ends = list(row.get("segment_starts") or []), list(row.get("segment_ends") or [])
        names = position_names(len(starts)) if starts else ()
        segments = [
            Segment(names[i], i, s, e, text[s:e]) for i, (s, e) in enumerate(zip(starts, ends))
        ]
        return cls(
            id=str(row["id"]),
            text=text,
            title=row.get("title") or "",
            length_bin=row.get("length_bin"),
            segments=segments,
        )


@dataclass
class CorpusReport(JsonRecord):
    """What the corpus stage kept and why it dropped the rest — nothing is lost silently
    (``to_dict``: written to the stage manifest)."""

    source: str = ""
    records_read: int = 0
    kept: int = 0
    skipped_empty_text: int = 0
    skipped_non_string_text: int = 0
    skipped_duplicate_id: int = 0
    too_short: int = 0
    too_long: int = 0
    kept_without_title: int = 0
    per_bin: dict[str, int] = field(default_factory=dict)
    bin_edges: list[int] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, reason: str, record_id: str) -> None:
        """Count a record (dropped, or kept without a title) and remember a few ids per reason
        for the report."""
        setattr(self, reason, getattr(self, reason) + 1)
        ids = self.examples.setdefault(reason, [])
        if len(ids) < 5:
            ids.append(record_id)

    def summary_lines(self) -> list[str]:
        """Human-readable lines for the CLI stage report."""
        lines = [f"corpus: {self.source}", f"  records read: {self.records_read}"]
        lines.append(f"  kept: {self.kept}")
        for reason in (
            "skipped_empty_text",
            "skipped_non_string_text",
            "skipped_duplicate_id",
            "too_short",
            "too_long",
        ):
            count = getattr(self, reason)
            if count:
                shown = ", ".join(self.examples.get(reason, []))
                lines.append(f"  WARNING {reason.replace('_', ' ')}: {count} (e.g. {shown})")
        if self.kept_without_title:
            shown = ", ".join(self.examples.get("kept_without_title", []))
            lines.append(
                f"  kept without a title: {self.kept_without_title} of {self.kept} (e.g. {shown})"
            )
        for label, count in self.per_bin.items():
            lines.append(f"  bin {label}: {count}")
        return lines


def prepare_documents(
    records: Iterable[dict[str, Any]],
    bins: LengthBins | None = None,
    k: int = 3,
    source: str = "",
) -> tuple[list[Document], CorpusReport]:
    """Validate records, assign length bins and segment every kept document.

    Records without a string ``text``, with empty text, with an id seen before (the first record
    of an id is kept), or whose length falls outside every bin are dropped and **counted** in the
    report (with example ids); kept documents without a title are counted too.

    Args:
        records: dicts with ``id``, ``text`` and optionally ``title``.
        bins: the length bins (default: YHP26's five).
        k: segments per document (3 = begin/middle/end).
        source: a description of where the records came from, for the report.
    """
    bins = bins or LengthBins()
    report = new_corpus_report(bins, source)
    documents = list(iter_documents(records, report, bins, k))
    return documents, report


def new_corpus_report(bins: LengthBins, source: str = "") -> CorpusReport:
    """An empty report for :func:`iter_documents` to count into."""
    return CorpusReport(
        source=source, bin_edges=list(bins.edges), per_bin={label: 0 for label in bins.labels}
    )


def iter_documents(
    records: Iterable[dict[str, Any]], report: CorpusReport, bins: LengthBins, k: int = 3
) -> Iterator[Document]:
    """:func:`prepare_documents` one document at a time: the kept documents are yielded as
    they are read, and ``report`` counts as it goes (complete once the records are exhausted).

    What is held is the set of ids seen (to drop a repeated id): about 100 bytes per document.

    Example:
        >>> report = new_corpus_report(LengthBins())
        >>> docs = iter_documents([{"id": "a", "text": "word " * 80}, {"id": "a", "text": "x"}],
        ...                       report, LengthBins())
        >>> [d.id for d in docs], report.kept, report.skipped_duplicate_id
        (['a'], 1, 1)
    """
    seen: set[str] = set()
    for record in records:
        report.records_read += 1
        doc_id = str(record["id"])
        text = record.get("text")
        if not isinstance(text, str):
            report.note("skipped_non_string_text", doc_id)
            continue
        if not text.strip():
            report.note("skipped_empty_text", doc_id)
            continue
        if doc_id in seen:
            report.note("skipped_duplicate_id", doc_id)
            continue
        seen.add(doc_id)
        label = bins.assign(len(text))
        if label is None:
            report.note("too_short" if len(text) < bins.edges[0] else "too_long", doc_id)
            continue
        doc = Document(id=doc_id, text=text, title=str(record.get("title") or ""), length_bin=label)
        doc.segments = doc.segment(k)
        report.per_bin[label] += 1
        report.kept += 1
        if not doc.title.strip():
            report.note("kept_without_title", doc_id)
        yield doc


def bin_sort_key(label: str) -> tuple[float, str]:
    """Sort length-bin labels numerically (``'256-512'`` before ``'1024-2048'``).

    Example:
        >>> sorted(["1024-2048", "256-512"], key=bin_sort_key)
        ['256-512', '1024-2048']
    """
    head = str(label).split("-", 1)[0]
    try:
        return (float(head), str(label))
    except ValueError:
        return (float("inf"), str(label))


DOCUMENTS_FILE = "documents.parquet"


def document_schema() -> Any:
    """The columns of ``documents.parquet`` (:meth:`Document.to_row`)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("title", pa.string()),
            ("text", pa.string()),
            ("length_bin", pa.string()),
            ("n_chars", pa.int64()),
            ("segment_starts", pa.list_(pa.int64())),
            ("segment_ends", pa.list_(pa.int64())),
        ]
    )


def write_documents(
    documents: Iterable[Document], report: CorpusReport, out_dir: str | Path
) -> Path:
    """Write the corpus stage's output: ``documents.parquet`` + ``report.json`` in ``out_dir``.

    The documents are written row group by row group as they come (an iterator of any length
    is never held whole)."""
    from hf_posbias.shards import ParquetRowWriter, write_json

    out = Path(out_dir)
    with ParquetRowWriter(out / DOCUMENTS_FILE, schema=document_schema()) as writer:
        writer.write(doc.to_row() for doc in documents)
    write_json(out / "report.json", report.to_dict())
    return out


def load_documents(path: str | Path) -> Sequence[Document]:
    """Documents written by :func:`write_documents` (a folder or the parquet file), read lazily
    (:class:`hf_posbias.rows.arrow.ParquetRows`: a row group at a time, as they are iterated or
    sliced)."""
    from hf_posbias.rows.arrow import ParquetRows

    file = Path(path)
    if file.is_dir():
        file = file / DOCUMENTS_FILE
    if not file.exists():
        raise InputError(f"{file} not found: run `posbias data corpus` first")
    return ParquetRows([file], convert=Document.from_row)


def bin_position_counts(
    rows: Iterable[Mapping[str, Any]], *, bins: Iterable[str] = ()
) -> dict[str, dict[str, int]]:
    """Count rows per ``length_bin`` × ``target_position``: the one bin × position counter.

    Every stage report, card table and training summary counts its cells here. Bins are in
    numeric order (:func:`bin_sort_key`); ``bins`` lists labels to include even when no row
    falls in them. A ``target_position`` outside begin/middle/end is an :class:`InputError`.

    Example:
        >>> bin_position_counts([{"length_bin": "256-512", "target_position": "end"}])
        {'256-512': {'begin': 0, 'middle': 0, 'end': 1}}
        >>> list(bin_position_counts([], bins=["1024-2048", "256-512"]))
        ['256-512', '1024-2048']
    """
    counts: Counter[tuple[str, str]] = Counter()
    labels = {str(label) for label in bins}
    for row in rows:
        position = row.get("target_position")
        if position not in POSITIONS:
            raise InputError(
                f"row {row.get('candidate_id', '?')} has target_position {position!r}; "
                f"expected one of {', '.join(POSITIONS)}"
            )
        label = str(row.get("length_bin"))
        labels.add(label)
        counts[(label, position)] += 1
    return {
        label: {p: counts[(label, p)] for p in POSITIONS}
        for label in sorted(labels, key=bin_sort_key)
    }
