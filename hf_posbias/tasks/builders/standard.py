"""Standard retrieval sets (no evidence positions): BEIR by name, MS MARCO dev, TREC DL19/DL20.

YHP26's Table 4 asks whether a training configuration costs quality on the natural
distribution: nDCG@10 on the standard sets, not on their ``*-Evidence`` subsets. These
benchmarks of ``posbias benchmark build`` write each set as a one-bucket task folder (bucket
``all``, ``bucket_scheme`` ``none``, no evidence span) that ``posbias evaluate`` and the study
read like any task; the study reports it in its Table 4 view (:mod:`hf_posbias.study.standard`).

Each reads its set from one of three places (``--input``):

- a **local folder** in BEIR layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``,
  as ``beir.util.download_and_unzip`` leaves it) or MS MARCO layout (``collection.tsv``,
  ``queries[.<split>].tsv``, ``qrels[.<split>].tsv``):
  :func:`~hf_posbias.tasks.beir.read_plain_folder`;
- a **Hub id**: ``BeIR/<name>`` (configs ``corpus`` and ``queries``; the judgements in
  ``BeIR/<name>-qrels``, one split each) or ``mteb/<name>`` (configs ``corpus``, ``queries`` and
  ``default`` holding the judgements by split);
- an **ir_datasets id** prefixed ``irds:`` (``irds:msmarco-passage/trec-dl-2019/judged``; needs
  the ``ir_datasets`` package).

=================  ==============================================  ==========================
source             default ``--input``                             split / task name
=================  ==============================================  ==========================
``beir NAME``      ``BeIR/NAME``                                   ``test`` / ``NAME``
``msmarco``        ``BeIR/msmarco``                                ``dev`` / ``MSMARCO-dev``
``trec-dl``        ``irds:msmarco-passage/trec-dl-YEAR/judged``    ``test`` / ``TREC-DL19|20``
=================  ==============================================  ==========================

Example:
    >>> source_kind("BeIR/scifact"), source_kind("irds:msmarco-passage/dev/small")
    ('hub', 'ir_datasets')
    >>> qrels_source("BeIR/scifact", "test"), qrels_source("mteb/scifact", "test")
    (('BeIR/scifact-qrels', None), ('mteb/scifact', 'default'))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hf_posbias.errors import InputError
from hf_posbias.settings import setting, shared_setting
from hf_posbias.tasks.beir import RetrievalData, clean_qrels, read_plain_folder
from hf_posbias.tasks.benchmark_registry import Benchmark
from hf_posbias.tasks.builders.common import BuilderOutput
from hf_posbias.tasks.taskdata import (
    PLAIN_BUCKET,
    PLAIN_SCHEME,
    PositionTaskData,
    TaskInfo,
    retrieval_task_data,
)

IRDS_PREFIX = "irds:"
TREC_DL_IRDS = "irds:msmarco-passage/trec-dl-{year}/judged"
"""The ir_datasets id of TREC DL's passage task of a year (judged queries only: 43 in 2019,
54 in 2020)."""


def source_kind(source: str) -> str:
    """``folder``, ``ir_datasets`` or ``hub``: where ``source`` is read from."""
    if source.startswith(IRDS_PREFIX):
        return "ir_datasets"
    if Path(source).expanduser().exists():
        return "folder"
    return "hub"


def qrels_source(repo: str, split: str) -> tuple[str, str | None]:
    """``(repo, config)`` holding the judgements of a Hub set: BEIR keeps them in
    ``<repo>-qrels``, mteb in the ``default`` config of the same repo."""
    if repo.lower().startswith("beir/"):
        return f"{repo}-qrels", None
    return repo, "default"


def _text(row: Mapping[str, Any], key: str = "text") -> str:
    value = row.get(key)
    return "" if value is None else str(value)


def _collect(
    name: str,
    split: str,
    source: str,
    corpus_rows: Iterable[Mapping[str, Any]],
    query_rows: Iterable[Mapping[str, Any]],
    qrel_rows: Iterable[tuple[str, str, int]],
    fmt: str,
) -> RetrievalData[tuple[str, str]]:
    corpus = {str(r["_id"]): (_text(r, "title"), _text(r)) for r in corpus_rows}
    queries = {str(r["_id"]): _text(r) for r in query_rows}
    judged: dict[str, dict[str, int]] = {}
    for qid, doc_id, score in qrel_rows:
        judged.setdefault(qid, {})[doc_id] = int(score)
    qrels, dropped = clean_qrels(judged, queries, corpus)
    return RetrievalData(name, split, corpus, queries, qrels, source, fmt, dropped)


def read_hub_set(repo: str, split: str, name: str) -> RetrievalData[tuple[str, str]]:
    """A BEIR-layout set from the Hub (``BeIR/<name>`` or ``mteb/<name>``): corpus and queries
    configs, judgements of ``split`` (:func:`qrels_source`)."""
    from hf_posbias.rows.readers import read_rows

    corpus = read_rows(repo, config="corpus", split="corpus")
    queries = read_rows(repo, config="queries", split="queries")
    qrels_repo, qrels_config = qrels_source(repo, split)
    judged = read_rows(qrels_repo, config=qrels_config, split=split)
    for row in judged[:1]:
        missing = [c for c in ("query-id", "corpus-id", "score") if c not in row]
        if missing:
            raise InputError(f"{qrels_repo} ({split}): qrels rows lack {', '.join(missing)}")
    triples = ((str(r["query-id"]), str(r["corpus-id"]), int(r["score"])) for r in judged)
    return _collect(name, split, repo, corpus, queries, triples, "hub")


def read_ir_dataset(dataset_id: str, name: str, split: str) -> RetrievalData[tuple[str, str]]:
    """A set of ``ir_datasets`` (documents, queries, judgements of ``dataset_id``)."""
    try:
        import ir_datasets
    except ImportError:
        raise InputError(
            f"{IRDS_PREFIX}{dataset_id} needs the ir_datasets package (pip install ir_datasets), "
            "or give a downloaded folder or a Hub id"
        ) from None
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise InputError(f"ir_datasets has no dataset {dataset_id!r}") from None
    corpus = (
        {"_id": d.doc_id, "title": getattr(d, "title", ""), "text": d.text}
        for d in dataset.docs_iter()
    )
    queries = ({"_id": q.query_id, "text": q.text} for q in dataset.queries_iter())
    triples = ((str(q.query_id), str(q.doc_id), int(q.relevance)) for q in dataset.qrels_iter())
    return _collect(name, split, IRDS_PREFIX + dataset_id, corpus, queries, triples, "ir_datasets")


def read_standard_set(source: str, *, split: str, name: str) -> RetrievalData[tuple[str, str]]:
    """The retrieval set of ``source`` (a folder, a Hub id or ``irds:<id>``)."""
    kind = source_kind(source)
    if kind == "folder":
        return read_plain_folder(Path(source).expanduser(), split)
    if kind == "ir_datasets":
        return read_ir_dataset(source[len(IRDS_PREFIX) :], name, split)
    return read_hub_set(source, split, name)


def build_standard(source: str, *, name: str, split: str = "test") -> PositionTaskData:
    """The one-bucket task folder of a standard retrieval set.

    Example:
        >>> import tempfile
        >>> from hf_posbias.tasks.beir import write_beir_folder
        >>> d = write_beir_folder(tempfile.mkdtemp(), {"d": ("", "x")}, {"q": "x?"},
        ...                       {"q": {"d": 1}})
        >>> data = build_standard(str(d), name="toy")
        >>> data.info.name, data.info.bucket_scheme, data.bucket_counts()
        ('toy', 'none', {'all': 1})
    """
    plain = read_standard_set(source, split=split, name=name)
    if not plain.judged_queries():
        raise InputError(f"{source}: no query of split {split!r} has a relevant document")
    info = TaskInfo(
        name=name,
        description=f"{name} ({split}): standard retrieval, no evidence positions",
        buckets=[PLAIN_BUCKET],
        bucket_scheme=PLAIN_SCHEME,
        source=source,
        main_score="ndcg_at_10",
        extra={"format": plain.format, "standard": True},
    )
    return retrieval_task_data(plain, info)


@dataclass(kw_only=True)
class BeirSettings(BuilderOutput):
    """``posbias benchmark build beir NAME``."""

    name: str = setting(
        "BEIR set name (scifact, hotpotqa, fever, climate-fever, …)", positional=True
    )
    input: str | None = setting(
        "a downloaded BEIR folder, a Hub id (BeIR/NAME, mteb/NAME) or irds:<id>; default BeIR/NAME",
        default=None,
    )
    split: str = shared_setting("split", default="test")
    task_name: str | None = setting("task name (default: NAME)", default=None)


@dataclass(kw_only=True)
class MSMarcoSettings(BuilderOutput):
    """``posbias benchmark build msmarco``."""

    input: str = setting(
        "an MS MARCO/BEIR folder, a Hub id or irds:<id> (e.g. irds:msmarco-passage/dev/small)",
        default="BeIR/msmarco",
    )
    split: str = shared_setting("split", default="dev")
    task_name: str = setting("task name", default="MSMARCO-dev")


@dataclass(kw_only=True)
class TrecDLSettings(BuilderOutput):
    """``posbias benchmark build trec-dl``."""

    year: Literal["2019", "2020"] = setting("TREC Deep Learning track year", default="2019")
    input: str | None = setting(
        "an MS MARCO-layout folder with the year's queries and qrels, a Hub id or irds:<id>; "
        "default irds:msmarco-passage/trec-dl-YEAR/judged",
        default=None,
    )
    split: str = shared_setting("split", default="test")
    task_name: str | None = setting("task name (default TREC-DL19 / TREC-DL20)", default=None)


def _build_beir(s: BeirSettings) -> PositionTaskData:
    return build_standard(s.input or f"BeIR/{s.name}", name=s.task_name or s.name, split=s.split)


def _build_msmarco(s: MSMarcoSettings) -> PositionTaskData:
    return build_standard(s.input, name=s.task_name, split=s.split)


def _build_trec_dl(s: TrecDLSettings) -> PositionTaskData:
    source = s.input or TREC_DL_IRDS.format(year=s.year)
    return build_standard(source, name=s.task_name or f"TREC-DL{s.year[2:]}", split=s.split)


BENCHMARKS = tuple(
    Benchmark(name=name, help=text, cards=(), settings=settings, build=build, order=order)
    for order, (name, text, settings, build) in enumerate(
        (
            (
                "beir",
                "a standard BEIR set by name (Hub BeIR/NAME, mteb/NAME, a folder) → plain task",
                BeirSettings,
                _build_beir,
            ),
            (
                "msmarco",
                "MS MARCO passage dev (Hub, folder or ir_datasets) → plain task",
                MSMarcoSettings,
                _build_msmarco,
            ),
            (
                "trec-dl",
                "TREC DL 2019/2020 passage (ir_datasets, folder or Hub) → plain task",
                TrecDLSettings,
                _build_trec_dl,
            ),
        ),
        start=80,
    )
)
"""The three sources (the registry reads a module's ``BENCHMARKS`` besides its ``BENCHMARK``)."""
