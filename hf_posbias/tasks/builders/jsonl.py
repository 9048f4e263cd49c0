"""Bring-your-own position task: records of ``query``, ``document`` and ``evidence_start``.

Each record (a dict, or one JSONL line) has

* ``query`` (str), ``document`` (str), ``evidence_start`` (int, character offset of the evidence
  in ``document``) — required;
* ``evidence_end`` (int; default ``evidence_start``, a point), ``doc_id`` (str; default a hash of
  the document text), ``query_id`` (str; default a hash of query, document id and offset),
  ``title`` (str) — optional.

Documents are deduplicated into the corpus (by ``doc_id``, else by text). Optional distractor
documents (``id``, ``text``, optional ``title``) are added to the corpus without queries.

Two kinds of problems, handled consistently:

* **structural** (malformed JSON, not an object, missing or unknown field, wrong type, one
  ``doc_id`` with two texts) → :class:`~hf_posbias.errors.InputError` naming the record/line;
* **content** (empty query or document, ``evidence_start`` outside the document,
  ``evidence_end`` before the start or past the end, duplicate query) → the record is skipped
  and counted in the build report (printed by the CLI, kept in ``task.json``).

Example:
    >>> from hf_posbias.tasks.builders.jsonl import build_from_records
    >>> doc = "Paris is the capital of France. " * 3
    >>> data = build_from_records([
    ...     {"query": "capital of France?", "document": doc, "evidence_start": 0},
    ...     {"query": "again?", "document": doc, "evidence_start": 70, "evidence_end": 95},
    ... ], name="Toy")
    >>> data.bucket_counts(), len(data.corpus)
    ({'begin': 1, 'middle': 0, 'end': 1}, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import iter_jsonl_objects
from hf_posbias.settings import setting, shared_setting
from hf_posbias.tasks.benchmark_registry import Benchmark
from hf_posbias.tasks.bucketing import Anchor, IntervalBuckets
from hf_posbias.tasks.builders.common import (
    BuilderOutput,
    RelativeBuckets,
    TaskAssembler,
    settings_build,
    stable_id,
)
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

if TYPE_CHECKING:
    from typing import Unpack

REQUIRED_FIELDS = ("query", "document", "evidence_start")
OPTIONAL_FIELDS = ("evidence_end", "doc_id", "query_id", "title")


def _int_field(record: Mapping[str, Any], key: str, where: str) -> int:
    value = record[key]
    # bool is an int subclass; a JSON true/false offset is a mistake, not 1/0.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: {key!r} must be an integer, got {value!r}")
    return value


def _str_field(record: Mapping[str, Any], key: str, where: str) -> str:
    value = record[key]
    if not isinstance(value, str):
        raise InputError(f"{where}: {key!r} must be a string, got {type(value).__name__}")
    return value


DEFAULT_DESCRIPTION = "User-supplied queries with located evidence, bucketed by position."


class RecordTaskOptions(TypedDict, total=False):
    """The ``task.json`` metadata and the anchor of :func:`build_from_records`, which
    :func:`build_from_jsonl` passes on."""

    description: str
    license: str
    reference: str
    citation: str
    anchor: Anchor


Records = Iterable[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]
"""Records, or records by the place they come from (``file:line``), which errors then name."""


def _labelled(records: Records, what: str) -> Iterable[tuple[str, Any]]:
    if isinstance(records, Mapping):
        return records.items()
    return ((f"{what} {i}", r) for i, r in enumerate(records, start=1))


def build_from_records(
    records: Records,
    buckets: str | IntervalBuckets = "thirds",
    name: str = "CustomPositions",
    description: str = DEFAULT_DESCRIPTION,
    distractors: Records | None = None,
    source: str = "",
    license: str = "not specified",
    reference: str = "",
    citation: str = "",
    anchor: Anchor = "start",
) -> PositionTaskData:
    """A position task from in-memory records (see the module docstring for the fields).

    Args:
        records: dicts with ``query``, ``document``, ``evidence_start`` (+ optional fields);
            given as ``{place: record}``, errors name the place (else ``record <n>``).
        buckets: ``"thirds"``, ``"posir20"``, relative edges ``"0,0.2,0.5,1"`` or a rule object.
        name: task name (``task.json``).
        description: task description.
        distractors: extra corpus documents ``{id, text[, title]}`` without queries (also as
            ``{place: document}``).
        source, license, reference, citation: metadata copied to ``task.json``.
        anchor: ``"start"`` buckets by the evidence start, ``"center"`` by its midpoint.

    Returns:
        The validated task; ``info.extra['build_report']`` counts what was skipped and why.

    Example:
        >>> data = build_from_records(
        ...     [{"query": "q", "document": "abcdefghij", "evidence_start": 5}],
        ...     buckets="0,0.5,1")
        >>> data.queries[0]["bucket"]
        '0.5-1'
    """
    asm = TaskAssembler(buckets, anchor=anchor, source=source or name)
    allowed = set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)
    for where, record in _labelled(records, "record"):
        if not isinstance(record, Mapping):
            raise InputError(f"{where}: expected an object, got {type(record).__name__}")
        missing = [k for k in REQUIRED_FIELDS if k not in record]
        if missing:
            raise InputError(f"{where}: missing field(s) {', '.join(map(repr, missing))}")
        unknown = sorted(set(record) - allowed)
        if unknown:
            raise InputError(
                f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; allowed: "
                f"{', '.join(REQUIRED_FIELDS + OPTIONAL_FIELDS)}"
            )
        asm.report.read += 1
        query = _str_field(record, "query", where)
        document = _str_field(record, "document", where)
        start = _int_field(record, "evidence_start", where)
        end = _int_field(record, "evidence_end", where) if "evidence_end" in record else start
        title = _str_field(record, "title", where) if "title" in record else ""
        doc_id = (
            _str_field(record, "doc_id", where)
            if "doc_id" in record
            else stable_id("doc", document)
        )
        if not document.strip():
            asm.report.drop("empty document")
            continue
        if not 0 <= start < len(document):
            asm.report.drop("evidence_start outside the document")
            continue
        if not start <= end <= len(document):
            asm.report.drop("evidence_end before evidence_start or past the document end")
            continue
        asm.add_document(doc_id, document, title, where=where)
        query_id = (
            _str_field(record, "query_id", where)
            if "query_id" in record
            else stable_id("q", query, doc_id, str(start))
        )
        asm.add_query(query_id, query, [doc_id], start, end)
    n_distractors = 0
    for where, record in _labelled(distractors or (), "distractor"):
        if not isinstance(record, Mapping) or "id" not in record or "text" not in record:
            raise InputError(f"{where}: a distractor needs 'id' and 'text'")
        if not isinstance(record["text"], str):
            raise InputError(f"{where}: 'text' must be a string")
        if not asm.has_document(str(record["id"])):
            n_distractors += 1
        asm.add_document(str(record["id"]), record["text"], record.get("title") or "", where)
    asm.report.note("distractor_documents", n_distractors)
    info = TaskInfo(
        name=name,
        description=description,
        buckets=[],
        source=source,
        license=license,
        reference=reference,
        citation=citation,
    )
    return asm.finish(info)


def build_from_jsonl(
    path: str | Path,
    buckets: str | IntervalBuckets = "thirds",
    name: str | None = None,
    distractors: str | Path | None = None,
    **options: Unpack[RecordTaskOptions],
) -> PositionTaskData:
    """:func:`build_from_records` over a JSONL file (and a distractor JSONL); errors name
    ``file:line``; ``options`` are :class:`RecordTaskOptions`.

    Example:
        >>> import json, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "mine.jsonl")
        >>> with open(path, "w") as f:
        ...     _ = f.write(json.dumps({"query": "q", "document": "abc", "evidence_start": 2}))
        >>> build_from_jsonl(path).bucket_counts()["end"]
        1
    """
    path = Path(path)
    return build_from_records(
        dict(iter_jsonl_objects(path)),
        buckets,
        name or path.stem,
        distractors=dict(iter_jsonl_objects(distractors)) if distractors is not None else None,
        source=str(path),
        **options,
    )


@dataclass(kw_only=True)
class FromJsonlSettings(RelativeBuckets, BuilderOutput):
    """``posbias benchmark build jsonl``."""

    input: str = setting(
        "JSONL with query, document, evidence_start (+ evidence_end, doc_id, query_id, title)"
    )
    distractors: str | None = setting("JSONL of extra documents (id, text)", default=None)
    name: str | None = shared_setting("name", default=None)


BENCHMARK = Benchmark(
    name="jsonl",
    help="your own JSONL (query, document, evidence_start[, evidence_end, doc_id]) → task",
    cards=(),
    settings=FromJsonlSettings,
    build=settings_build(build_from_jsonl),
    order=90,
)
