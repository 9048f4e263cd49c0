"""rank_llm's ``Request``/``Candidate``/``Result`` JSON, read and written as rank_llm does.

rank_llm (Castorini) is the reference implementation of listwise LLM reranking, but its
open-model listwise path needs vLLM (no CPU) and its current release Python ≥ 3.12; hf-posbias
scores on ``transformers`` instead and exchanges runs with rank_llm through its file shape:

- a request: ``{"query": {"text", "qid"}, "candidates": [{"docid", "score", "doc": {...}}]}``;
  ``doc`` holds the passage under ``text`` (+ ``title``), ``segment``, ``contents``, ``content``,
  ``body`` or ``passage`` (the keys rank_llm reads);
- a result: the same shape with the candidates reordered, best first. As rank_llm does, the
  candidates keep the input list's scores in descending order, so the scores follow the new
  ranking and a TREC run written from them is in reranked order.

Files are ``.json`` (a list) or ``.jsonl`` (one object per line), as in rank_llm.

Example:
    >>> cands = [{"docid": "d1", "score": 2.0, "doc": {"text": "a"}},
    ...          {"docid": "d2", "score": 1.0, "doc": {"text": "b"}}]
    >>> req = Request.from_dict({"query": {"text": "q", "qid": 1}, "candidates": cands})
    >>> res = result_from_ranking(req, ["d2", "d1"])
    >>> [(c.docid, c.score) for c in res.candidates]
    [('d2', 2.0), ('d1', 1.0)]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rerankers.records import Passage
from hf_posbias.settings import flag_name
from hf_posbias.shards import write_text_atomic

_TEXT_KEYS = ("text", "segment", "contents", "content", "body", "passage")


@dataclass
class Query:
    """rank_llm's ``Query``."""

    text: str
    qid: str | int


@dataclass
class RankLLMCandidate:
    """rank_llm's ``Candidate``: document id, first-stage score, document fields."""

    docid: str | int
    score: float
    doc: dict[str, Any] = field(default_factory=dict)

    def passage(self) -> Passage:
        """The candidate as a :class:`Passage` (text from the first key rank_llm reads)."""
        for key in _TEXT_KEYS:
            if key in self.doc and self.doc[key] is not None:
                return Passage(
                    str(self.docid), str(self.doc[key]), str(self.doc.get("title") or "")
                )
        raise InputError(
            f"candidate {self.docid!r} has no passage text (one of {', '.join(_TEXT_KEYS)})"
        )


@dataclass
class Request:
    """rank_llm's ``Request``: a query and its candidates in input order."""

    query: Query
    candidates: list[RankLLMCandidate] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Request:
        """Parse one request object; raises :class:`InputError` naming what is missing."""
        try:
            query = Query(text=str(data["query"]["text"]), qid=data["query"]["qid"])
            candidates = [
                RankLLMCandidate(
                    docid=c["docid"], score=float(c.get("score", 0.0)), doc=dict(c["doc"])
                )
                for c in data.get("candidates", [])
            ]
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"not a rank_llm request ({type(err).__name__}: {err})") from None
        return cls(query, candidates)


@dataclass
class Result:
    """rank_llm's ``Result``: the candidates reordered, best first."""

    query: Query
    candidates: list[RankLLMCandidate] = field(default_factory=list)
    invocations_history: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """rank_llm's JSON form (``query`` and ``candidates``, as its ``DataWriter`` writes)."""
        return {"query": asdict(self.query), "candidates": [asdict(c) for c in self.candidates]}


def read_requests(path: str | Path) -> list[Request]:
    """Requests from a ``.json`` list or a ``.jsonl`` file."""
    from hf_posbias.rows.readers import iter_rows

    path = Path(path)
    if path.suffix not in (".json", ".jsonl"):
        raise InputError(f"{path}: expected a .json or .jsonl requests file")
    out = []
    for where, record in iter_rows(path):
        try:
            out.append(Request.from_dict(record))
        except InputError as err:
            raise InputError(f"{where}: {err}") from None
    return out


def write_results(path: str | Path, results: Sequence[Result]) -> None:
    """Write results as rank_llm does: ``.json`` (indented list) or ``.jsonl``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        text = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in results)
    elif path.suffix == ".json":
        text = json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False)
    else:
        raise InputError(f"{path}: results are written as .json or .jsonl")
    write_text_atomic(path, text)


def result_from_ranking(request: Request, ranking: Sequence[str]) -> Result:
    """The request's candidates in ``ranking`` order, scores re-assigned in descending order."""
    by_id = {str(c.docid): c for c in request.candidates}
    if sorted(by_id) != sorted(map(str, ranking)):
        raise InputError(f"the ranking of query {request.query.qid!r} is not a permutation")
    scores = sorted((c.score for c in request.candidates), reverse=True)
    candidates = [
        RankLLMCandidate(docid=by_id[str(d)].docid, score=s, doc=by_id[str(d)].doc)
        for d, s in zip(ranking, scores)
    ]
    return Result(query=request.query, candidates=candidates)


def rerank_requests(
    reranker: Any,
    requests: Sequence[Request],
    *,
    top_k: int | None = None,
    window: int | None = None,
    step: int | None = None,
) -> list[Result]:
    """Rerank each request's first ``top_k`` candidates (all when ``None``) with sliding windows;
    candidates past ``top_k`` keep their order below them."""
    from hf_posbias.rerankers.window import rerank_lists

    heads = []
    for request in requests:
        n = len(request.candidates) if top_k is None else top_k
        if n > len(request.candidates):
            raise InputError(
                f"{flag_name('k')} {n} is larger than the first-stage list of query "
                f"{request.query.qid!r} "
                f"({len(request.candidates)} candidates)"
            )
        heads.append((request.query.text, [c.passage() for c in request.candidates[:n]]))
    reranked = rerank_lists(reranker, heads, window=window, step=step)
    results = []
    for request, (_, head), result in zip(requests, heads, reranked):
        tail = [str(c.docid) for c in request.candidates[len(head) :]]
        results.append(result_from_ranking(request, result.ranking + tail))
    return results
