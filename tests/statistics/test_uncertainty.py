"""Bootstrap intervals and paired tests over queries.

The module under test: hf_posbias.statistics.uncertainty.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_posbias.errors import InputError
from hf_posbias.statistics.psi import psi
from hf_posbias.statistics.uncertainty import bootstrap_positions, paired_comparison


def _scores(rng: np.random.Generator, n: int, means: dict[str, float]) -> dict:
    return {
        b: {f"{b}-{i}": float(v) for i, v in enumerate(np.clip(rng.normal(m, 0.2, n), 0, 1))}
        for b, m in means.items()
    }


def test_point_estimates_are_the_plain_statistics() -> None:
    rng = np.random.default_rng(0)
    data = _scores(rng, 50, {"begin": 0.8, "middle": 0.5, "end": 0.6})
    ci = bootstrap_positions(data, n_resamples=300, seed=3)
    means = {b: float(np.mean(list(v.values()))) for b, v in data.items()}
    for b, m in means.items():
        assert ci.buckets[b].estimate == pytest.approx(m)
        assert ci.buckets[b].low < m < ci.buckets[b].high
    assert ci.mean.estimate == pytest.approx(sum(means.values()) / 3)
    assert ci.psi is not None and ci.psi.estimate == pytest.approx(psi(means))
    assert ci.psi.low < ci.psi.estimate < ci.psi.high
    assert ci.n_queries == {"begin": 50, "middle": 50, "end": 50}


def test_interval_width_matches_the_normal_approximation() -> None:
    # For a mean of n iid values, the 95% percentile interval ≈ ±1.96 sd/√n.
    rng = np.random.default_rng(1)
    values = rng.random(2000)
    ci = bootstrap_positions(
        {"all": {str(i): float(v) for i, v in enumerate(values)}}, n_resamples=2000, seed=0
    )
    expected = 2 * 1.96 * values.std(ddof=1) / math.sqrt(values.size)
    width = ci.buckets["all"].high - ci.buckets["all"].low
    assert width == pytest.approx(expected, rel=0.1)


def test_seeded_and_reproducible() -> None:
    rng = np.random.default_rng(2)
    data = _scores(rng, 30, {"a": 0.7, "b": 0.4})
    one = bootstrap_positions(data, n_resamples=200, seed=5)
    two = bootstrap_positions(data, n_resamples=200, seed=5)
    other = bootstrap_positions(data, n_resamples=200, seed=6)
    assert one == two
    assert one.psi != other.psi


def test_paired_resampling_needs_the_same_queries() -> None:
    with pytest.raises(InputError, match="same query ids"):
        bootstrap_positions({"1": {"a": 1.0}, "2": {"b": 1.0}}, paired=True)


def test_paired_resampling_keeps_query_effects_together() -> None:
    # Position 2 is always exactly 0.1 below position 1 for the same query: with paired
    # resampling every replicate keeps that gap, so the PSI interval is narrow.
    rng = np.random.default_rng(3)
    base = rng.random(200) * 0.5 + 0.4
    data = {
        "1": {str(i): float(v) for i, v in enumerate(base)},
        "2": {str(i): float(v - 0.1) for i, v in enumerate(base)},
    }
    paired = bootstrap_positions(data, n_resamples=500, seed=0, paired=True)
    independent = bootstrap_positions(data, n_resamples=500, seed=0, paired=False)
    assert paired.psi.high - paired.psi.low < 0.5 * (independent.psi.high - independent.psi.low)


def test_bad_settings_and_scores_are_one_line_errors() -> None:
    with pytest.raises(InputError, match="at least 1"):
        bootstrap_positions({"a": {"q": 1.0}}, n_resamples=0)
    with pytest.raises(InputError, match="non-finite"):
        bootstrap_positions({"a": {"q": float("nan")}})
    with pytest.raises(InputError, match="confidence"):
        bootstrap_positions({"a": {"q": 1.0}}, confidence=1.5)


def test_identical_runs_show_no_difference() -> None:
    rng = np.random.default_rng(4)
    data = _scores(rng, 40, {"begin": 0.8, "end": 0.5})
    for method in ("bootstrap", "randomization"):
        cmp = paired_comparison(data, data, method=method, n_resamples=300, seed=0)
        assert cmp.mean.delta == 0.0
        assert cmp.mean.p_value == 1.0
        assert cmp.psi is not None and cmp.psi.delta == 0.0


@pytest.mark.parametrize("method", ["bootstrap", "randomization"])
def test_a_real_shift_is_significant_and_its_sign_is_b_minus_a(method: str) -> None:
    rng = np.random.default_rng(5)
    a = _scores(rng, 100, {"begin": 0.8, "end": 0.4})
    b = {
        bucket: {q: v + (0.0 if bucket == "begin" else 0.2) for q, v in s.items()}
        for bucket, s in a.items()
    }
    cmp = paired_comparison(a, b, method=method, n_resamples=1000, seed=0)
    assert cmp.buckets["end"].delta == pytest.approx(0.2)
    assert cmp.buckets["end"].p_value < 0.01
    assert cmp.buckets["begin"].p_value == 1.0
    assert cmp.psi.delta < 0 and cmp.psi.p_value < 0.01  # b is flatter


def test_randomization_p_value_matches_the_exact_permutation_test() -> None:
    # Four queries, each +0.1 in b: of the 16 sign patterns only "all +" and "all −" are as
    # extreme as observed, so the exact two-sided p-value is 2/16.
    a = {"all": {f"q{i}": 0.1 * i for i in range(4)}}
    b = {"all": {f"q{i}": 0.1 * i + 0.1 for i in range(4)}}
    cmp = paired_comparison(a, b, method="randomization", n_resamples=20000, seed=1)
    assert cmp.buckets["all"].p_value == pytest.approx(0.125, abs=0.01)


def test_comparison_counts_unshared_queries_and_refuses_other_tasks() -> None:
    a = {"x": {"q1": 0.5, "q2": 0.6, "q3": 0.1}}
    b = {"x": {"q1": 0.4, "q2": 0.9, "q9": 0.3}}
    cmp = paired_comparison(a, b, n_resamples=50)
    assert cmp.n_shared == {"x": 2} and (cmp.n_only_a, cmp.n_only_b) == (1, 1)
    assert cmp.notes
    with pytest.raises(InputError, match="different buckets"):
        paired_comparison(a, {"y": {"q1": 0.5}})
    with pytest.raises(InputError, match="share no query"):
        paired_comparison(a, {"x": {"z": 0.5}})


def test_t_test_is_scipys_per_bucket_and_welch_on_the_macro_mean() -> None:
    from scipy import stats

    rng = np.random.default_rng(4)
    a = _scores(rng, 30, {"begin": 0.6, "end": 0.5})
    b = {k: {q: min(1.0, v + rng.normal(0.05, 0.1)) for q, v in s.items()} for k, s in a.items()}
    cmp = paired_comparison(a, b, method="t-test", n_resamples=100, seed=0)
    assert cmp.method == "t-test" and any("PSI" in n for n in cmp.notes)
    diffs = []
    for bucket in ("begin", "end"):
        ids = sorted(a[bucket])
        va, vb = np.array([a[bucket][q] for q in ids]), np.array([b[bucket][q] for q in ids])
        result = stats.ttest_rel(vb, va)
        assert cmp.buckets[bucket].p_value == pytest.approx(result.pvalue)
        low, high = result.confidence_interval(0.95)
        assert (cmp.buckets[bucket].low, cmp.buckets[bucket].high) == pytest.approx((low, high))
        diffs.append(vb - va)
    # Disjoint buckets: Welch's t-test of the macro mean of the two independent differences.
    var = [d.var(ddof=1) / d.size for d in diffs]
    se = math.sqrt(sum(var)) / 2
    df = sum(var) ** 2 / sum(v**2 / (d.size - 1) for v, d in zip(var, diffs))
    t = np.mean([d.mean() for d in diffs]) / se
    assert cmp.mean.p_value == pytest.approx(2 * stats.t.sf(abs(t), df))
    # Paired buckets (every query at every position): the t-test of per-query means.
    shared = {k: {str(i): v for i, v in enumerate(s.values())} for k, s in a.items()}
    moved = {k: {str(i): v for i, v in enumerate(s.values())} for k, s in b.items()}
    paired = paired_comparison(shared, moved, method="t-test", n_resamples=50, paired=True)
    ids = sorted(shared["begin"])
    mean_a = [np.mean([shared[k][q] for k in shared]) for q in ids]
    mean_b = [np.mean([moved[k][q] for k in moved]) for q in ids]
    assert paired.mean.p_value == pytest.approx(stats.ttest_rel(mean_b, mean_a).pvalue)


def test_t_test_without_variance_has_no_p_value_and_unknown_tests_are_refused() -> None:
    a = {"all": {"q1": 0.25, "q2": 0.5, "q3": 0.75}}
    b = {"all": {q: v + 0.125 for q, v in a["all"].items()}}
    cmp = paired_comparison(a, b, method="t-test", n_resamples=20)
    assert cmp.buckets["all"].delta == 0.125 and cmp.buckets["all"].p_value == 0.0  # scipy's
    same = paired_comparison(a, a, method="t-test", n_resamples=20)
    assert math.isnan(same.buckets["all"].p_value) and math.isnan(same.mean.p_value)
    with pytest.raises(InputError, match="unknown paired test 'z': bootstrap or random"):
        paired_comparison(a, b, method="z")  # type: ignore[arg-type]
