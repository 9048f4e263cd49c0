"""The one reader of plain retrieval folders: BEIR format and MS MARCO-style TSV.

Two layouts are read, for evaluation (:meth:`~hf_posbias.tasks.taskdata.PositionTaskData.
load` turns them into a one-bucket task) and for the listwise commands
(:func:`hf_posbias.listwise.experiments.taskio.load_rerank_task`):

- **BEIR**: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
  ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``; a header line is
  skipped);
- **MS MARCO**: ``collection.tsv`` (``pid<TAB>text``), ``queries.tsv`` or
  ``queries.<split>.tsv`` (``qid<TAB>text``) and ``qrels.tsv`` or ``qrels.<split>.tsv`` (TREC
  ``qid 0 pid rel`` or ``qid pid rel``).

Both give a :class:`RetrievalData`, the one in-memory form of a retrieval set (corpus, queries,
qrels of one split), whose corpus a folder's reader holds once, as an arrow table looked up by id
(:func:`corpus_by_id`): a position task folder gives the same
(:meth:`~hf_posbias.tasks.taskdata.PositionTaskData.retrieval_data`), and the listwise
commands read both as it. Judgements that name an unknown query or document, and corpus or query
rows whose id an earlier row has (the first row of an id is kept), are dropped and counted
(:attr:`RetrievalData.dropped`), never silently: evaluation reports the counts as warnings.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "cats"}\\n')
    >>> _ = (d / "queries.jsonl").write_text('{"_id": "q1", "text": "cat?"}\\n')
    >>> (d / "qrels").mkdir()
    >>> _ = (d / "qrels" / "test.tsv").write_text(
    ...     "query-id\\tcorpus-id\\tscore\\nq1\\td1\\t1\\nq1\\td9\\t1\\n")
    >>> data = read_plain_folder(d)
    >>> data.format, data.split, data.qrels, data.dropped
    ('beir', 'test', {'q1': {'d1': 1}}, {'qrels naming an unknown document': 1})
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from hf_posbias.errors import InputError
from hf_posbias.rows.arrow import RowsById

PLAIN_FORMATS = ("beir", "msmarco")
DEFAULT_SPLIT = "test"

Doc = TypeVar("Doc")
"""What a corpus holds per document id: ``(title, text)`` here, a reranker's passage in listwise."""


@dataclass
class RetrievalData(Generic[Doc]):
    """Corpus (``id → document``), queries (``id → text``) and qrels of one split, keyed by
    string ids, with what reading them dropped.

    Attributes:
        name: the set's name (its folder's, or the task's).
        split: the split the qrels belong to.
        corpus: ``doc_id → document``; ``(title, text)`` as read from a folder, whose corpus
            is a :class:`~hf_posbias.rows.arrow.RowsById` (:func:`corpus_by_id`).
        queries: ``{query_id: text}`` in file order.
        qrels: ``{query_id: {doc_id: score}}``.
        source: where it was read from.
        format: ``beir``, ``msmarco`` or ``task`` (a position task folder).
        dropped: judgements dropped while reading, by reason.

    Example:
        >>> data = RetrievalData("t", "test", {"d": ("", "x"), "e": ("", "y")},
        ...                      {"b": "?", "a": "?", "c": "?"},
        ...                      {"a": {"d": 1, "e": 2}, "b": {"d": 1}, "c": {"d": 0}})
        >>> data.judged_queries(), data.relevant("a")
        (['b', 'a'], ['e', 'd'])
    """

    name: str
    split: str
    corpus: Mapping[str, Doc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    source: str = ""
    format: str = "beir"
    dropped: dict[str, int] = field(default_factory=dict)

    def judged_queries(self) -> list[str]:
        """Ids (file order) of queries with at least one relevant (score > 0) document in the
        corpus."""
        return [q for q in self.queries if self.relevant(q)]

    def relevant(self, query_id: str) -> list[str]:
        """Relevant documents of a query, most relevant first (ties by document id)."""
        docs = self.qrels.get(query_id, {})
        return sorted(
            (d for d, r in docs.items() if r > 0 and d in self.corpus), key=lambda d: (-docs[d], d)
        )


def plain_format(folder: str | Path) -> str | None:
    """``"beir"``, ``"msmarco"`` or ``None`` for a folder of neither layout.

    Example:
        >>> plain_format("/no/such/folder") is None
        True
    """
    path = Path(folder)
    if (path / "corpus.jsonl").is_file():
        return "beir"
    if (path / "collection.tsv").is_file():
        return "msmarco"
    return None


def read_qrels_tsv(path: Path) -> dict[str, dict[str, int]]:
    """Qrels from a TSV: ``qid docid score`` (BEIR, header skipped) or ``qid 0 docid score``."""
    from hf_posbias.rows.readers import read_text

    qrels: dict[str, dict[str, int]] = {}
    lines = read_text(path).splitlines()  # not UTF-8: one line naming the byte offset
    for lineno, line in enumerate(lines, start=1):
        # No quote handling: an id may begin with a quote (FEVER's `"Heroes"_(David_Bowie_album)`)
        # and must reach the corpus lookup as written.
        row = line.split("\t") if "\t" in line else line.split()
        if not row or (lineno == 1 and not row[-1].strip().lstrip("-").isdigit()):
            continue  # blank line or header
        if len(row) not in (3, 4):
            raise InputError(f"{path}:{lineno}: expected query-id, corpus-id, score")
        try:
            score = int(float(row[-1]))
        except ValueError:
            raise InputError(f"{path}:{lineno}: score {row[-1]!r} is not a number") from None
        qrels.setdefault(row[0].strip(), {})[row[-2].strip()] = score
    return qrels


def _jsonl_records(path: Path, what: str) -> Iterable[tuple[str, str, str]]:
    from hf_posbias.rows.readers import iter_jsonl_objects

    for where, record in iter_jsonl_objects(path):
        item_id = record.get("_id", record.get("id"))
        if item_id is None or "text" not in record:
            raise InputError(f"{where}: a {what} line needs '_id' and 'text'")
        yield str(item_id), str(record.get("title") or ""), str(record["text"])


def _tsv_pairs(path: Path) -> Iterable[tuple[str, str]]:
    from hf_posbias.rows.readers import read_text

    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        item_id, sep, text = line.partition("\t")
        if not sep:
            raise InputError(f"{path}:{lineno}: expected id<TAB>text")
        yield item_id.strip(), text


def _split_file(folder: Path, stem: str, split: str) -> Path:
    for candidate in (folder / f"{stem}.{split}.tsv", folder / f"{stem}.tsv"):
        if candidate.is_file():
            return candidate
    raise InputError(f"{folder} has no {stem}.{split}.tsv or {stem}.tsv")


T = TypeVar("T")

CORPUS_BATCH = 4096
"""Documents turned into one arrow record batch at a time while a folder's corpus is read."""


def _first_of_each_id(
    rows: Iterable[tuple[str, T]], what: str, dropped: dict[str, int]
) -> Iterator[tuple[str, T]]:
    """The rows of ``rows`` whose id no earlier row has; later rows of an id are counted in
    ``dropped`` under ``"<what> rows with a duplicate id (first kept)"``.

    Example:
        >>> dropped = {}
        >>> dict(_first_of_each_id([("d1", "a"), ("d2", "b"), ("d1", "c")], "corpus", dropped))
        {'d1': 'a', 'd2': 'b'}
        >>> dropped
        {'corpus rows with a duplicate id (first kept)': 1}
    """
    seen: set[str] = set()
    for item_id, value in rows:
        if item_id in seen:
            reason = f"{what} rows with a duplicate id (first kept)"
            dropped[reason] = dropped.get(reason, 0) + 1
        else:
            seen.add(item_id)
            yield item_id, value


def title_text(row: Mapping[str, Any]) -> tuple[str, str]:
    """A corpus row's ``(title, text)``: the document form of :class:`RetrievalData`."""
    return row["title"], row["text"]


def corpus_by_id(
    documents: Mapping[str, tuple[str, str]] | Iterable[tuple[str, tuple[str, str]]],
) -> RowsById[tuple[str, str]]:
    """Documents (``{id: (title, text)}`` or ``(id, (title, text))`` pairs, ids unique) as one
    arrow table (``id``, ``title``, ``text``) looked up by id: a
    :class:`~hf_posbias.rows.arrow.RowsById` of ``(title, text)``, built :data:`CORPUS_BATCH`
    documents at a time, so no Python object per document stays. A :class:`RowsById` comes
    back as it is (its table shared, not copied).

    Example:
        >>> corpus = corpus_by_id([("d2", ("", "y")), ("d1", ("T", "x"))])
        >>> corpus["d1"], list(corpus), corpus.table.column_names
        (('T', 'x'), ['d2', 'd1'], ['id', 'title', 'text'])
    """
    import pyarrow as pa

    if isinstance(documents, RowsById):
        return documents.with_convert(title_text)
    if isinstance(documents, Mapping):
        documents = documents.items()
    schema = pa.schema([(name, pa.string()) for name in ("id", "title", "text")])
    batches = []
    pending = iter(documents)
    while chunk := list(itertools.islice(pending, CORPUS_BATCH)):
        columns = [[i for i, _ in chunk], [t for _, (t, _) in chunk], [x for _, (_, x) in chunk]]
        batches.append(pa.record_batch(columns, schema=schema))
    return RowsById(pa.Table.from_batches(batches, schema=schema), title_text)


def clean_qrels(
    qrels: Mapping[str, Mapping[str, int]], queries: Mapping[str, str], corpus: Mapping[str, object]
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """The judgements naming a known query and document, and the count of the others by
    reason."""
    kept: dict[str, dict[str, int]] = {}
    dropped: dict[str, int] = {}
    for qid, docs in qrels.items():
        if qid not in queries:
            dropped["qrels naming an unknown query"] = dropped.get(
                "qrels naming an unknown query", 0
            ) + len(docs)
            continue
        for doc_id, score in docs.items():
            if doc_id in corpus:
                kept.setdefault(qid, {})[doc_id] = int(score)
            else:
                reason = "qrels naming an unknown document"
                dropped[reason] = dropped.get(reason, 0) + 1
    return kept, dropped


def read_plain_folder(
    folder: str | Path, split: str | None = None
) -> RetrievalData[tuple[str, str]]:
    """Read a BEIR or MS MARCO-style folder (see the module docstring); ``split`` defaults to
    ``test``. Unknown queries/documents in the qrels are dropped and counted; a split with no
    judged query is refused in one line."""
    path = Path(folder)
    fmt = plain_format(path)
    split = split or DEFAULT_SPLIT
    if fmt is None:
        raise InputError(
            f"{path} is neither a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) nor an "
            "MS MARCO folder (collection.tsv, queries.tsv, qrels.tsv)"
        )
    if fmt == "beir":
        qrels_path = path / "qrels" / f"{split}.tsv"
        if not qrels_path.is_file():
            have = sorted(p.stem for p in (path / "qrels").glob("*.tsv"))
            raise InputError(
                f"{path} has no qrels for split {split!r} (qrels/{split}.tsv); it has: "
                f"{', '.join(have) or 'none'}"
            )
        corpus_rows = ((i, (t, x)) for i, t, x in _jsonl_records(path / "corpus.jsonl", "corpus"))
        query_rows = ((i, x) for i, _, x in _jsonl_records(path / "queries.jsonl", "query"))
    else:
        qrels_path = _split_file(path, "qrels", split)
        corpus_rows = ((i, ("", x)) for i, x in _tsv_pairs(path / "collection.tsv"))
        query_rows = _tsv_pairs(_split_file(path, "queries", split))
    duplicates: dict[str, int] = {}
    corpus = corpus_by_id(_first_of_each_id(corpus_rows, "corpus", duplicates))
    queries = dict(_first_of_each_id(query_rows, "query", duplicates))
    qrels, dropped = clean_qrels(read_qrels_tsv(qrels_path), queries, corpus)
    dropped.update(duplicates)
    data = RetrievalData(path.name, split, corpus, queries, qrels, str(path), fmt, dropped)
    if not data.judged_queries():
        raise InputError(f"{path}: no query of split {split!r} has a relevant document")
    return data


def write_beir_folder(
    folder: str | Path,
    corpus: Mapping[str, tuple[str, str]],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    split: str = DEFAULT_SPLIT,
) -> Path:
    """Write a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

    Example:
        >>> import tempfile
        >>> d = write_beir_folder(
        ...     tempfile.mkdtemp(), {"d": ("", "x")}, {"q": "x?"}, {"q": {"d": 1}})
        >>> read_plain_folder(d).qrels
        {'q': {'d': 1}}
    """
    out = Path(folder)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as f:
        for doc_id, (title, text) in corpus.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid, text in queries.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    with open(out / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, docs in qrels.items():
            for doc_id, score in docs.items():
                f.write(f"{qid}\t{doc_id}\t{int(score)}\n")
    return out
