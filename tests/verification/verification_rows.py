"""Candidate rows, a table-lookup panel member and real Wikipedia candidates for the
verification tests (imported by name: tests/ has no ``__init__.py``)."""

from __future__ import annotations

import re

import numpy as np

from hf_posbias.positions import POSITIONS


class TableMember:
    """Returns fixed raw scores looked up by passage text; records every pair it is asked."""

    def __init__(self, name: str, table: dict[str, float], normalization: str = "none") -> None:
        self.name = name
        self.normalization = normalization
        self.table = table
        self.calls: list[tuple[str, str]] = []
        self.batch_size = 2  # small, so the panel splits the work into several calls

    def score_pairs(self, queries: list[str], passages: list[str]) -> np.ndarray:
        self.calls.extend(zip(queries, passages))
        return np.array([self.table[p] for p in passages], dtype=float)


def row(cid: str, target: str, segments: list[str], query: str = "q", length_bin: str = "x"):
    return {
        "candidate_id": cid,
        "doc_id": cid.split("::")[0],
        "title": cid,
        "length_bin": length_bin,
        "target_position": target,
        "query": query,
        "positive": " ".join(segments),
        "segments": segments,
        "answer": "",
        "generator": "test",
        "meta": "{}",
    }


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def wikipedia_candidates(shared_data, n_docs: int) -> list[dict]:
    """Paragraphs of real Wikipedia articles as documents; a query is the longest sentence of
    the target segment (an ICT-style pseudo-query), one candidate per (document, position)."""
    from hf_posbias.corpus.documents import prepare_documents
    from hf_posbias.corpus.sources import read_wikiextractor

    records = []
    for article in read_wikiextractor(shared_data / "wikipedia_enwiki_wikiextractor"):
        for i, para in enumerate(p.strip() for p in article["text"].split("\n")):
            if 600 <= len(para) < 1800:
                records.append(
                    {"id": f"{article['id']}-{i}", "title": article["title"], "text": para}
                )
    docs, _ = prepare_documents(records[:n_docs])
    rows = []
    for doc in docs:
        segments = [s.text for s in doc.segments]
        for pos, seg in zip(POSITIONS, segments):
            sentences = [s for s in _SENTENCE.split(seg.strip()) if len(s.split()) >= 5]
            if not sentences:
                continue
            query = max(sentences, key=len)
            cand = row(f"{doc.id}::{pos}", pos, segments, query, doc.length_bin)
            cand["positive"] = doc.text
            rows.append(cand)
    return rows
