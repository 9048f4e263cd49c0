"""Uncertainty of position-wise scores: bootstrap intervals and paired tests over queries.

Per-position nDCG@10, their mean and PSI are statistics of a sample of queries; a difference of
0.01 in PSI between two models may be noise. This module resamples *queries*:

- :func:`bootstrap_positions` — percentile confidence intervals for each bucket's mean score, the
  macro mean over buckets and PSI. With ``paired=False`` (retrieval tasks: every query sits in
  exactly one bucket) queries are resampled within each bucket independently, so bucket sizes
  stay fixed. With ``paired=True`` (the listwise input-position test: every query is scored at
  every position) the query ids are resampled once per replicate and used for every bucket,
  which keeps the positions' shared query effects together.
- :func:`paired_comparison` — two runs on the same queries (``b`` against ``a``): Δ = b − a per
  bucket, for the mean and for PSI, each with a paired-bootstrap percentile interval and a
  two-sided p-value from a paired bootstrap (shifted to the null), a paired randomization test
  (each query's two scores swapped with probability 1/2) or a paired t-test (``t-test``, the
  test of Q26's significance marks: ``scipy.stats.ttest_rel`` on each bucket's per-query scores,
  with the t interval of the mean difference).

Replicates are drawn from one seeded ``numpy`` generator, so results are reproducible, and in
chunks so memory stays bounded for large query sets.

Example:
    >>> scores = {"begin": {"q1": 1.0, "q2": 0.8, "q3": 0.9},
    ...           "end": {"q4": 0.5, "q5": 0.3, "q6": 0.4}}
    >>> ci = bootstrap_positions(scores, n_resamples=200, seed=0)
    >>> round(ci.buckets["begin"].estimate, 3), round(ci.psi.estimate, 3)
    (0.9, 0.556)
    >>> ci.buckets["begin"].low <= 0.9 <= ci.buckets["begin"].high
    True
    >>> cmp = paired_comparison(scores, {b: {q: v + 0.1 for q, v in s.items()}
    ...                                  for b, s in scores.items()}, n_resamples=200, seed=0)
    >>> round(cmp.mean.delta, 3)
    0.1
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from hf_posbias.errors import InputError
from hf_posbias.jsonable import JsonRecord
from hf_posbias.statistics import PAIRED_TESTS
from hf_posbias.statistics.psi import psi_columns

PerQueryScores = Mapping[str, Mapping[str, float]]
"""Scores by bucket, then by query id: ``{bucket: {query_id: score}}``."""

Method = Literal["bootstrap", "randomization", "t-test"]
"""A paired test's name: the values of :data:`hf_posbias.statistics.PAIRED_TESTS`."""

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
_CHUNK_CELLS = 4_000_000  # replicate × query cells drawn at once: ≈32 MB of int64 indices


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile confidence interval."""

    estimate: float
    low: float
    high: float

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the interval (bounds included)."""
        return self.low <= value <= self.high


@dataclass(frozen=True)
class Difference:
    """Δ = b − a with a paired confidence interval and a two-sided p-value."""

    delta: float
    low: float
    high: float
    p_value: float


@dataclass
class PositionIntervals(JsonRecord):
    """Bootstrap intervals of per-bucket scores, their macro mean, PSI and harmonic mean.

    ``psi`` is ``None`` when PSI is undefined for the observed scores (every bucket 0);
    ``psi_undefined`` counts replicates where it was undefined (left out of the interval).
    """

    buckets: dict[str, Interval]
    mean: Interval
    psi: Interval | None
    n_queries: dict[str, int]
    n_resamples: int
    confidence: float
    seed: int
    paired: bool
    psi_undefined: int = 0
    harmonic_mean: Interval | None = None


@dataclass
class PairedComparison(JsonRecord):
    """Run ``b`` against run ``a`` on their shared queries."""

    buckets: dict[str, Difference]
    mean: Difference
    psi: Difference | None
    n_shared: dict[str, int]
    n_only_a: int
    n_only_b: int
    method: str
    n_resamples: int
    confidence: float
    seed: int
    paired: bool
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- helpers


def check_resampling(n_resamples: int, confidence: float = 0.95) -> None:
    """Refuse resampling settings no interval can come from (one-line :class:`InputError`);
    callers with heavy work before the resampling call it first.

    Example:
        >>> check_resampling(0)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: the number of bootstrap resamples must be at least 1, got 0
    """
    if not isinstance(n_resamples, int) or n_resamples < 1:
        raise InputError(f"the number of bootstrap resamples must be at least 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def _as_arrays(scores: PerQueryScores, what: str) -> dict[str, tuple[list[str], np.ndarray]]:
    """Bucket → (sorted query ids, scores); checks every score is a finite number."""
    if not scores:
        raise InputError(f"{what}: no buckets to score")
    out: dict[str, tuple[list[str], np.ndarray]] = {}
    for bucket, per_query in scores.items():
        ids = sorted(per_query)
        values = np.asarray([per_query[q] for q in ids], dtype=float)
        bad = int((~np.isfinite(values)).sum())
        if bad:
            raise InputError(f"{what}: {bad} non-finite score(s) in bucket {bucket!r}")
        out[str(bucket)] = (ids, values)
    return out


def _percentiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def _chunks(n_resamples: int, n_cells: int) -> Iterator[int]:
    step = max(1, _CHUNK_CELLS // max(1, n_cells))
    done = 0
    while done < n_resamples:
        size = min(step, n_resamples - done)
        yield size
        done += size


def _aligned(arrays: dict[str, tuple[list[str], np.ndarray]], what: str) -> None:
    reference = next(iter(arrays.values()))[0]
    for bucket, (ids, _) in arrays.items():
        if ids != reference:
            raise InputError(
                f"{what}: paired resampling needs the same query ids in every bucket; "
                f"bucket {bucket!r} differs"
            )


# --------------------------------------------------------------------------- intervals


def bootstrap_positions(
    per_query: PerQueryScores,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    paired: bool = False,
) -> PositionIntervals:
    """Percentile bootstrap intervals for each bucket's mean, the macro mean and PSI.

    Buckets without queries are left out (the caller reports them). The macro mean is the
    unweighted mean over buckets, as in the evaluation summaries.

    Example:
        >>> ci = bootstrap_positions({"1": {"a": 1.0, "b": 0.0}, "2": {"a": 0.5, "b": 0.5}},
        ...                          n_resamples=100, seed=1, paired=True)
        >>> ci.paired, ci.n_queries
        (True, {'1': 2, '2': 2})
    """
    check_resampling(n_resamples, confidence)
    arrays = {b: v for b, v in _as_arrays(per_query, "bootstrap").items() if v[1].size}
    if not arrays:
        raise InputError("bootstrap: every bucket is empty")
    if paired:
        _aligned(arrays, "bootstrap")
    names = list(arrays)
    values = [arrays[b][1] for b in names]
    observed = np.array([v.mean() for v in values])
    rng = np.random.default_rng(seed)
    reps = np.empty((len(values), n_resamples))

    def apply(row: int, idx: np.ndarray, cols: slice) -> None:
        reps[row, cols] = values[row][idx].mean(axis=1)

    _per_bucket_draws(values, n_resamples, paired, lambda r, n: rng.integers(0, n, (r, n)), apply)
    from hf_posbias.statistics.psi import harmonic_mean

    rep_mean = reps.mean(axis=0)
    rep_psi = psi_columns(reps)
    rep_hm = harmonic_mean(reps, axis=0)
    buckets = {
        b: Interval(float(observed[i]), *_percentiles(reps[i], confidence))
        for i, b in enumerate(names)
    }
    observed_psi = psi_columns(observed[:, None])[0]
    psi_interval = (
        Interval(float(observed_psi), *_percentiles(rep_psi, confidence))
        if np.isfinite(observed_psi)
        else None
    )
    return PositionIntervals(
        buckets=buckets,
        mean=Interval(float(observed.mean()), *_percentiles(rep_mean, confidence)),
        psi=psi_interval,
        n_queries={b: int(arrays[b][1].size) for b in names},
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        paired=paired,
        psi_undefined=int(np.isnan(rep_psi).sum()),
        harmonic_mean=Interval(harmonic_mean(observed), *_percentiles(rep_hm, confidence)),
    )


# --------------------------------------------------------------------------- paired tests


def _shared(
    a: PerQueryScores, b: PerQueryScores
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], int, int]:
    """Bucket → (a scores, b scores) on the queries both runs scored in that bucket."""
    arr_a = _as_arrays(a, "run A")
    arr_b = _as_arrays(b, "run B")
    if set(arr_a) != set(arr_b):
        raise InputError(
            f"the two runs have different buckets: {sorted(arr_a)} vs {sorted(arr_b)} "
            "(are they from the same task?)"
        )
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    only_a = only_b = 0
    for bucket in arr_a:
        ids_a, va = arr_a[bucket]
        ids_b, vb = arr_b[bucket]
        pos_a = {q: i for i, q in enumerate(ids_a)}
        pos_b = {q: i for i, q in enumerate(ids_b)}
        common = sorted(set(pos_a) & set(pos_b))
        only_a += len(pos_a) - len(common)
        only_b += len(pos_b) - len(common)
        if common:
            out[bucket] = (
                va[[pos_a[q] for q in common]],
                vb[[pos_b[q] for q in common]],
            )
    if not out:
        raise InputError("the two runs share no query: nothing to compare (same task?)")
    return out, only_a, only_b


def _stats(means_a: np.ndarray, means_b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Δ bucket means, Δ macro mean and Δ PSI for columns of bucket means."""
    return (
        means_b - means_a,
        means_b.mean(axis=0) - means_a.mean(axis=0),
        psi_columns(means_b) - psi_columns(means_a),
    )


def _p_two_sided(null_draws: np.ndarray, observed: float) -> float:
    finite = null_draws[np.isfinite(null_draws)]
    if finite.size == 0 or not np.isfinite(observed):
        return float("nan")
    extreme = int((np.abs(finite) >= abs(observed) - 1e-12).sum())
    return (1 + extreme) / (1 + finite.size)


def paired_comparison(
    a: PerQueryScores,
    b: PerQueryScores,
    *,
    method: Method = "bootstrap",
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    paired: bool = False,
) -> PairedComparison:
    """Paired comparison of run ``b`` against run ``a`` (Δ = b − a) on their shared queries.

    Intervals are paired-bootstrap percentiles. p-values are two-sided: ``bootstrap`` uses the
    bootstrap distribution shifted to the null (Δ* − Δ̂); ``randomization`` swaps each query's two
    scores with probability 1/2 (an approximate permutation test); ``t-test`` is the paired
    t-test (:func:`paired_t_tests`: each bucket and the mean get its p-value and t interval, PSI,
    not a mean, keeps the bootstrap's, as a note says). ``paired=True`` treats the
    buckets as the same queries (listwise input positions): resampling and swaps are drawn per
    query, shared by all buckets. Queries scored by only one run are counted, not used.

    Example:
        >>> a = {"all": {"q1": 0.2, "q2": 0.4, "q3": 0.6, "q4": 0.8}}
        >>> b = {"all": {"q1": 0.3, "q2": 0.5, "q3": 0.7, "q4": 0.9}}
        >>> cmp = paired_comparison(a, b, method="randomization", n_resamples=500, seed=0)
        >>> round(cmp.buckets["all"].delta, 3), cmp.buckets["all"].p_value < 0.2
        (0.1, True)
    """
    check_resampling(n_resamples, confidence)
    if method not in PAIRED_TESTS:
        raise InputError(f"unknown paired test {method!r}: {' or '.join(PAIRED_TESTS)}")
    shared, only_a, only_b = _shared(a, b)
    names = list(shared)
    if paired:
        lengths = {len(shared[n][0]) for n in names}
        if len(lengths) != 1:
            raise InputError("paired buckets need the same shared queries in every bucket")
    va = [shared[n][0] for n in names]
    vb = [shared[n][1] for n in names]
    obs_a = np.array([v.mean() for v in va])[:, None]
    obs_b = np.array([v.mean() for v in vb])[:, None]
    obs_bucket, obs_mean, obs_psi = (x[..., 0] for x in _stats(obs_a, obs_b))

    rng = np.random.default_rng(seed)
    # Bootstrap of the paired differences: the same query indices for a and b.
    boot_a, boot_b = _resampled_means(
        va, vb, n_resamples, paired, lambda r, n: rng.integers(0, n, size=(r, n)), _same_queries
    )
    boot_bucket, boot_mean, boot_psi = _stats(boot_a, boot_b)

    if method != "randomization":  # t-test: PSI, not a mean, keeps the bootstrap's p-value
        null_bucket = boot_bucket - obs_bucket[:, None]
        null_mean = boot_mean - obs_mean
        null_psi = boot_psi - obs_psi
    else:
        perm_a, perm_b = _resampled_means(
            va, vb, n_resamples, paired, lambda r, n: rng.random((r, n)) < 0.5, _swapped
        )
        null_bucket, null_mean, null_psi = _stats(perm_a, perm_b)

    def diff(observed: float, boot: np.ndarray, null: np.ndarray) -> Difference:
        low, high = _percentiles(boot, confidence)
        return Difference(float(observed), low, high, _p_two_sided(null, float(observed)))

    notes = []
    if only_a or only_b:
        notes.append(f"{only_a} query(ies) only in run A and {only_b} only in run B were left out")
    psi_diff = diff(float(obs_psi), boot_psi, null_psi) if np.isfinite(obs_psi) else None
    if psi_diff is None:
        notes.append("PSI is undefined for one of the runs (every bucket scored 0)")
    buckets = {
        n: diff(float(obs_bucket[i]), boot_bucket[i], null_bucket[i]) for i, n in enumerate(names)
    }
    mean = diff(float(obs_mean), boot_mean, null_mean)
    if method == "t-test":
        tested = paired_t_tests(va, vb, paired=paired, confidence=confidence)
        buckets = dict(zip(names, tested[:-1]))
        mean = tested[-1]
        if psi_diff is not None:
            notes.append("PSI: paired-bootstrap interval and p-value (a t-test compares means)")
    return PairedComparison(
        buckets=buckets,
        mean=mean,
        psi=psi_diff,
        n_shared={n: int(len(shared[n][0])) for n in names},
        n_only_a=only_a,
        n_only_b=only_b,
        method=method,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        paired=paired,
        notes=notes,
    )


def _t_difference(result: Any, delta: float, confidence: float) -> Difference:
    low, high = result.confidence_interval(confidence)
    return Difference(delta, float(low), float(high), float(result.pvalue))


def paired_t_tests(
    va: Sequence[np.ndarray],
    vb: Sequence[np.ndarray],
    *,
    paired: bool = False,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[Difference]:
    """Paired t-tests of ``b`` against ``a`` (Δ = b − a): one per bucket, then the macro mean.

    ``va[i]`` and ``vb[i]`` are bucket ``i``'s scores of the same queries in the same order.
    Each bucket: ``scipy.stats.ttest_rel(b, a)`` (two-sided) with the t interval of the mean
    difference. The macro mean over buckets: with ``paired=True`` (every query in every bucket)
    the t-test of each query's mean over the buckets; otherwise (disjoint buckets) the Welch
    t-test of the macro mean of independent bucket differences (Satterthwaite degrees of
    freedom), which is the bucket's own t-test when there is one bucket. Without variance (one
    query, or equal differences) the p-value is scipy's (0 for a nonzero Δ, ``nan`` for none).

    Example:
        >>> import numpy as np
        >>> from scipy.stats import ttest_rel
        >>> a, b = np.array([.2, .4, .6, .9]), np.array([.3, .6, .7, .9])
        >>> bucket, mean = paired_t_tests([a], [b])
        >>> round(bucket.delta, 3), bool(bucket.p_value == ttest_rel(b, a).pvalue)
        (0.1, True)
        >>> round(mean.p_value, 6) == round(bucket.p_value, 6)
        True
    """
    from scipy import stats

    out = []
    for a, b in zip(va, vb):
        with np.errstate(all="ignore"):
            out.append(_t_difference(stats.ttest_rel(b, a), float(b.mean() - a.mean()), confidence))
    if paired:
        mean_a, mean_b = np.mean(np.stack(va), axis=0), np.mean(np.stack(vb), axis=0)
        with np.errstate(all="ignore"):
            result = stats.ttest_rel(mean_b, mean_a)
        out.append(_t_difference(result, float(mean_b.mean() - mean_a.mean()), confidence))
        return out
    diffs = [b - a for a, b in zip(va, vb)]
    delta = float(np.mean([d.mean() for d in diffs]))
    with np.errstate(all="ignore"):
        var = [d.var(ddof=1) / d.size if d.size > 1 else np.nan for d in diffs]
        se = float(np.sqrt(np.sum(var))) / len(diffs)
        df = float(np.sum(var) ** 2 / np.sum([v**2 / (d.size - 1) for v, d in zip(var, diffs)]))
    if not (np.isfinite(se) and se > 0 and np.isfinite(df)):
        out.append(Difference(delta, float("nan"), float("nan"), float("nan")))
        return out
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    p_value = float(2 * stats.t.sf(abs(delta) / se, df))
    out.append(Difference(delta, delta - half, delta + half, p_value))
    return out


def bootstrap_statistic(
    runs: Sequence[PerQueryScores],
    statistic: Callable[[list[np.ndarray]], np.ndarray],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Difference:
    """A statistic of several runs' bucket means, with a joint bootstrap interval and p-value.

    The runs are scored on the same task: each bucket keeps the queries every run scored, and
    one set of query draws per bucket is shared by all runs (so paired differences keep their
    pairing). ``statistic`` maps one ``(buckets × replicates)`` array of bucket means per run
    to one value per replicate. The p-value tests "the statistic is 0" two-sidedly with the
    bootstrap distribution shifted to the null, as :func:`paired_comparison` does.

    Example:
        >>> a = {"x": {"q1": 0.9, "q2": 0.7}, "y": {"q3": 0.3, "q4": 0.5}}
        >>> b = {"x": {"q1": 0.6, "q2": 0.6}, "y": {"q3": 0.5, "q4": 0.5}}
        >>> d = bootstrap_statistic([a, b], lambda m: 1 - psi_columns(m[1]) / psi_columns(m[0]),
        ...                         n_resamples=200, seed=0)
        >>> round(d.delta, 3), d.low <= d.delta <= d.high
        (0.667, True)
    """
    check_resampling(n_resamples, confidence)
    if not runs:
        raise InputError("bootstrap_statistic: no run given")
    arrays = [_as_arrays(r, f"run {i + 1}") for i, r in enumerate(runs)]
    buckets = [b for b in arrays[0] if all(b in a for a in arrays[1:])]
    values: list[list[np.ndarray]] = [[] for _ in runs]
    for bucket in buckets:
        common = sorted(set.intersection(*(set(a[bucket][0]) for a in arrays)))
        if not common:
            continue
        for i, a in enumerate(arrays):
            position = {q: k for k, q in enumerate(a[bucket][0])}
            values[i].append(a[bucket][1][[position[q] for q in common]])
    if not values[0]:
        raise InputError("the runs share no query: no joint statistic (same task?)")
    observed = float(statistic([np.array([v.mean() for v in run])[:, None] for run in values])[0])
    rng = np.random.default_rng(seed)
    reps = [np.empty((len(values[0]), n_resamples)) for _ in runs]

    def apply(row: int, idx: np.ndarray, cols: slice) -> None:
        for i in range(len(runs)):
            reps[i][row, cols] = values[i][row][idx].mean(axis=1)

    _per_bucket_draws(values[0], n_resamples, False, lambda r, n: rng.integers(0, n, (r, n)), apply)
    boot = np.asarray(statistic(reps), dtype=float)
    low, high = _percentiles(boot, confidence)
    return Difference(observed, low, high, _p_two_sided(boot - observed, observed))


def _per_bucket_draws(
    va: list[np.ndarray],
    n_resamples: int,
    paired: bool,
    draw: Callable[[int, int], np.ndarray],
    apply: Callable[[int, np.ndarray, slice], None],
) -> None:
    """Call ``apply(bucket, draws, columns)`` chunk by chunk; ``paired`` shares draws."""
    if paired:
        n = va[0].size
        start = 0
        for size in _chunks(n_resamples, n):
            draws = draw(size, n)
            for row in range(len(va)):
                apply(row, draws, slice(start, start + size))
            start += size
        return
    for row, values in enumerate(va):
        start = 0
        for size in _chunks(n_resamples, values.size):
            apply(row, draw(size, values.size), slice(start, start + size))
            start += size


def _resampled_means(
    va: list[np.ndarray],
    vb: list[np.ndarray],
    n_resamples: int,
    paired: bool,
    draw: Callable[[int, int], np.ndarray],
    pick: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray]:
    """Each bucket's mean of ``a`` and of ``b`` in ``n_resamples`` resamples (rows: buckets):
    ``pick(a, b, draws)`` makes one chunk of resampled rows from ``draw(rows, n)``."""
    out_a = np.empty((len(va), n_resamples))
    out_b = np.empty((len(va), n_resamples))

    def apply(row: int, draws: np.ndarray, cols: slice) -> None:
        a, b = pick(va[row], vb[row], draws)
        out_a[row, cols] = a.mean(axis=1)
        out_b[row, cols] = b.mean(axis=1)

    _per_bucket_draws(va, n_resamples, paired, draw, apply)
    return out_a, out_b


def _same_queries(a: np.ndarray, b: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap: the same drawn queries for ``a`` and ``b`` (paired differences)."""
    return a[idx], b[idx]


def _swapped(a: np.ndarray, b: np.ndarray, swap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Randomization: each query's ``a`` and ``b`` scores exchanged where ``swap``."""
    return np.where(swap, b, a), np.where(swap, a, b)
