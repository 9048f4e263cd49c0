"""Per-query IR metrics of a run against qrels: the project's one scorer (pytrec_eval).

Every per-query number hf-posbias reports — a retrieval task's per-query table, a listwise
reranker's nDCG@10 at each input position — comes from :func:`per_query_metrics`. It wraps
``pytrec_eval`` (the scorer mteb uses) and fixes what pytrec_eval leaves out: a query that has
relevant documents but an empty or missing ranking scores 0 on every metric instead of vanishing
from the result (which would inflate the average). Ties between equal scores are broken as
trec_eval does (by document id, descending).

:func:`ranking_to_run` turns an ordered list of document ids into run scores that keep exactly
that order.

Example:
    >>> qrels = {"q1": {"d1": 1}, "q2": {"d9": 1}}
    >>> run = {"q1": ranking_to_run(["d3", "d1", "d2"])}
    >>> scores = per_query_metrics(run, qrels)
    >>> round(scores["q1"]["ndcg_at_10"], 4), scores["q2"]["ndcg_at_10"]
    (0.6309, 0.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hf_posbias.errors import InputError

Run = Mapping[str, Mapping[str, float]]
"""``{query_id: {doc_id: score}}``, higher is better."""
Qrels = Mapping[str, Mapping[str, int]]
"""``{query_id: {doc_id: relevance}}``; relevance > 0 is relevant."""

DEFAULT_METRICS: tuple[str, ...] = ("ndcg_at_10",)

_TREC_MEASURES = {
    "ndcg_at": "ndcg_cut",
    "recall_at": "recall",
    "precision_at": "P",
    "map_at": "map_cut",
}


def _trec_name(metric: str) -> tuple[str, str]:
    """``ndcg_at_10`` → (``ndcg_cut.10``, ``ndcg_cut_10``); ``mrr`` → ``recip_rank``."""
    if metric == "mrr":
        return "recip_rank", "recip_rank"
    prefix, _, cutoff = metric.rpartition("_")
    if prefix in _TREC_MEASURES and cutoff.isdigit():
        measure = _TREC_MEASURES[prefix]
        return f"{measure}.{cutoff}", f"{measure}_{cutoff}"
    raise InputError(
        f"unknown metric {metric!r}: use ndcg_at_K, recall_at_K, precision_at_K, map_at_K or mrr"
    )


def ranking_to_run(ranking: Sequence[str]) -> dict[str, float]:
    """Scores that reproduce ``ranking`` (best first) exactly: ``len − rank``, no ties.

    Example:
        >>> ranking_to_run(["b", "a"])
        {'b': 2.0, 'a': 1.0}
    """
    if len(set(ranking)) != len(ranking):
        raise InputError("a ranking lists the same document twice")
    n = len(ranking)
    return {doc: float(n - i) for i, doc in enumerate(ranking)}


def per_query_metrics(
    run: Run, qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS
) -> dict[str, dict[str, float]]:
    """Per-query metrics for every query of ``qrels`` that has a relevant document.

    Queries missing from ``run`` (or with an empty ranking) score 0; queries in ``run`` without
    relevant documents in ``qrels`` are not scored (nDCG is undefined for them).

    Example:
        >>> per_query_metrics({"q": {"a": 2.0, "b": 1.0}}, {"q": {"b": 1}}, ["mrr", "recall_at_1"])
        {'q': {'mrr': 0.5, 'recall_at_1': 0.0}}
    """
    import pytrec_eval

    names = {m: _trec_name(m) for m in metrics}
    judged = {
        str(q): {str(d): int(r) for d, r in docs.items()}
        for q, docs in qrels.items()
        if any(int(r) > 0 for r in docs.values())
    }
    if not judged:
        raise InputError("the qrels hold no relevant document: nothing to score")
    clean_run = {
        str(q): {str(d): float(s) for d, s in docs.items()}
        for q, docs in run.items()
        if str(q) in judged and docs
    }
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {trec for trec, _ in names.values()})
    raw = evaluator.evaluate(clean_run) if clean_run else {}
    return {
        q: {m: float(raw.get(q, {}).get(key, 0.0)) for m, (_, key) in names.items()} for q in judged
    }
