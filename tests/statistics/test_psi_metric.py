"""PSI: the formula module and the ``evaluate`` metric module loaded offline by path."""

from __future__ import annotations

import pytest

from hf_posbias.errors import InputError
from hf_posbias.statistics.metrics import psi_metric_path
from hf_posbias.statistics.psi import psi, summarize_positions, worst_relative_drop


def test_psi_known_values():
    assert psi([0.5, 0.4, 0.25]) == pytest.approx(0.5)
    assert psi({"begin": 0.8, "end": 0.8}) == 0.0
    assert psi([0.0, 0.3]) == 1.0
    assert worst_relative_drop([0.5, 0.6, 0.4]) == pytest.approx(0.2)
    assert worst_relative_drop([0.2, 0.5]) == 0.0


def test_psi_undefined_and_bad_values():
    with pytest.raises(InputError, match="undefined"):
        psi([0.0, 0.0, 0.0])
    for bad in ([], [0.1, float("nan")], [0.2, -0.1], [float("inf")]):
        with pytest.raises(InputError):
            psi(bad)


def test_summary_warns_about_empty_buckets():
    with pytest.warns(UserWarning, match="buckets without queries: middle"):
        s = summarize_positions({"begin": 0.6, "middle": None, "end": 0.3})
    assert s.empty_buckets == ["middle"] and s.mean == pytest.approx(0.45)
    assert s.psi == pytest.approx(0.5)


@pytest.fixture(scope="module")
def metric():
    import evaluate

    return evaluate.load(str(psi_metric_path()))


def test_metric_loads_offline_and_matches_the_formula(metric, monkeypatch):
    import os

    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # conftest: the Hub is never contacted
    scores = [0.61, 0.42, 0.55, 0.3]
    out = metric.compute(scores=scores, positions=["a", "b", "c", "d"])
    direct = summarize_positions(dict(zip("abcd", scores)))
    assert out["psi"] == pytest.approx(direct.psi)
    assert out["mean"] == pytest.approx(sum(scores) / 4)
    assert out["worst_drop"] == pytest.approx(direct.worst_drop)
    assert (out["best_position"], out["worst_position"]) == ("a", "d")
    assert metric.compute(scores=[0.5, 0.25])["worst_position"] == "p2"
    assert "Zeng" in metric.citation and "1 - min(s) / max(s)" in metric.description


def test_metric_errors_and_empty_buckets(metric):
    with pytest.raises(InputError, match="undefined"):
        metric.compute(scores=[0.0, 0.0], positions=["x", "y"])
    with pytest.raises(InputError, match="unique"):
        metric.compute(scores=[0.1, 0.2], positions=["x", "x"])
    with pytest.warns(UserWarning, match="buckets without queries"):
        out = metric.compute(scores=[0.6, None, 0.3], positions=["begin", "middle", "end"])
    assert out["empty_positions"] == ["middle"] and out["psi"] == pytest.approx(0.5)
    metric.add_batch(scores=[0.2, 0.4], positions=["p", "q"])
    assert metric.compute()["psi"] == pytest.approx(0.5)


def test_metric_card_has_the_evaluate_header():
    card = (psi_metric_path() / "README.md").read_text()
    header = card.split("---")[1]
    for key in ("title: PSI", "tags:", "- evaluate", "- metric", "description:"):
        assert key in header
    for section in ("## Metric Description", "### Inputs", "### Output Values", "## Citation"):
        assert section in card
    assert "2505.13950" in card


def test_metric_cites_the_one_z25_entry():
    from hf_posbias.citations import Z25

    assert Z25 in (psi_metric_path() / "README.md").read_text()  # the Hub card: verbatim copy
    assert "_CITATION = citations.Z25" in (psi_metric_path() / "psi.py").read_text()


def test_every_per_position_record_uses_the_one_summary():
    """PositionScores (mteb's scores), EvaluationSummary (summary.json) and the listwise
    positions table take mean, PSI (None when undefined), drop and best/worst from
    summarize_positions, including when every bucket scores 0."""
    import random
    import warnings

    from hf_posbias.evaluation.summary import EvaluationSummary
    from hf_posbias.listwise.experiments.controlled import summarize_positions_rows
    from hf_posbias.statistics.psi import UNDEFINED_PSI, defined_psi
    from hf_posbias.tasks.position_scoring import QueryResult, summarize_rows

    assert defined_psi([0.5, 0.25]) == pytest.approx(0.5) and defined_psi([0.0, 0.0]) is None
    rng = random.Random(0)
    buckets = ["begin", "middle", "end"]
    for case in range(6):
        zero = case % 3 == 0
        values = [0.0 if zero else rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(12)]
        # Query q<j> scored at every position (the listwise test's layout): values[3j + p].
        rows = [
            QueryResult(f"q{i // 3}", buckets[i % 3], 1, 2, 0.5, 10, v, 1)
            for i, v in enumerate(values)
        ]
        scores = summarize_rows(rows, buckets)
        direct = summarize_positions(scores.ndcg_at_10, allow_undefined_psi=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summary = EvaluationSummary.from_scores(
                "m", "T", buckets, scores.ndcg_at_10, n_queries=scores.n_queries
            )
        listwise = summarize_positions_rows(
            [{"query_id": r.query_id, "position": 1 + buckets.index(r.bucket),
              "ndcg_at_10": r.ndcg_at_10, "windows": 1, "windows_with_fallback": 0,
              "appended": 0, "cut": 0, "identifiers": 3} for r in rows],
            k=3, reranker="x", n_resamples=20,
        )  # fmt: skip
        for record in (scores, summary):
            assert (record.psi, record.worst_drop) == (direct.psi, direct.worst_drop)
            assert (record.best_bucket, record.worst_bucket) == (
                direct.best_bucket,
                direct.worst_bucket,
            )
            assert record.mean == pytest.approx(direct.mean)
        assert listwise["psi"] == (None if direct.psi is None else pytest.approx(direct.psi))
        assert (UNDEFINED_PSI in scores.notes) == zero
        assert any(UNDEFINED_PSI in w for w in summary.warnings) == zero
    with pytest.raises(InputError, match="undefined"):
        summarize_positions({"a": 0.0, "b": 0.0})
