"""What every builder shares: an assembler that dedups documents, buckets queries and counts drops.

A builder reads its source format, then feeds documents and evidence-located queries into a
:class:`TaskAssembler`. The assembler assigns each query to exactly one bucket of its
:class:`~hf_posbias.tasks.bucketing.IntervalBuckets` rule, counts every record it has to
drop
(with the reason) and finally returns a validated
:class:`~hf_posbias.tasks.taskdata.PositionTaskData` whose ``task.json`` ``extra``
carries the
bucket rule and the build report. Nothing is dropped silently.

Example:
    >>> from hf_posbias.tasks.builders.common import TaskAssembler
    >>> from hf_posbias.tasks.bucketing import THIRDS
    >>> from hf_posbias.tasks.taskdata import TaskInfo
    >>> asm = TaskAssembler(THIRDS)
    >>> asm.add_document("d1", "alpha beta gamma delta epsilon zeta")
    'd1'
    >>> asm.add_query("q1", "zeta?", ["d1"], evidence_start=31, evidence_end=35)
    True
    >>> asm.add_query("q2", "", ["d1"], evidence_start=0, evidence_end=5)
    False
    >>> data = asm.finish(TaskInfo(name="Toy", description="toy", buckets=[]))
    >>> data.bucket_counts(), asm.report.dropped
    ({'begin': 0, 'middle': 0, 'end': 1}, {'empty query text': 1})
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hf_posbias.errors import InputError
from hf_posbias.settings import Settings, setting, shared_setting
from hf_posbias.tasks.benchmark_registry import TaskCard
from hf_posbias.tasks.bucketing import (
    THIRDS,
    Anchor,
    IntervalBuckets,
    parse_buckets,
    relative_position,
)
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

logger = logging.getLogger(__name__)


def stable_id(prefix: str, *parts: str, length: int = 16) -> str:
    """A content-derived id (``prefix-<sha1 hex>``): identical text gives the identical id.

    Example:
        >>> stable_id("doc", "hello")
        'doc-aaf4c61ddcc5e8a2'
    """
    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"{prefix}-{digest[:length]}"


def parse_int_list(value: Any) -> list[int]:
    """Integers out of ``"[1 9]"``, ``"[4]"``, ``"[ 5152028 11705328]"``, ``[1, 2]`` or ``""``.

    Example:
        >>> parse_int_list("[ 1 9]"), parse_int_list("[]"), parse_int_list(None)
        ([1, 9], [], [])
    """
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    if isinstance(value, float):
        return [] if value != value else [int(value)]  # NaN from pandas = missing
    return [int(m) for m in re.findall(r"-?\d+", str(value))]


def require_fields(
    have: Iterable[str], needed: Sequence[str], where: str, *, columns: bool = False
) -> None:
    """Refuse, in one line naming ``where``, a record that lacks a ``needed`` field (with
    ``columns``: a table that lacks a column; the columns it has are listed).

    Example:
        >>> require_fields({"id": 1, "text": "x"}, ("id", "text"), "a.jsonl:1")
        >>> require_fields(["id"], ("id", "text"), "t.parquet", columns=True)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: t.parquet: missing column(s) ['text']; has ['id']
    """
    have = list(have)
    missing = [k for k in needed if k not in have]
    if missing and columns:
        raise InputError(f"{where}: missing column(s) {missing}; has {have}")
    if missing:
        raise InputError(f"{where}: missing field(s) {missing}")


def join_sentences(sentences: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """Sentences joined by one space, and each sentence's ``(start, end)`` in the joined text:
    how a document rebuilt from its sentences keeps every evidence offset exact.

    Example:
        >>> join_sentences(["One.", "Two words."])
        ('One. Two words.', [(0, 4), (5, 15)])
    """
    spans, pos = [], 0
    for sentence in sentences:
        spans.append((pos, pos + len(sentence)))
        pos += len(sentence) + 1
    return " ".join(sentences), spans


def locate(text: str, sentence: str, start_at: int = 0) -> tuple[int, int] | None:
    """Character span of ``sentence`` in ``text``: exact match first, then whitespace-insensitive.

    Example:
        >>> locate("One. Two  words here.", "Two words here.")
        (5, 21)
    """
    needle = sentence.strip()
    if not needle:
        return None
    pos = text.find(needle, start_at)
    if pos >= 0:
        return pos, pos + len(needle)
    # Dumps re-flow whitespace (double spaces, newlines) differently from the annotation files.
    tokens = needle.split()
    match = re.compile(r"\s+".join(re.escape(t) for t in tokens)).search(text, start_at)
    return (match.start(), match.end()) if match else None


@dataclass
class BuildReport:
    """Counts of what a builder read, kept and dropped (by reason), plus notes."""

    source: str
    read: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    def drop(self, reason: str, n: int = 1) -> None:
        """Count ``n`` records dropped for ``reason``."""
        self.dropped[reason] = self.dropped.get(reason, 0) + n

    def note(self, key: str, value: Any) -> None:
        """Record a fact about the build that is not a drop (e.g. multi-evidence claims)."""
        self.notes[key] = value

    def count_note(self, key: str, n: int = 1) -> None:
        """Increment a counted note."""
        self.notes[key] = int(self.notes.get(key, 0)) + n

    def to_dict(self) -> dict[str, Any]:
        """JSON form for ``task.json`` ``extra['build_report']``."""
        return {
            "source": self.source,
            "read": self.read,
            "dropped": dict(sorted(self.dropped.items())),
            "notes": dict(sorted(self.notes.items())),
        }


def format_report(data: PositionTaskData) -> str:
    """Human-readable summary of a built task: sizes, per-bucket counts, drops, notes.

    Example:
        >>> from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo
        >>> d = PositionTaskData(TaskInfo("T", "t", ["a"]), [{"id": "d", "title": "", "text": "x"}],
        ...     [{"id": "q", "text": "x", "bucket": "a", "evidence_start": 0, "evidence_end": 1,
        ...       "doc_length": 1}], [{"query_id": "q", "doc_id": "d", "score": 1}])
        >>> print(format_report(d).splitlines()[0])
        T: 1 queries, 1 documents, 1 qrels
    """
    lines = [
        f"{data.info.name}: {len(data.queries)} queries, {len(data.corpus)} documents, "
        f"{len(data.qrels)} qrels"
    ]
    counts = data.bucket_counts()
    width = max(len(b) for b in counts) if counts else 0
    lines.append(f"per-bucket queries ({data.info.bucket_scheme}):")
    lines.extend(f"  {b:<{width}}  {n}" for b, n in counts.items())
    report = data.info.extra.get("build_report", {})
    dropped = report.get("dropped", {})
    total = sum(dropped.values())
    lines.append(f"dropped: {total}" + ("" if total else " (nothing)"))
    lines.extend(f"  {reason}: {n}" for reason, n in dropped.items())
    for key, value in report.get("notes", {}).items():
        lines.append(f"note: {key}: {value}")
    return "\n".join(lines)


class TaskAssembler:
    """Collects a corpus, bucketed queries and qrels; counts every drop.

    Args:
        buckets: the bucketing rule, or its CLI spelling (``thirds``, ``posir20``, relative
            edges such as ``0,0.2,0.5,1``: :func:`~hf_posbias.tasks.bucketing.parse_buckets`).
        anchor: which point of the evidence span a relative rule uses (``start``/``center``).
        source: name of the source for the report.
    """

    def __init__(
        self, buckets: str | IntervalBuckets, anchor: Anchor = "start", source: str = ""
    ) -> None:
        self.buckets = parse_buckets(buckets)
        self.anchor: Anchor = anchor
        self.report = BuildReport(source=source)
        self._corpus: dict[str, dict[str, Any]] = {}
        self.queries: list[dict[str, Any]] = []
        self.qrels: list[dict[str, Any]] = []
        self._query_ids: set[str] = set()

    # -- documents -------------------------------------------------------------------------
    def add_document(self, doc_id: str, text: str, title: str = "", where: str = "") -> str:
        """Add a document once; the same id with a different text is a structural error."""
        doc_id = str(doc_id)
        known = self._corpus.get(doc_id)
        if known is not None:
            if known["text"] != text:
                raise InputError(
                    f"{where or 'corpus'}: document id {doc_id!r} appears twice with different "
                    "texts"
                )
            return doc_id
        self._corpus[doc_id] = {"id": doc_id, "title": title or "", "text": text}
        return doc_id

    def has_document(self, doc_id: str) -> bool:
        """Whether ``doc_id`` is in the corpus."""
        return str(doc_id) in self._corpus

    def document(self, doc_id: str) -> dict[str, Any]:
        """The corpus row of ``doc_id``."""
        return self._corpus[str(doc_id)]

    @property
    def corpus(self) -> list[dict[str, Any]]:
        """Corpus rows in insertion order."""
        return list(self._corpus.values())

    # -- queries ---------------------------------------------------------------------------
    def add_query(
        self,
        query_id: str,
        text: str,
        doc_ids: Sequence[str],
        evidence_start: int,
        evidence_end: int,
        doc_length: int | None = None,
        bucket_value: float | None = None,
        bucket: str | None = None,
    ) -> bool:
        """Bucket one query and add it with qrels to ``doc_ids`` (the first holds the evidence).

        The bucket comes from, in order: an explicit ``bucket`` label (sources that only give a
        label, e.g. FineWeb-PosQ), ``bucket_value`` (absolute rules: character start, token
        length), or the relative position of the evidence in ``doc_ids[0]``. Returns whether the
        query was kept; a drop is counted with its reason.
        """
        query_id = str(query_id)
        if not isinstance(text, str) or not text.strip():
            self.report.drop("empty query text")
            return False
        if query_id in self._query_ids:
            self.report.drop("duplicate query id")
            return False
        docs = list(dict.fromkeys(str(d) for d in doc_ids))
        missing = [d for d in docs if d not in self._corpus]
        if not docs or missing:
            self.report.drop("relevant document not in corpus")
            return False
        length = len(self._corpus[docs[0]]["text"]) if doc_length is None else int(doc_length)
        if bucket is None:
            if bucket_value is None:
                if length <= 0:
                    self.report.drop("empty relevant document")
                    return False
                if not 0 <= evidence_start < length or evidence_end < evidence_start:
                    self.report.drop("evidence offset outside the document")
                    return False
                bucket_value = relative_position(
                    evidence_start, min(evidence_end, length), length, self.anchor
                )
            bucket = self.buckets.assign(bucket_value)
            if bucket is None:
                self.report.drop(f"outside the bucket range ({self.buckets.rule()})")
                return False
        elif bucket not in self.buckets.labels:
            self.report.drop("unknown position label")
            return False
        self._query_ids.add(query_id)
        self.queries.append(
            {
                "id": query_id,
                "text": text,
                "bucket": bucket,
                "evidence_start": int(evidence_start),
                "evidence_end": int(evidence_end),
                "doc_length": length,
            }
        )
        self.qrels.extend({"query_id": query_id, "doc_id": d, "score": 1} for d in docs)
        return True

    def add_located_query(
        self,
        query_id: str,
        text: str,
        located: Sequence[tuple[str, int, int]],
        spread_note: str,
    ) -> bool:
        """Add a query with several located evidences ``(doc_id, start, end)``.

        The first evidence decides the bucket; every evidence document is relevant. How many
        kept queries have evidences in different buckets is counted under ``spread_note`` (a
        single bucket per query is a simplification the report makes visible).
        """
        docs = list(dict.fromkeys(d for d, _, _ in located))
        first_doc, start, end = located[0]
        kept = self.add_query(query_id, text, docs, start, end)
        if kept:
            seen = {
                self.buckets.assign(
                    relative_position(s, e, len(self._corpus[d]["text"]), self.anchor)
                )
                for d, s, e in located
            }
            self.report.count_note(spread_note, int(len(seen) > 1))
        return kept

    # -- result ----------------------------------------------------------------------------
    def finish(self, info: TaskInfo, extra: dict[str, Any] | None = None) -> PositionTaskData:
        """The validated task; ``info.buckets``/``bucket_scheme`` come from the rule."""
        if not self.queries:
            dropped = ", ".join(f"{r}: {n}" for r, n in sorted(self.report.dropped.items()))
            raise InputError(
                f"{self.report.source or info.name}: no usable queries"
                + (f" (dropped — {dropped})" if dropped else "")
            )
        info.buckets = list(self.buckets.labels)
        info.bucket_scheme = self.buckets.scheme
        info.extra = {
            **info.extra,
            **(extra or {}),
            "buckets": self.buckets.describe(),
            "position_anchor": self.anchor,
            "build_report": self.report.to_dict(),
        }
        data = PositionTaskData(info, self.corpus, self.queries, self.qrels)
        data.validate(info.name)
        for bucket, n in data.bucket_counts().items():
            logger.debug("%s %s: %d queries", info.name, bucket, n)
        return data


def evidence_card(
    *,
    buckets: tuple[str, ...] = THIRDS.labels,
    annotations_creators: str = "human-annotated",
    task_subtypes: tuple[str, ...] = ("Claim verification",),
    **facts: Any,
) -> TaskCard:
    """The :class:`~hf_posbias.tasks.benchmark_registry.TaskCard` of an evidence-subset benchmark
    (SciFact, Climate-FEVER, FEVER, HotpotQA): the family's defaults (thirds of the annotated
    evidence's position, human-annotated evidence, claim verification) are stated here once;
    ``facts`` are the card's own fields (name, description, reference, citation, licence, dates,
    source).

    Example:
        >>> card = evidence_card(name="X-Evidence", class_name="XEvidence", description="d",
        ...     reference="https://x.org", citation="", license="mit", adapted_from=("X",))
        >>> card.buckets, card.annotations_creators, card.task_subtypes
        (('begin', 'middle', 'end'), 'human-annotated', ('Claim verification',))
    """
    return TaskCard(
        buckets=buckets,
        annotations_creators=annotations_creators,
        task_subtypes=task_subtypes,
        **facts,
    )


def sample_task_info(
    card: TaskCard, tiny_card: TaskCard, *, sample: str | None, description: str, source: str
) -> TaskInfo:
    """The ``task.json`` header of a benchmark built whole or as its tiny sample (SQuAD-PosQ,
    FineWeb-PosQ): ``card``'s name and ``description.``, or, when ``sample`` describes the tiny
    sample, ``tiny_card``'s name and ``description; sample.``.

    Example:
        >>> from hf_posbias.tasks.builders.squad import CARD, TINY_CARD
        >>> info = sample_task_info(CARD, TINY_CARD, sample="10 q", description="Q", source="s")
        >>> info.name, info.description
        ('SQuAD-PosQ-tiny', 'Q; 10 q.')
    """
    chosen = card if sample is None else tiny_card
    return chosen.task_info(
        name=chosen.name,
        description=f"{description}." if sample is None else f"{description}; {sample}.",
        source=source,
    )


BUCKETS_HELP = "bucket rule: thirds, posir20, or relative edges such as 0,0.2,0.5,1"


@dataclass(kw_only=True)
class BuilderOutput(Settings):
    """The task folder every source of ``posbias benchmark build`` writes (each builder adds
    ``--input``).

    A builder's other settings are named as its builder function's parameters, so
    :func:`settings_build` passes them on by name; a source whose flags say something else
    overrides :meth:`builder_kwargs`.
    """

    out: str = shared_setting("out")

    def builder_kwargs(self) -> dict[str, Any]:
        """The builder function's arguments: every setting but ``out``, under its own name
        (``input`` is the builder's first, positional, argument)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "out"}


def settings_build(
    builder: Callable[..., PositionTaskData],
) -> Callable[[BuilderOutput], PositionTaskData]:
    """A :class:`~hf_posbias.tasks.benchmark_registry.Benchmark`'s ``build`` from its builder
    function: ``builder(input, **other_settings)`` (:meth:`BuilderOutput.builder_kwargs`).

    Example:
        >>> from hf_posbias.tasks.builders.hotpotqa import HotpotQASettings, build_hotpotqa
        >>> HotpotQASettings(input="h.json", out="t").builder_kwargs()
        {'buckets': 'thirds', 'anchor': 'start', 'input': 'h.json', 'split': 'validation'}
        >>> settings_build(build_hotpotqa).__name__
        'build_hotpotqa_from_settings'
    """

    def build(settings: BuilderOutput) -> PositionTaskData:
        kwargs = settings.builder_kwargs()
        return builder(kwargs.pop("input"), **kwargs)

    build.__name__ = build.__qualname__ = f"{builder.__name__}_from_settings"
    return build


@dataclass(kw_only=True)
class RelativeBuckets(Settings):
    """``--buckets`` (a relative rule) and ``--anchor`` (which point of the span is bucketed)."""

    buckets: str = setting(BUCKETS_HELP, default="thirds")
    anchor: Literal["start", "center"] = shared_setting("anchor", default="start")


def split_labels(value: str) -> list[str]:
    """``"SUPPORTS,REFUTES"`` → ``["SUPPORTS", "REFUTES"]`` (empty items dropped).

    Example:
        >>> split_labels("A, B,,")
        ['A', 'B']
    """
    return [x.strip() for x in value.split(",") if x.strip()]


def load_rows(source: Any, split: str = "train", config: str | None = None) -> list[dict[str, Any]]:
    """Rows of a table from a local file (``.jsonl``/``.json``/``.parquet``), a local folder laid
    out like a Hub dataset repo, or a Hub dataset id (:func:`hf_posbias.rows.readers.read_rows`).

    A local file is one split; ``split`` selects the split of a folder or Hub id.
    """
    from hf_posbias.rows.readers import read_rows

    return read_rows(source, split=split, config=config)
