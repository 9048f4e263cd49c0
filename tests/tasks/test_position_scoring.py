"""The three scoring protocols: default, zeng2025 (Z25's reference code) and posir."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_posbias.errors import InputError
from hf_posbias.tasks.bucketing import POSIR_RELATIVE_20, SQUAD_POSQ, THIRDS
from hf_posbias.tasks.position_scoring import (
    QueryPosition,
    first_relevant_rank,
    mean_exact,
    score_positions,
    summarize_rows,
    zeng2025_ndcg,
)


def test_zeng2025_ndcg_equals_sklearn_ndcg_score_with_ties():
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 40))
        scores = rng.integers(0, 6, n).astype(float)  # many ties
        relevant = (rng.random(n) < 0.15).astype(float)
        if relevant.sum() == 0:
            relevant[int(rng.integers(0, n))] = 1.0
        docs = {f"d{i:02d}": scores[i] for i in range(n)}
        qrels = {f"d{i:02d}": int(relevant[i]) for i in range(n)}
        assert zeng2025_ndcg(docs, qrels) == pytest.approx(
            ndcg_score([relevant], [scores], k=10), abs=1e-12
        )


def test_zeng2025_scores_zero_outside_the_top_100_and_differs_from_trec_eval():
    from hf_posbias.statistics.scoring import per_query_metrics

    docs = {f"d{i:03d}": 1000.0 - i for i in range(150)}
    assert zeng2025_ndcg(docs, {"d120": 1}) == 0.0  # rank 121: outside Z25's top-100
    # Two relevant documents, one outside the top 100: Z25's ideal DCG only sees the one inside.
    qrels = {"d001": 1, "d120": 1}
    z25 = zeng2025_ndcg(docs, qrels)
    trec = per_query_metrics({"q": docs}, {"q": qrels})["q"]["ndcg_at_10"]
    assert z25 == pytest.approx(1 / math.log2(3))  # alone in the list: DCG/IDCG of rank 2
    assert trec < z25


def test_first_relevant_rank_breaks_ties_like_trec_eval():
    assert first_relevant_rank({"a": 1.0, "b": 1.0}, {"a": 1}) == 2  # id descending on ties
    assert first_relevant_rank({"a": 1.0}, {"z": 1}) is None


def _squad_position(qid: str, start: int) -> QueryPosition:
    return QueryPosition(qid, SQUAD_POSQ.assign(start), start, start + 3, 600)


def test_zeng2025_counts_boundary_queries_in_both_buckets_and_multilabels_in_each():
    positions = {
        "on100": _squad_position("on100", 100),  # Z25: lo <= start <= hi → 0-100 AND 100-200
        "in": _squad_position("in", 150),
        "fw": QueryPosition("fw", "begin", -1, -1, 500, extra_buckets=("end",)),
    }
    run = {q: {f"doc-{q}": 1.0, "other": 0.5} for q in positions}
    qrels = {q: {f"doc-{q}": 1} for q in positions}
    extra = {"buckets": SQUAD_POSQ.describe()}
    from hf_posbias.tasks.position_scoring import rule_from_extra

    rule = rule_from_extra(extra)
    buckets = [*SQUAD_POSQ.labels, "begin", "end"]
    default_rows, _ = score_positions(positions, run, qrels, buckets=buckets, rule=rule)
    assert sorted((r.query_id, r.bucket) for r in default_rows) == [
        ("fw", "begin"),
        ("in", "100-200"),
        ("on100", "100-200"),
    ]
    z25_rows, notes = score_positions(
        positions, run, qrels, buckets=buckets, scheme="zeng2025", rule=rule
    )
    assert sorted((r.query_id, r.bucket) for r in z25_rows) == [
        ("fw", "begin"),
        ("fw", "end"),
        ("in", "100-200"),
        ("on100", "0-100"),
        ("on100", "100-200"),
    ]
    assert "2 query-bucket memberships beyond one per query" in notes[0]


def test_posir_bins_the_midpoint_into_20_bins_and_reports_strata():
    positions = {}
    run, qrels = {}, {}
    for i in range(40):
        start = 25 * i
        tokens = [100, 700, 1200, 2000][i % 4]
        positions[f"q{i}"] = QueryPosition(f"q{i}", "x", start, start + 10, 1000, doc_tokens=tokens)
        run[f"q{i}"] = {f"d{i}": 2.0, "noise": 1.0 if i % 2 else 3.0}
        qrels[f"q{i}"] = {f"d{i}": 1}
    positions["nospan"] = QueryPosition("nospan", "x", -1, -1, 1000)
    run["nospan"], qrels["nospan"] = {"d": 1.0}, {"d": 1}
    rows, notes = score_positions(positions, run, qrels, buckets=["x"], scheme="posir")
    assert len(rows) == 40 and notes == ["posir: 1 queries without an evidence span not scored"]
    for r in rows:
        assert r.bucket == POSIR_RELATIVE_20.assign((r.evidence_start + 5) / 1000)
    scores = summarize_rows(rows, list(POSIR_RELATIVE_20.labels), scoring="posir")
    assert sum(scores.n_queries.values()) == 40 and len(scores.buckets) == 20
    present = [v for v in scores.ndcg_at_10.values() if v is not None]
    assert scores.psi == pytest.approx(1 - min(present) / max(present))
    assert set(scores.strata) == {"0-512", "512-1024", "1024-1536", "1536+"}
    assert sum(s["n_queries"] for s in scores.strata.values()) == 40
    no_spans = {"a": QueryPosition("a", "x", -1, -1, 10)}
    with pytest.raises(InputError, match="posir scoring needs character evidence spans"):
        score_positions(no_spans, {"a": {"d": 1.0}}, {"a": {"d": 1}}, buckets=["x"], scheme="posir")


def test_nan_scores_are_a_one_line_error():
    positions = {"q": QueryPosition("q", "begin", 0, 1, 10)}
    with pytest.raises(InputError, match="NaN or infinite scores for 1 of 1 queries"):
        score_positions(positions, {"q": {"d": float("nan")}}, {"q": {"d": 1}}, buckets=["begin"])


def test_summary_is_the_exact_mean_of_the_rows():
    positions = {
        f"q{i}": QueryPosition(f"q{i}", THIRDS.labels[i % 3], i, i + 1, 30) for i in range(30)
    }
    rng = np.random.default_rng(1)
    run = {q: {f"d{j}": float(rng.random()) for j in range(12)} for q in positions}
    qrels = {q: {f"d{int(rng.integers(0, 12))}": 1} for q in positions}
    rows, _ = score_positions(positions, run, qrels, buckets=list(THIRDS.labels))
    scores = summarize_rows(rows, list(THIRDS.labels))
    for bucket in THIRDS.labels:
        values = [r.ndcg_at_10 for r in rows if r.bucket == bucket]
        assert scores.ndcg_at_10[bucket] == mean_exact(values)
        assert scores.ndcg_at_10[bucket] == math.fsum(values) / len(values)
    assert scores.mean == pytest.approx(sum(scores.ndcg_at_10.values()) / 3)
