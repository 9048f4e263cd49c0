"""The on-disk format of a position-bucketed retrieval set (what every builder writes).

A task folder holds a corpus, queries that each carry the position bucket of their evidence,
relevance judgements and a ``task.json`` of metadata::

    corpus.parquet   id, title, text
    queries.parquet  id, text, bucket, evidence_start, evidence_end, doc_length
    qrels.parquet    query_id, doc_id, score
    task.json        name, description, buckets (ordered), bucket_scheme, source, license,
                     reference, citation, main_score, (optional) extra

``evidence_start``/``evidence_end`` are character offsets of the evidence in the relevant
document (``-1`` when the source gives only a bucket label, as FineWeb-PosQ does); ``doc_length``
is that document's length in characters. Builders write it with :meth:`PositionTaskData.save`;
the MTEB tasks, the mirror-reversal diagnostic and ``posbias evaluate`` read it with
:meth:`PositionTaskData.load`, which validates it and names any problem in one line.

Example:
    >>> import tempfile
    >>> from hf_posbias.evaluation.taskdata import PositionTaskData, TaskInfo
    >>> data = PositionTaskData(
    ...     info=TaskInfo(name="Toy", description="toy", buckets=["begin", "end"]),
    ...     corpus=[{"id": "d1", "title": "", "text": "alpha beta"}],
    ...     queries=[{"id": "q1", "text": "alpha", "bucket": "begin", "evidence_start": 0,
    ...               "evidence_end": 5, "doc_length": 10}],
    ...     qrels=[{"query_id": "q1", "doc_id": "d1", "score": 1}],
    ... )
    >>> folder = data.save(tempfile.mkdtemp())
    >>> PositionTaskData.load(folder).queries_by_bucket()["begin"][0]["id"]
    'q1'
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.shards import read_parquet_rows, write_json, write_parquet

CORPUS_COLUMNS = ("id", "title", "text")
QUERY_COLUMNS = ("id", "text", "bucket", "evidence_start", "evidence_end", "doc_length")
QREL_COLUMNS = ("query_id", "doc_id", "score")


@dataclass
class TaskInfo:
    """Metadata of a position task (becomes the MTEB ``TaskMetadata``)."""

    name: str
    description: str
    buckets: list[str]
    bucket_scheme: str = "thirds"
    source: str = ""
    license: str = "not specified"
    reference: str = ""
    citation: str = ""
    main_score: str = "ndcg_at_10"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PositionTaskData:
    """Corpus, bucketed queries and qrels of one position task."""

    info: TaskInfo
    corpus: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    qrels: list[dict[str, Any]]

    def queries_by_bucket(self) -> dict[str, list[dict[str, Any]]]:
        """Queries grouped by bucket, in the task's bucket order (empty buckets included)."""
        grouped: dict[str, list[dict[str, Any]]] = {b: [] for b in self.info.buckets}
        for query in self.queries:
            grouped[query["bucket"]].append(query)
        return grouped

    def relevant_docs(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: score}}`` as MTEB and pytrec_eval expect."""
        out: dict[str, dict[str, int]] = {}
        for qrel in self.qrels:
            out.setdefault(str(qrel["query_id"]), {})[str(qrel["doc_id"])] = int(qrel["score"])
        return out

    def bucket_counts(self) -> dict[str, int]:
        """Number of queries per bucket (0 for empty buckets)."""
        counts = Counter(q["bucket"] for q in self.queries)
        return {b: counts.get(b, 0) for b in self.info.buckets}

    def validate(self, where: str = "task") -> None:
        """Check the contract; raise :class:`InputError` naming the first problem."""
        for rows, columns, label in (
            (self.corpus, CORPUS_COLUMNS, "corpus"),
            (self.queries, QUERY_COLUMNS, "queries"),
            (self.qrels, QREL_COLUMNS, "qrels"),
        ):
            if rows:
                missing = [c for c in columns if c not in rows[0]]
                if missing:
                    raise InputError(f"{where}: {label} is missing column(s) {missing}")
        if not self.corpus:
            raise InputError(f"{where}: the corpus is empty")
        if not self.queries:
            raise InputError(f"{where}: there are no queries")
        if not self.info.buckets:
            raise InputError(f"{where}: task.json lists no buckets")
        doc_ids = [str(d["id"]) for d in self.corpus]
        if len(set(doc_ids)) != len(doc_ids):
            dup = next(i for i, n in Counter(doc_ids).items() if n > 1)
            raise InputError(f"{where}: duplicate corpus id {dup!r}")
        known_buckets = set(self.info.buckets)
        judged = self.relevant_docs()
        doc_set = set(doc_ids)
        for query in self.queries:
            if query["bucket"] not in known_buckets:
                raise InputError(
                    f"{where}: query {query['id']!r} has bucket {query['bucket']!r}, "
                    f"not one of {self.info.buckets}"
                )
            if str(query["id"]) not in judged:
                raise InputError(f"{where}: query {query['id']!r} has no qrels")
        for qid, docs in judged.items():
            unknown = [d for d in docs if d not in doc_set]
            if unknown:
                raise InputError(f"{where}: qrels of {qid!r} name unknown document {unknown[0]!r}")

    def save(self, folder: str | Path) -> Path:
        """Validate and write the task folder; returns its path."""
        out = Path(folder)
        self.validate(str(out))
        out.mkdir(parents=True, exist_ok=True)
        write_parquet(
            [{c: d.get(c, "") for c in CORPUS_COLUMNS} for d in self.corpus], out / "corpus.parquet"
        )
        write_parquet(
            [{c: q[c] for c in QUERY_COLUMNS} for q in self.queries], out / "queries.parquet"
        )
        write_parquet([{c: r[c] for c in QREL_COLUMNS} for r in self.qrels], out / "qrels.parquet")
        write_json(out / "task.json", {**asdict(self.info), "bucket_counts": self.bucket_counts()})
        return out

    @classmethod
    def load(cls, folder: str | Path) -> PositionTaskData:
        """Read and validate a task folder written by :meth:`save`."""
        path = Path(folder)
        meta_path = path / "task.json"
        if not meta_path.exists():
            raise InputError(f"{path} is not a position task folder (no task.json)")
        for name in ("corpus.parquet", "queries.parquet", "qrels.parquet"):
            if not (path / name).exists():
                raise InputError(f"{path}: missing {name}")
        meta = json.loads(meta_path.read_text())
        meta.pop("bucket_counts", None)
        try:
            info = TaskInfo(**meta)
        except TypeError as err:
            raise InputError(f"{meta_path}: unexpected task.json fields ({err})") from None
        data = cls(
            info=info,
            corpus=read_parquet_rows(path / "corpus.parquet"),
            queries=read_parquet_rows(path / "queries.parquet"),
            qrels=read_parquet_rows(path / "qrels.parquet"),
        )
        data.validate(str(path))
        return data
