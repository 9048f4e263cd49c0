"""Small real-text position task folders shared by the evaluation tests (plus their own checks).

Other test modules import the builders: ``from task_fixtures import wiki_task``.
"""

from __future__ import annotations

import re
from pathlib import Path

from hf_posbias.corpus.documents import segment_spans
from hf_posbias.corpus.sources import read_wikiextractor
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

THIRDS = ["begin", "middle", "end"]
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]")


def _trim(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text.rfind(" ", 0, max_chars)
    return text[: cut if cut > 0 else max_chars]


def wiki_task_data(
    shared_data: Path,
    *,
    n_docs: int = 24,
    max_chars: int = 1200,
    buckets: list[str] | None = None,
    query_buckets: list[str] | None = None,
    name: str = "WikiSentences",
) -> PositionTaskData:
    """Wikipedia passages; each query is a verbatim sentence from one third of its passage.

    Document ``i`` gets a query in third ``query_buckets[i % len(query_buckets)]`` so buckets are
    balanced; the evidence span is the sentence's character offsets. BM25 finds every answer.
    """
    buckets = buckets or THIRDS
    query_buckets = query_buckets or buckets
    corpus, queries, qrels = [], [], []
    for article in read_wikiextractor(shared_data / "wikipedia_enwiki_wikiextractor"):
        if len(corpus) >= n_docs:
            break
        text = _trim(" ".join(article["text"].split()), max_chars)
        if len(text) < 600:
            continue
        target = query_buckets[len(corpus) % len(query_buckets)]
        start, end = segment_spans(text, 3)[THIRDS.index(target)]
        sentence = next(
            (
                m
                for m in _SENTENCE.finditer(text, start)
                if m.end() <= end and 40 <= len(m.group().strip()) <= 300
            ),
            None,
        )
        if sentence is None:
            continue
        s_start = sentence.start() + len(sentence.group()) - len(sentence.group().lstrip())
        doc_id = f"d{len(corpus)}"
        qid = f"q{len(corpus)}"
        corpus.append({"id": doc_id, "title": "", "text": text})
        queries.append(
            {
                "id": qid,
                "text": sentence.group().strip(),
                "bucket": target,
                "evidence_start": s_start,
                "evidence_end": sentence.end(),
                "doc_length": len(text),
            }
        )
        qrels.append({"query_id": qid, "doc_id": doc_id, "score": 1})
    return PositionTaskData(
        info=TaskInfo(
            name=name,
            description="Wikipedia sentences as queries, bucketed by third.",
            buckets=list(buckets),
            source="enwiki (WikiExtractor)",
            license="cc-by-sa-3.0",
            reference="https://en.wikipedia.org/",
        ),
        corpus=corpus,
        queries=queries,
        qrels=qrels,
    )


def wiki_task(shared_data: Path, folder: Path, **kwargs) -> Path:
    """Build and save :func:`wiki_task_data`; returns the folder."""
    return wiki_task_data(shared_data, **kwargs).save(folder)


def toy_position_records(n: int = 36) -> list[dict]:
    """Synthetic documents (no real data needed), each with its query's words in the middle of
    one third, the thirds in turn: records for ``build_from_records``."""
    records = []
    for i in range(n):
        parts = [" ".join(f"w{i}x{k}y{j}" for j in range(20)) for k in range(3)]
        words = parts[i % 3].split()
        words.insert(10, f"needle{i} marker{i % 5}")
        parts[i % 3] = " ".join(words)
        document = " ".join(parts)
        records.append(
            {
                "query": f"needle{i} marker{i % 5}",
                "document": document,
                "evidence_start": document.index(f"needle{i}"),
            }
        )
    return records


def hub_snapshot(root: Path, repo_id: str, data: PositionTaskData, commit: str = "c" * 40) -> Path:
    """Save ``data`` where huggingface_hub's cache keeps a dataset repo's snapshot
    (``datasets--<owner>--<name>/snapshots/<commit>``): a task folder downloaded from the Hub."""
    folder = root / "hub" / f"datasets--{repo_id.replace('/', '--')}" / "snapshots" / commit
    return data.save(folder)
