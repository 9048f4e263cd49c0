"""The on-disk format of a position-bucketed retrieval set (what every builder writes).

A task folder holds a corpus, queries that each carry the position bucket of their evidence,
relevance judgements and a ``task.json`` of metadata::

    corpus.parquet   id, title, text
    queries.parquet  id, text, bucket, evidence_start, evidence_end, doc_length
                     (optional) extra_buckets, doc_tokens
    qrels.parquet    query_id, doc_id, score
    task.json        name, description, buckets (ordered), bucket_scheme, source, license,
                     reference, citation, main_score, (optional) extra

``evidence_start``/``evidence_end`` are character offsets of the evidence in the relevant
document (``-1`` when the source gives only a bucket label, as FineWeb-PosQ does); ``doc_length``
is that document's length in characters. Two optional query columns exist for the published
scoring protocols: ``extra_buckets`` (other buckets the evidence also lies in: a FineWeb-PosQ
question labelled with several thirds) and ``doc_tokens`` (the document's token length as the
source gives it, PosIR's ``pos_token_length``); folders without them stay valid. Builders
write it with :meth:`PositionTaskData.save`;
the MTEB tasks, the mirror-reversal diagnostic and ``posbias evaluate`` read it with
:meth:`PositionTaskData.load`, which validates it and names any problem in one line.

Example:
    >>> import tempfile
    >>> from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo
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

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from hf_posbias.errors import InputError
from hf_posbias.rows.arrow import TableRows, select_columns
from hf_posbias.rows.readers import read_parquet, read_parquet_rows
from hf_posbias.setting_values import DEFAULT_SEED
from hf_posbias.shards import write_json, write_parquet

if TYPE_CHECKING:
    from hf_posbias.tasks.beir import RetrievalData

CORPUS_COLUMNS = ("id", "title", "text")
QUERY_COLUMNS = ("id", "text", "bucket", "evidence_start", "evidence_end", "doc_length")
QREL_COLUMNS = ("query_id", "doc_id", "score")
OPTIONAL_QUERY_COLUMNS: dict[str, Any] = {"extra_buckets": [], "doc_tokens": -1}
"""Optional query columns and the value a query without them has."""


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
    """Corpus, bucketed queries and qrels of one position task.

    ``corpus`` is any read-only sequence of row dicts: a list, or, for a folder read by
    :meth:`load`, a :class:`~hf_posbias.rows.arrow.TableRows` over the arrow table of its
    ``corpus.parquet`` (the corpus held once, as arrow; the evaluation hands the same table
    to mteb, :func:`corpus_table`). Code that needs another corpus builds a new list.
    """

    info: TaskInfo
    corpus: Sequence[dict[str, Any]]
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

    def retrieval_data(self, source: str = "") -> RetrievalData[tuple[str, str]]:
        """The task as a plain retrieval set (corpus ``id → (title, text)``, queries, qrels) of
        its one split (``extra['split']``, ``test`` when absent); positions are left out. The
        corpus is the table of :func:`corpus_table` (a folder's own, shared) looked up by id.

        Example:
            >>> d = PositionTaskData(TaskInfo("T", "t", ["a"]), [{"id": "d", "text": "x"}],
            ...     [{"id": "q", "text": "x?", "bucket": "a"}],
            ...     [{"query_id": "q", "doc_id": "d", "score": 1}])
            >>> r = d.retrieval_data()
            >>> r.split, dict(r.corpus), r.judged_queries()
            ('test', {'d': ('', 'x')}, ['q'])
        """
        from hf_posbias.rows.arrow import RowsById
        from hf_posbias.tasks.beir import RetrievalData, title_text

        return RetrievalData(
            self.info.name,
            str(self.info.extra.get("split") or "test"),
            RowsById(corpus_table(self.corpus), title_text),
            {str(q["id"]): str(q["text"]) for q in self.queries},
            self.relevant_docs(),
            source,
            format="task",
        )

    def bucket_counts(self) -> dict[str, int]:
        """Number of queries per bucket (0 for empty buckets)."""
        counts = Counter(q["bucket"] for q in self.queries)
        return {b: counts.get(b, 0) for b in self.info.buckets}

    def length_statistics(self) -> dict[str, Any]:
        """What Zeng et al.'s Table 2 gives of a dataset: the number of queries, their length
        in words (mean, standard deviation), the number of passages, their length in words
        (min, max, mean, standard deviation) and the queries per bucket. Words are
        whitespace-separated tokens; a standard deviation is the population's (Zeng et al. say
        neither: the project's reading).

        Example:
            >>> d = PositionTaskData(TaskInfo("T", "t", ["a", "b"]),
            ...     [{"id": "d", "text": "one two three"}, {"id": "e", "text": "four five"}],
            ...     [{"id": "q", "text": "x y?", "bucket": "a"}], [])
            >>> stats = d.length_statistics()
            >>> stats["passage_words"], stats["buckets"]
            ({'min': 2, 'max': 3, 'mean': 2.5, 'std': 0.5}, {'a': 1, 'b': 0})
        """
        import statistics

        def summary(lengths: list[int], extremes: bool) -> dict[str, Any]:
            if not lengths:
                return {}
            spread = {"mean": statistics.fmean(lengths), "std": statistics.pstdev(lengths)}
            return {"min": min(lengths), "max": max(lengths), **spread} if extremes else spread

        query_words = [len(str(q["text"]).split()) for q in self.queries]
        passage_words = [len(str(d["text"]).split()) for d in self.corpus]
        return {
            "n_queries": len(query_words),
            "query_words": summary(query_words, extremes=False),
            "n_passages": len(passage_words),
            "passage_words": summary(passage_words, extremes=True),
            "buckets": self.bucket_counts(),
        }

    def span_problems(self) -> dict[str, int]:
        """Queries whose evidence span does not fit their document, counted by reason.

        ``evidence_start = -1`` (label-only sources) is not a problem. The folder stays
        loadable: evaluation reports these counts as warnings and clips relative positions.

        Example:
            >>> d = PositionTaskData(TaskInfo("T", "t", ["a"]), [], [
            ...     {"id": "q", "bucket": "a", "evidence_start": 5, "evidence_end": 12,
            ...      "doc_length": 10}], [])
            >>> d.span_problems()
            {'evidence span outside the document': 1}
        """
        problems: dict[str, int] = {}
        for query in self.queries:
            start, end = int(query["evidence_start"]), int(query["evidence_end"])
            length = int(query["doc_length"])
            if start < 0:
                continue
            if end < start:
                reason = "evidence end before its start"
            elif length <= 0 or start >= length or end > length:
                reason = "evidence span outside the document"
            else:
                continue
            problems[reason] = problems.get(reason, 0) + 1
        return problems

    def sample_queries(
        self, per_bucket: int, seed: int = DEFAULT_SEED, name: str | None = None
    ) -> Self:
        """A seeded sample of at most ``per_bucket`` queries from every bucket, every document
        kept (so a costly model scores a subset whose ranking problem is the full one's).

        The copy is named ``name`` (default ``<name>-sample``, a task of its own: its rows are
        never compared with the full task's) and its description states the sample.

        Example:
            >>> info = TaskInfo(name="T", description="toy.", buckets=["a", "b"])
            >>> qs = [{"id": f"q{i}", "text": "x", "bucket": "ab"[i % 2], "evidence_start": 0,
            ...        "evidence_end": 1, "doc_length": 2} for i in range(6)]
            >>> data = PositionTaskData(info, [{"id": "d", "title": "", "text": "xy"}], qs,
            ...     [{"query_id": q["id"], "doc_id": "d", "score": 1} for q in qs])
            >>> sample = data.sample_queries(2, seed=0)
            >>> sample.info.name, sample.bucket_counts(), len(sample.qrels), len(sample.corpus)
            ('T-sample', {'a': 2, 'b': 2}, 4, 1)
        """
        import random

        rng = random.Random(seed)
        kept: set[str] = set()
        for queries in self.queries_by_bucket().values():
            kept.update(str(q["id"]) for q in rng.sample(queries, min(per_bucket, len(queries))))
        note = f" Seeded sample (seed {seed}) of at most {per_bucket} queries per bucket."
        info = replace(
            self.info,
            name=name or f"{self.info.name}-sample",
            description=self.info.description + note,
        )
        return type(self)(
            info=info,
            corpus=self.corpus,  # read-only: shared, not copied
            queries=[q for q in self.queries if str(q["id"]) in kept],
            qrels=[r for r in self.qrels if str(r["query_id"]) in kept],
        )

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
        doc_ids = [str(d["id"]) for d in select_columns(self.corpus, ["id"])]
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
            extra = [b for b in query.get("extra_buckets") or [] if b not in known_buckets]
            if extra:
                raise InputError(
                    f"{where}: query {query['id']!r} lists unknown extra bucket {extra[0]!r}"
                )
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
        # Optional columns are written only when some query uses them: older readers and
        # folders without them stay byte-identical.
        optional = [
            c
            for c, default in OPTIONAL_QUERY_COLUMNS.items()
            if any(q.get(c, default) not in (default, None) for q in self.queries)
        ]
        write_parquet(
            [
                {
                    **{c: q[c] for c in QUERY_COLUMNS},
                    **{c: q.get(c, OPTIONAL_QUERY_COLUMNS[c]) for c in optional},
                }
                for q in self.queries
            ],
            out / "queries.parquet",
        )
        write_parquet([{c: r[c] for c in QREL_COLUMNS} for r in self.qrels], out / "qrels.parquet")
        write_json(out / "task.json", {**asdict(self.info), "bucket_counts": self.bucket_counts()})
        return out

    @classmethod
    def load(cls, folder: str | Path) -> PositionTaskData:
        """Read and validate a task folder written by :meth:`save`, or a plain BEIR/MS MARCO
        folder (:func:`plain_task_data`: every query in one bucket, ``all``)."""
        path = Path(folder)
        info = read_task_info(path)
        if info.bucket_scheme == PLAIN_SCHEME and not (path / "task.json").is_file():
            return plain_task_data(path)
        # The corpus stays arrow (its columns only): rows are made as they are read.
        corpus = read_parquet(path / "corpus.parquet")
        corpus = corpus.select([c for c in CORPUS_COLUMNS if c in corpus.column_names])
        data = cls(
            info=info,
            corpus=TableRows(corpus),
            queries=read_parquet_rows(path / "queries.parquet"),
            qrels=read_parquet_rows(path / "qrels.parquet"),
        )
        data.validate(str(path))
        return data


def corpus_table(corpus: Sequence[dict[str, Any]]) -> Any:
    """The corpus as a ``pyarrow.Table`` of strings ``id``, ``title`` (``""`` where missing)
    and ``text``: the table a folder's :class:`~hf_posbias.rows.arrow.TableRows` holds, shared
    (columns already strings without nulls are not copied), or one built from a list of rows.

    Example:
        >>> t = corpus_table([{"id": 7, "text": "x"}, {"id": "d", "title": "T", "text": "y"}])
        >>> t.to_pylist()
        [{'id': '7', 'title': '', 'text': 'x'}, {'id': 'd', 'title': 'T', 'text': 'y'}]
        >>> corpus_table(TableRows(t)) is t
        True
    """
    import pyarrow as pa

    if not isinstance(corpus, TableRows):
        return pa.table(
            {
                "id": [str(d["id"]) for d in corpus],
                "title": [str(d.get("title") or "") for d in corpus],
                "text": [str(d["text"]) for d in corpus],
            }
        )
    table = corpus.table
    if table.column_names != list(CORPUS_COLUMNS):
        table = table.select(list(CORPUS_COLUMNS))
    for i, name in enumerate(CORPUS_COLUMNS):
        column = table.column(i)
        if column.type != pa.string():
            table = table.set_column(i, name, column := column.cast(pa.string()))
        if name == "title" and column.null_count:
            table = table.set_column(i, name, column.fill_null(""))
    return table


PLAIN_SCHEME = "none"
"""``bucket_scheme`` of a plain retrieval folder read as a task: one bucket, no positions."""

PLAIN_BUCKET = "all"


def _plain_info(path: Path, fmt: str) -> TaskInfo:
    return TaskInfo(
        name=path.name,
        description=f"{fmt.upper()} retrieval folder {path.name} (standard scoring, no positions)",
        buckets=[PLAIN_BUCKET],
        bucket_scheme=PLAIN_SCHEME,
        source=str(path),
        extra={"format": fmt, "split": "test"},
    )


def plain_task_data(folder: str | Path, split: str | None = None) -> PositionTaskData:
    """A plain BEIR/MS MARCO folder (:mod:`hf_posbias.tasks.beir`) as a one-bucket task.

    Every judged query lies in bucket ``all`` with no evidence span (``evidence_start = -1``),
    so evaluation reports standard nDCG@10/Recall@100 with the same intervals, per-query table
    and TREC run. Queries without a relevant document and judgements naming unknown queries or
    documents are dropped; the counts are kept in ``info.extra["dropped"]``.

    Example:
        >>> import tempfile
        >>> from hf_posbias.tasks.beir import write_beir_folder
        >>> d = write_beir_folder(tempfile.mkdtemp(), {"d": ("", "x")}, {"q": "x?", "r": "y"},
        ...                       {"q": {"d": 1}})
        >>> data = plain_task_data(d)
        >>> data.bucket_counts(), data.info.extra["dropped"]
        ({'all': 1}, {'queries without a relevant document': 1})
    """
    from hf_posbias.tasks.beir import read_plain_folder

    path = Path(folder)
    plain = read_plain_folder(path, split)
    return retrieval_task_data(plain, _plain_info(path, plain.format))


def retrieval_task_data(plain: RetrievalData, info: TaskInfo) -> PositionTaskData:
    """A plain retrieval set (:class:`~hf_posbias.tasks.beir.RetrievalData`) as a one-bucket
    task with header ``info``: every judged query in bucket ``all`` with no evidence span;
    queries without a relevant document and dropped judgements counted in
    ``info.extra["dropped"]``."""
    judged = plain.judged_queries()
    dropped = dict(plain.dropped)
    if len(judged) < len(plain.queries):
        dropped["queries without a relevant document"] = len(plain.queries) - len(judged)
    info.extra.update(split=plain.split, dropped=dropped)
    from hf_posbias.tasks.beir import corpus_by_id

    data = PositionTaskData(
        info=info,
        # Held once, as arrow, as a task folder's corpus is (PositionTaskData.load): a plain
        # folder's own table (the reader's), and mteb's corpus Dataset wraps it, not a copy.
        corpus=TableRows(corpus_by_id(plain.corpus).table),
        queries=[
            {
                "id": q,
                "text": plain.queries[q],
                "bucket": PLAIN_BUCKET,
                "evidence_start": -1,
                "evidence_end": -1,
                "doc_length": -1,
            }
            for q in judged
        ],
        qrels=[
            {"query_id": q, "doc_id": d, "score": s}
            for q in judged
            for d, s in plain.qrels[q].items()
        ],
    )
    data.validate(plain.source or info.name)
    return data


def read_task_info(folder: str | Path) -> TaskInfo:
    """Read and check ``task.json`` of a task folder (cheap: no parquet is read); the one reader
    of a folder's header, for the mteb metadata and for :meth:`PositionTaskData.load`. A plain
    BEIR/MS MARCO folder gets a one-bucket header (:func:`plain_task_data`)."""
    path = Path(folder)
    meta_path = path / "task.json"
    if not path.is_dir():
        raise InputError(f"task folder {path} does not exist")
    if not meta_path.exists():
        from hf_posbias.tasks.beir import plain_format

        fmt = plain_format(path)
        if fmt is not None:
            return _plain_info(path, fmt)
    if not meta_path.exists():
        raise InputError(f"{path} is not a position task folder (no task.json)")
    for name in ("corpus.parquet", "queries.parquet", "qrels.parquet"):
        if not (path / name).exists():
            raise InputError(f"{path}: missing {name}")
    from hf_posbias.rows.readers import read_json

    meta = read_json(meta_path)
    if not isinstance(meta, dict):
        raise InputError(f"{meta_path}: expected a JSON object, got {type(meta).__name__}")
    meta.pop("bucket_counts", None)
    try:
        return TaskInfo(**meta)
    except TypeError as err:
        raise InputError(f"{meta_path}: unexpected task.json fields ({err})") from None
