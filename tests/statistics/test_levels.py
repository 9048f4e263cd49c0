"""Harmonic mean, position trend and PSI by length: checked against scipy and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hf_posbias.statistics.levels import (
    position_trend,
    psi_by_length,
    trend_intervals,
)
from hf_posbias.statistics.psi import harmonic_mean
from hf_posbias.statistics.uncertainty import bootstrap_positions


def test_trend_matches_scipy_and_its_interval_covers_it():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 60)
    y = np.clip(0.8 - 0.4 * x + rng.normal(0, 0.15, 60), 0, 1)
    trend = position_trend(x, y)
    fit = stats.linregress(x, y)
    assert trend["slope"] == pytest.approx(fit.slope)
    assert trend["r2"] == pytest.approx(fit.rvalue**2)
    rho = stats.spearmanr(x, y)
    assert trend["spearman_rho"] == pytest.approx(rho.statistic)
    assert trend["spearman_p"] == pytest.approx(rho.pvalue)
    ci = trend_intervals(x, y, n_resamples=300, seed=1)
    assert ci["slope"]["low"] < fit.slope < ci["slope"]["high"] < 0
    assert ci["r2"]["low"] < trend["r2"] < ci["r2"]["high"]
    assert position_trend([0.1, 0.2], [1.0, 0.0])["slope"] is None  # too few queries
    assert position_trend([0.5, 0.5, 0.5], [1.0, 0.0, 1.0])["slope"] is None  # constant x


def test_harmonic_mean_and_its_bootstrap_interval():
    assert harmonic_mean([0.9, 0.3]) == pytest.approx(stats.hmean([0.9, 0.3]))
    assert harmonic_mean([0.9, 0.0]) == 0.0
    scores = {"begin": {"a": 1.0, "b": 0.8, "c": 0.9}, "end": {"d": 0.5, "e": 0.3, "f": 0.4}}
    ci = bootstrap_positions(scores, n_resamples=300, seed=0).harmonic_mean
    assert ci.estimate == pytest.approx(stats.hmean([0.9, 0.4]))
    assert ci.low <= ci.estimate <= ci.high


def test_psi_by_length_strata_by_hand():
    rows = []
    for i in range(30):  # short documents: no position effect; long ones: end is halved
        length = (100, 500, 1000)[i // 10]
        bucket = "begin" if i % 2 else "end"
        score = 0.8 if (length < 1000 or bucket == "begin") else 0.4
        rows.append(
            {"query_id": f"q{i}", "bucket": bucket, "doc_length": length, "ndcg_at_10": score}
        )
    out = psi_by_length(rows, n_resamples=100)
    assert out["short"]["psi"] == pytest.approx(0.0)
    assert out["long"]["psi"] == pytest.approx(0.5)
    assert sum(e["n_queries"] for e in out.values()) == 30
