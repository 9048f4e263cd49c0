"""Truncation and document length, in the model's own tokens.

A model that reads 256 tokens, scored on a document whose evidence starts at token 600, measures
truncation, not position bias. Before a task is scored, :func:`count_truncated_evidence` tokenizes
every evidence document with the model's tokenizer — its document prompt and special tokens
included, exactly what the encoder is fed before it cuts at ``max_seq_length`` — and finds the
token at which each query's evidence starts (the first token whose character span ends after
``evidence_start``). A query is *truncated* when that token index is at or beyond
``max_seq_length``: its evidence is never seen.

``posbias evaluate`` reports, per bucket of the task folder, how many queries are truncated
(``truncated`` in ``summary.json``, beside ``n_queries``) and can leave them out
(``--exclude-truncated``, recorded as ``exclude_truncated``). The document token lengths also
stratify any task by length (:func:`token_length_strata`: PosIR's ``(0, 512]``, ``(512, 1024]``,
``(1024, 1536]``, ``(1536, ∞)`` by default) with the PSI of each stratum and its interval
(``psi_by_token_length``).

Example:
    >>> from hf_posbias.testing import build_wordpiece_tokenizer
    >>> text = "alpha beta gamma delta"
    >>> tok = build_wordpiece_tokenizer(extra_text=" ".join([text] * 20))
    >>> evidence_token_index(tok, text, text.index("gamma"))   # [CLS] alpha beta → gamma is 3
    3
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_posbias.tasks.bucketing import POSIR_TOKEN_LENGTH, IntervalBuckets

DOCUMENT_PROMPTS = ("document", "passage", "corpus")
"""Prompt names under which a SentenceTransformer keeps its document prefix (mteb's order)."""


def _encode(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """Input ids (special tokens included) and each token's character span (``(-1, -1)`` for a
    special token)."""
    enc = tokenizer(
        text,
        add_special_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        truncation=False,
        verbose=False,
    )
    spans = [
        (-1, -1) if special else (int(a), int(b))
        for (a, b), special in zip(enc["offset_mapping"], enc["special_tokens_mask"], strict=True)
    ]
    return list(enc["input_ids"]), spans


def _first_token_at(spans: Sequence[tuple[int, int]], char_start: int) -> int:
    for index, (_, end) in enumerate(spans):
        if end > char_start:
            return index
    return len(spans)


def evidence_token_index(tokenizer: Any, text: str, char_start: int, prefix: str = "") -> int:
    """The index of the token at which evidence starting at character ``char_start`` of
    ``text`` begins, in the model's tokenization of ``prefix + text`` (special tokens
    included); the number of tokens when no token reaches it."""
    _, spans = _encode(tokenizer, prefix + text)
    return _first_token_at(spans, char_start + len(prefix))


@dataclass
class TruncationCount:
    """Which queries of a task have their evidence beyond the model's reach.

    Example:
        >>> c = TruncationCount(max_seq_length=8, per_bucket={"begin": 0, "end": 2},
        ...                     truncated_ids={"q3", "q4"})
        >>> c.total, c.to_dict()["per_bucket"]
        (2, {'begin': 0, 'end': 2})
    """

    max_seq_length: int
    per_bucket: dict[str, int]
    truncated_ids: set[str] = field(default_factory=set)
    evidence_tokens: dict[str, int] = field(default_factory=dict)
    """Query id → token index where its evidence starts."""
    doc_tokens: dict[str, int] = field(default_factory=dict)
    """Query id → token length of its evidence document (special tokens included)."""

    @property
    def total(self) -> int:
        """Truncated queries in all."""
        return len(self.truncated_ids)

    def to_dict(self) -> dict[str, Any]:
        """``{max_seq_length, per_bucket, total}`` (what the summaries record)."""
        return {
            "max_seq_length": self.max_seq_length,
            "per_bucket": dict(self.per_bucket),
            "total": self.total,
        }


def document_prefix(st_model: Any) -> str:
    """The prompt a SentenceTransformer puts before every document (``""`` if none)."""
    prompts = getattr(st_model, "prompts", None) or {}
    for name in DOCUMENT_PROMPTS:
        if prompts.get(name):
            return str(prompts[name])
    return ""


def _document_text(doc: Mapping[str, Any]) -> str:
    """The text mteb encodes for a corpus row: ``title text`` (or ``text`` without a title)."""
    title = str(doc.get("title") or "").strip()
    text = str(doc["text"])
    return f"{title} {text}" if title else text


def _title_shift(doc: Mapping[str, Any]) -> int:
    title = str(doc.get("title") or "").strip()
    return len(title) + 1 if title else 0


def count_truncated_evidence(
    data: Any, tokenizer: Any, max_seq_length: int, *, prefix: str = ""
) -> TruncationCount:
    """Count, per bucket of the task folder ``data``
    (:class:`~hf_posbias.tasks.taskdata.PositionTaskData`), the queries whose evidence starts at
    or beyond token ``max_seq_length`` of its document in ``tokenizer``'s tokenization.

    The evidence document is the query's most relevant judged document. Queries without a
    character span (``evidence_start < 0``) are never counted as truncated; their document's
    token length is still measured.
    """
    judged = data.relevant_docs()
    # Only the evidence documents are read into rows (the corpus may be lazy arrow rows).
    evidence = {max(docs, key=lambda d: docs[d]) for docs in judged.values() if docs}
    corpus = {str(d["id"]): d for d in data.corpus if str(d["id"]) in evidence}
    per_bucket = {b: 0 for b in data.info.buckets}
    count = TruncationCount(max_seq_length=int(max_seq_length), per_bucket=per_bucket)
    cache: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
    for query in data.queries:
        qid = str(query["id"])
        docs = judged.get(qid) or {}
        if not docs:
            continue
        doc_id = max(docs, key=lambda d: docs[d])
        doc = corpus.get(doc_id)
        if doc is None:
            continue
        if doc_id not in cache:
            cache[doc_id] = _encode(tokenizer, prefix + _document_text(doc))
        ids, spans = cache[doc_id]
        count.doc_tokens[qid] = len(ids)
        start = int(query.get("evidence_start", -1))
        if start < 0:
            continue
        index = _first_token_at(spans, start + len(prefix) + _title_shift(doc))
        count.evidence_tokens[qid] = index
        if index >= max_seq_length:
            count.truncated_ids.add(qid)
            bucket = str(query["bucket"])
            per_bucket[bucket] = per_bucket.get(bucket, 0) + 1
    return count


def model_tokenization(loaded: Any) -> tuple[Any, int, str] | None:
    """``(tokenizer, max_seq_length, document prefix)`` of a loaded bi-encoder; ``None`` for a
    model without a token limit of its own (BM25, endpoints, rerankers)."""
    st_model = getattr(loaded, "sentence_transformer", None)
    if st_model is None:
        return None
    limit = getattr(st_model, "max_seq_length", None)
    tokenizer = getattr(st_model, "tokenizer", None)
    if not limit or tokenizer is None or not getattr(tokenizer, "is_fast", False):
        return None
    return tokenizer, int(limit), document_prefix(st_model)


def drop_queries(task: Any, query_ids: Iterable[str]) -> int:
    """Leave ``query_ids`` out of a loaded position task (its queries and judgements, every
    subset) before it is scored; returns how many queries were removed."""
    from hf_posbias.tasks.benchmark_registry import SPLIT

    drop = set(query_ids)
    if not drop:
        return 0
    removed = 0
    for subset in task.dataset.values():
        split = subset[SPLIT]
        before = len(split["queries"])
        split["queries"] = split["queries"].filter(lambda row: row["id"] not in drop)
        split["relevant_docs"] = {
            q: docs for q, docs in split["relevant_docs"].items() if q not in drop
        }
        removed = before - len(split["queries"])
    return removed


def token_length_strata(
    rows: Sequence[Mapping[str, Any]],
    doc_tokens: Mapping[str, int],
    *,
    edges: IntervalBuckets = POSIR_TOKEN_LENGTH,
    n_resamples: int | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """PSI per document token-length stratum of per-query rows (``query_id``, ``bucket``,
    ``ndcg_at_10``), with its bootstrap interval; ``doc_tokens``: query id → token length.

    Example:
        >>> rows = [{"query_id": f"q{i}", "bucket": "ab"[i % 2],
        ...          "ndcg_at_10": 1.0 if i % 2 else 0.5} for i in range(8)]
        >>> tokens = {f"q{i}": 100 if i < 4 else 700 for i in range(8)}
        >>> out = token_length_strata(rows, tokens)
        >>> sorted(out), out["0-512"]["psi"], out["0-512"]["n_queries"]
        (['0-512', '512-1024'], 0.5, 4)
    """
    from hf_posbias.statistics.levels import psi_by_strata

    strata = {q: edges.assign(n) for q, n in doc_tokens.items()}
    return psi_by_strata(
        rows,
        {q: s for q, s in strata.items() if s is not None},
        order=list(edges.labels),
        n_resamples=n_resamples,
        seed=seed,
    )
