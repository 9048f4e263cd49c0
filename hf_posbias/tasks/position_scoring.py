"""Per-position scores of a run under three protocols: ``default``, ``zeng2025`` and ``posir``.

The same ranked lists give different per-position numbers depending on how a protocol assigns
queries to positions and how it computes nDCG. :func:`score_positions` turns a run, the qrels and
what the task folder says about each query's evidence into per-query rows
(:class:`QueryResult`, one per query *and* bucket it counts in) and :func:`summarize_rows`
averages them into per-position scores, mean, PSI and worst drop — so the per-query table always
averages back to the summary exactly.

=============  ============================================================================
``default``    nDCG@10 by pytrec_eval
(:func:`~hf_posbias.statistics.scoring.per_query_metrics`,
               graded qrels, ideal DCG over every judged document); each query in the one
               bucket the task folder gives it.
``zeng2025``   Z25's reference code: nDCG@10 of the top-100 list with binary relevance and tied
               scores averaged (sklearn ``ndcg_score``), a query whose passage is not in the top
               100 scoring 0; inclusive bucket boundaries (``lo <= value <= hi``: a query on a
               boundary counts in both buckets); a FineWeb-PosQ question counted in every span
               class it carries (``extra_buckets``).
``posir``      PosIR's analysis: 20 equal relative-position bins of the evidence midpoint
               (right-closed), PSI over the 20 bin means, and the same per token-length stratum
               ``(0, 512], (512, 1024], (1024, 1536], (1536, ∞)`` when the task gives document
               token lengths (``doc_tokens``); nDCG@10 by pytrec_eval. The position is
               PosIR's: ``min((start + end) / 2, length) / length`` on the raw span, so
               evidence at or past the document's end is clipped to 1.0 and scored
               (counted in a note); only queries with ``length <= 0`` or a negative midpoint
               (no span) are not scored. The summary adds PosIR's headline (``query_mean``,
               the mean over queries) and its per-stratum trend over the bin means
               (``bin_trend``: slope, intercept, R², Pearson, Spearman, Kendall τ).
=============  ============================================================================

Example:
    >>> from hf_posbias.tasks.position_scoring import QueryPosition, score_positions
    >>> positions = {"q1": QueryPosition("q1", "begin", 0, 5, 100),
    ...              "q2": QueryPosition("q2", "end", 90, 95, 100)}
    >>> run = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d1": 2.0, "d2": 1.0}}
    >>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    >>> rows, notes = score_positions(positions, run, qrels, buckets=["begin", "end"])
    >>> scores = summarize_rows(rows, ["begin", "end"])
    >>> round(scores.ndcg_at_10["end"], 4), round(scores.psi, 4)
    (0.6309, 0.3691)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.jsonable import JsonRecord
from hf_posbias.statistics.psi import UNDEFINED_PSI, summarize_positions
from hf_posbias.statistics.scoring import Qrels, Run, per_query_metrics
from hf_posbias.tasks.bucketing import (
    POSIR_RELATIVE_20,
    POSIR_TOKEN_LENGTH,
    IntervalBuckets,
    relative_position,
)
from hf_posbias.tasks.taskdata import PositionTaskData

if TYPE_CHECKING:
    import numpy as np

SCORING_SCHEMES: tuple[str, ...] = ("default", "zeng2025", "posir")
MAIN_METRIC = "ndcg_at_10"
TREC_METRICS: tuple[str, ...] = ("ndcg_at_100", "recall_at_10", "recall_at_100")
"""Per-query metrics kept besides nDCG@10 (by pytrec_eval in every scheme)."""
EXTRA_METRICS: tuple[str, ...] = (*TREC_METRICS, "mrr_at_10")
"""Every metric besides nDCG@10 in the per-query table and the summaries."""
Z25_DEPTH = 100
"""Z25 scores the top-100 list."""


@dataclass(frozen=True)
class QueryPosition:
    """Where a query's evidence lies, as its task folder records it."""

    query_id: str
    bucket: str
    evidence_start: int
    evidence_end: int
    doc_length: int
    extra_buckets: tuple[str, ...] = ()
    doc_tokens: int = -1

    @property
    def has_span(self) -> bool:
        """Whether the evidence has a usable character span inside the document."""
        return 0 <= self.evidence_start < self.doc_length and self.evidence_end >= 0

    def relative(self, anchor: str = "start") -> float | None:
        """Relative position of the evidence in [0, 1] (clipped), ``None`` without a span."""
        if not self.has_span:
            return None
        end = min(max(self.evidence_end, self.evidence_start), self.doc_length)
        return relative_position(self.evidence_start, end, self.doc_length, anchor)  # type: ignore[arg-type]


def posir_relative(pos: QueryPosition) -> tuple[float | None, bool]:
    """PosIR's relative position of the evidence midpoint and whether it was clipped to 1.0.

    ``ndcg_PSI_analysis.py`` keeps a query when ``length > 0`` and the midpoint
    ``(start + end) / 2 >= 0``, takes ``min(midpoint, length) / length`` and clips to [0, 1]:
    evidence starting at or past the document's end is scored at 1.0. ``None``: not scored.

    Example:
        >>> posir_relative(QueryPosition("q", "b", 120, 140, 100))
        (1.0, True)
        >>> posir_relative(QueryPosition("q", "b", 90, 120, 100))   # raw end, not clipped first
        (1.0, True)
        >>> posir_relative(QueryPosition("q", "b", -1, -1, 100))
        (None, False)
    """
    midpoint = (pos.evidence_start + pos.evidence_end) / 2.0
    if pos.doc_length <= 0 or midpoint < 0:
        return None, False
    return relative_position(pos.evidence_start, pos.evidence_end, pos.doc_length, "center"), (
        midpoint > pos.doc_length
    )


def query_positions(data: PositionTaskData) -> dict[str, QueryPosition]:
    """:class:`QueryPosition` of every query of a task folder, by query id.

    Example:
        >>> from hf_posbias.tasks.taskdata import TaskInfo
        >>> d = PositionTaskData(TaskInfo("T", "t", ["a"]), [], [{"id": "q", "bucket": "a",
        ...     "evidence_start": 1, "evidence_end": 2, "doc_length": 9}], [])
        >>> query_positions(d)["q"].doc_length
        9
    """
    return {
        str(q["id"]): QueryPosition(
            query_id=str(q["id"]),
            bucket=str(q["bucket"]),
            evidence_start=int(q["evidence_start"]),
            evidence_end=int(q["evidence_end"]),
            doc_length=int(q["doc_length"]),
            extra_buckets=tuple(str(b) for b in (q.get("extra_buckets") or ())),
            doc_tokens=int(q["doc_tokens"]) if q.get("doc_tokens") is not None else -1,
        )
        for q in data.queries
    }


@dataclass
class QueryResult:
    """One row of the per-query table: a query in one bucket, with its scores."""

    query_id: str
    bucket: str
    evidence_start: int
    evidence_end: int
    relative_position: float | None
    doc_length: int
    ndcg_at_10: float
    first_relevant_rank: int | None
    """1-based rank of the first relevant document in the run (``None``: not retrieved)."""
    metrics: dict[str, float] = field(default_factory=dict)
    length_stratum: str | None = None

    def to_row(self) -> dict[str, Any]:
        """Flat table row (metrics become columns)."""
        row = asdict(self)
        row.update(row.pop("metrics"))
        return row


@dataclass
class PositionScores(JsonRecord):
    """Per-position averages of per-query rows, with mean, PSI and worst drop (``to_dict``:
    what the mteb task adds to its scores)."""

    scoring: str
    buckets: list[str]
    n_queries: dict[str, int]
    ndcg_at_10: dict[str, float | None]
    metrics: dict[str, dict[str, float | None]]
    mean: float | None
    psi: float | None
    worst_drop: float | None
    best_bucket: str | None
    worst_bucket: str | None
    empty_buckets: list[str]
    strata: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    harmonic_mean: float | None = None
    """Harmonic mean of the non-empty buckets' nDCG@10.

    See :mod:`~hf_posbias.statistics.levels`.
    """
    trend: dict[str, float | None] = field(default_factory=dict)
    """Slope, R², Spearman's ρ and p of per-query nDCG@10 on the relative evidence position
    (each query once: :func:`one_row_per_query`)."""
    query_mean: float | None = None
    """Mean nDCG@10 over the scored queries, each once (PosIR's headline ``nDCG@10``);
    ``mean`` is the mean of the bucket means."""
    bin_trend: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """``posir``: PosIR's trend per token-length stratum, fitted over the stratum's non-empty
    bin means against the bin centres (:func:`posir_bin_trend`); ``{}`` otherwise."""


# --------------------------------------------------------------------------- ranking helpers


def ranked(docs: Mapping[str, float]) -> list[tuple[str, float]]:
    """Documents best first, ties broken by document id descending (as trec_eval does).

    Example:
        >>> ranked({"a": 1.0, "b": 1.0, "c": 2.0})
        [('c', 2.0), ('b', 1.0), ('a', 1.0)]
    """
    return sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def first_relevant_rank(docs: Mapping[str, float], relevant: Mapping[str, int]) -> int | None:
    """1-based rank of the first relevant document, ``None`` when none was retrieved.

    Example:
        >>> first_relevant_rank({"a": 3.0, "b": 2.0}, {"b": 1})
        2
    """
    for rank, (doc, _) in enumerate(ranked(docs), start=1):
        if relevant.get(doc, 0) > 0:
            return rank
    return None


def _dcg_tie_averaged(gains: np.ndarray, scores: np.ndarray, k: int) -> float:
    """sklearn's ``_tie_averaged_dcg``: tied scores share the mean gain of their group."""
    import numpy as np

    discount = 1.0 / np.log2(np.arange(len(gains)) + 2.0)
    discount[k:] = 0.0
    cumulative = np.cumsum(discount)
    _, inverse, counts = np.unique(-scores, return_inverse=True, return_counts=True)
    group_gain = np.zeros(len(counts))
    np.add.at(group_gain, inverse, gains)
    group_gain /= counts
    ends = np.cumsum(counts) - 1
    group_discount = np.empty(len(counts))
    group_discount[0] = cumulative[ends[0]]
    group_discount[1:] = np.diff(cumulative[ends])
    return float((group_gain * group_discount).sum())


def zeng2025_ndcg(
    docs: Mapping[str, float], relevant: Mapping[str, int], k: int = 10, depth: int = Z25_DEPTH
) -> float:
    """nDCG@k as Z25's code computes it: sklearn ``ndcg_score`` over the top-``depth`` list.

    Relevance is binary; tied scores average their gains; the ideal DCG uses only the relevant
    documents inside the list, and a list without one scores 0.

    Example:
        >>> round(zeng2025_ndcg({"a": 1.0, "b": 1.0}, {"b": 1}), 4)   # tie: mean of ranks 1, 2
        0.8155
        >>> zeng2025_ndcg({"a": 1.0}, {"z": 1})
        0.0
    """
    import numpy as np

    top = ranked(docs)[:depth]
    gains = np.array([1.0 if relevant.get(d, 0) > 0 else 0.0 for d, _ in top])
    if not gains.size or gains.sum() == 0:
        return 0.0
    scores = np.array([s for _, s in top], dtype=float)
    ideal = _dcg_tie_averaged(np.sort(gains)[::-1], np.arange(len(gains), 0, -1.0), k)
    return _dcg_tie_averaged(gains, scores, k) / ideal


# --------------------------------------------------------------------------- membership


def _inclusive_buckets(rule: IntervalBuckets, value: float) -> list[str]:
    return [
        label
        for label, lo, hi in zip(rule.labels, rule.edges, rule.edges[1:], strict=False)
        if lo <= value <= hi
    ]


def rule_from_extra(extra: Mapping[str, Any]) -> IntervalBuckets | None:
    """The bucket rule a builder recorded in ``task.json`` ``extra['buckets']`` (or ``None``)."""
    spec = extra.get("buckets") if extra else None
    if not isinstance(spec, Mapping) or "edges" not in spec:
        return None
    edges = tuple(math.inf if e == "inf" else float(e) for e in spec["edges"])
    try:
        return IntervalBuckets(
            edges,
            labels=tuple(spec.get("labels") or ()),
            scheme=str(spec.get("scheme", "custom")),
            unit=str(spec.get("unit", "relative")),
            closed=spec.get("closed", "left"),
        )
    except InputError:
        return None


def _z25_buckets(
    pos: QueryPosition, rule: IntervalBuckets | None, anchor: str, known: set[str]
) -> list[str]:
    """The stored bucket, the extra ones and every bucket whose closed interval holds it."""
    out = [pos.bucket, *pos.extra_buckets]
    value: float | None = None
    if rule is not None and pos.evidence_start >= 0:
        if rule.unit == "chars":
            value = float(pos.evidence_start)
        elif rule.unit == "relative":
            value = pos.relative(anchor)
        elif rule.unit == "tokens" and pos.doc_tokens >= 0:
            value = float(pos.doc_tokens)
    if value is not None:
        out += _inclusive_buckets(rule, value)  # type: ignore[arg-type]
    return [b for b in dict.fromkeys(out) if b in known]


# --------------------------------------------------------------------------- scoring


def _check_run(run: Run) -> None:
    bad = sum(1 for docs in run.values() if any(not math.isfinite(float(s)) for s in docs.values()))
    if bad:
        raise InputError(
            f"the model returned NaN or infinite scores for {bad} of {len(run)} queries; "
            "their rankings are undefined"
        )


def score_positions(
    positions: Mapping[str, QueryPosition],
    run: Run,
    qrels: Qrels,
    *,
    buckets: Sequence[str],
    scheme: str = "default",
    rule: IntervalBuckets | None = None,
    anchor: str = "start",
) -> tuple[list[QueryResult], list[str]]:
    """Per-query rows of ``run`` under ``scheme``; returns ``(rows, notes)``.

    Args:
        positions: evidence of every query to score (queries absent from ``run`` score 0).
        run: ``{query_id: {doc_id: score}}`` (top-k of the model).
        qrels: ``{query_id: {doc_id: relevance}}``.
        buckets: the task's buckets in order (``default``/``zeng2025``).
        scheme: ``default``, ``zeng2025`` or ``posir``.
        rule: the task's bucket rule (``zeng2025``'s inclusive boundaries).
        anchor: which point of the span the rule bucketed (``zeng2025``, relative rules).

    Raises:
        InputError: an unknown scheme, non-finite run scores, or ``posir`` on a task without
            character spans.
    """
    if scheme not in SCORING_SCHEMES:
        raise InputError(f"unknown scoring {scheme!r}: use one of {', '.join(SCORING_SCHEMES)}")
    _check_run(run)
    qids = [q for q in positions if q in qrels]
    judged = {q: qrels[q] for q in qids}
    notes: list[str] = []
    metrics = per_query_metrics(
        {q: run.get(q, {}) for q in qids}, judged, (MAIN_METRIC, *TREC_METRICS)
    )
    known = set(buckets)
    rows: list[QueryResult] = []
    skipped_no_span = clipped = 0
    for qid in qids:
        pos = positions[qid]
        docs = run.get(qid, {})
        scores = dict(metrics.get(qid, {}))
        ndcg = scores.pop(MAIN_METRIC, 0.0)
        first = first_relevant_rank(docs, judged[qid])
        scores["mrr_at_10"] = 1.0 / first if first is not None and first <= 10 else 0.0
        stratum = None
        if scheme == "zeng2025":
            ndcg = zeng2025_ndcg(docs, judged[qid])
            members = _z25_buckets(pos, rule, anchor, known)
            relative = pos.relative(anchor)
        elif scheme == "posir":
            relative, was_clipped = posir_relative(pos)
            if relative is None:
                skipped_no_span += 1
                continue
            clipped += was_clipped
            members = [POSIR_RELATIVE_20.assign(relative)]  # type: ignore[list-item]
            # PosIR's pd.cut(token_length, [0, 512, 1024, 1536, inf]) leaves 0 out of every
            # stratum (no include_lowest there).
            if pos.doc_tokens > 0:
                stratum = POSIR_TOKEN_LENGTH.assign(pos.doc_tokens)
        else:
            members = [pos.bucket]
            relative = pos.relative(anchor)
        for bucket in members:
            rows.append(
                QueryResult(
                    query_id=qid,
                    bucket=bucket,
                    evidence_start=pos.evidence_start,
                    evidence_end=pos.evidence_end,
                    relative_position=relative,
                    doc_length=pos.doc_length,
                    ndcg_at_10=float(ndcg),
                    first_relevant_rank=first,
                    metrics=scores,
                    length_stratum=stratum,
                )
            )
    if scheme == "posir":
        if not rows:
            raise InputError(
                "posir scoring needs character evidence spans; no query of this task has one"
            )
        if clipped:
            notes.append(
                f"posir: {clipped} evidence positions past the document end clipped to "
                "relative position 1.0 and scored (PosIR's rule)"
            )
        if skipped_no_span:
            notes.append(f"posir: {skipped_no_span} queries without an evidence span not scored")
    if scheme == "zeng2025":
        extra = len(rows) - len(qids)
        if extra:
            notes.append(
                f"zeng2025: {extra} query-bucket memberships beyond one per query "
                "(boundary values and multi-label questions count in every bucket they touch)"
            )
    return rows, notes


def scheme_buckets(scheme: str, buckets: Sequence[str]) -> list[str]:
    """The buckets a scheme reports (``posir``: its 20 bins, else the task's).

    Example:
        >>> len(scheme_buckets("posir", ["begin"])), scheme_buckets("default", ["a", "b"])
        (20, ['a', 'b'])
    """
    return list(POSIR_RELATIVE_20.labels) if scheme == "posir" else list(buckets)


def one_row_per_query(rows: Sequence[Any]) -> list[Any]:
    """The first row of every query: per-query statistics (``trend``, ``psi_by_length``, the
    headline mean) count each query once.

    :func:`score_positions` emits a query's own bucket (the one its task folder stores) first,
    so under ``zeng2025`` a boundary query counts in its stored bucket here, in every bucket it
    touches in the bucket means. Rows may be :class:`QueryResult` or per-query table dicts.

    Example:
        >>> rows = [{"query_id": "q", "bucket": "a"}, {"query_id": "q", "bucket": "b"}]
        >>> one_row_per_query(rows)
        [{'query_id': 'q', 'bucket': 'a'}]
    """
    seen: set[str] = set()
    out = []
    for row in rows:
        qid = str(row["query_id"] if isinstance(row, Mapping) else row.query_id)
        if qid not in seen:
            seen.add(qid)
            out.append(row)
    return out


def posir_bin_centres() -> dict[str, float]:
    """The x of each PosIR bin in its trend fit, as ``ndcg_PSI_analysis.py`` gets it.

    PosIR takes ``left + (right - left) / 2`` of the ``pd.cut`` intervals, whose edges pandas
    rounds to 3 significant decimals and whose first left edge ``include_lowest`` moves to
    ``-0.001``: the first centre is ``0.0245``, the others the plain midpoints.

    Example:
        >>> c = posir_bin_centres()
        >>> c["0-0.05"], c["0.05-0.1"], len(c)
        (0.0245, 0.07500000000000001, 20)
    """
    edges = [round(e, 3) for e in POSIR_RELATIVE_20.edges]
    edges[0] -= 10**-3
    return {
        label: lo + (hi - lo) / 2.0
        for label, lo, hi in zip(POSIR_RELATIVE_20.labels, edges, edges[1:], strict=False)
    }


BIN_TREND_KEYS: tuple[str, ...] = (
    "slope",
    "intercept",
    "r_squared",
    "pearson_r",
    "pearson_p",
    "spearman_rho",
    "spearman_p",
    "kendall_tau",
    "kendall_p",
)
"""PosIR's per-stratum trend statistics, under its own names."""


def posir_bin_trend(bin_means: Mapping[str, float | None]) -> dict[str, float | None]:
    """PosIR's trend of one stratum: ``linregress``, ``pearsonr``, ``spearmanr`` and
    ``kendalltau`` of the non-empty bin means on the bin centres (:func:`posir_bin_centres`).

    Values scipy leaves undefined (NaN: constant means give no correlation) are ``None``, all
    of them with fewer than 2 bins; ``n_bins`` counts the bins fitted. Constant means give
    ``slope`` 0 and the mean as ``intercept`` (``linregress``), the rest ``None``.

    Example:
        >>> t = posir_bin_trend({"0-0.05": 0.9, "0.45-0.5": 0.6, "0.95-1": 0.3})
        >>> round(t["kendall_tau"], 3), t["n_bins"]
        (-1.0, 3)
    """
    import warnings

    from scipy.stats import kendalltau, linregress, pearsonr, spearmanr

    centres = posir_bin_centres()
    points = [(centres[b], v) for b, v in bin_means.items() if v is not None and b in centres]
    out: dict[str, float | None] = dict.fromkeys(BIN_TREND_KEYS)
    out["n_bins"] = len(points)
    if len(points) < 2:
        return out
    points.sort()
    x, y = [p[0] for p in points], [p[1] for p in points]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = linregress(x, y)
        pearson, spearman, kendall = pearsonr(x, y), spearmanr(x, y), kendalltau(x, y)
    values = {
        "slope": fit.slope,
        "intercept": fit.intercept,
        "r_squared": fit.rvalue**2,
        "pearson_r": pearson.statistic,
        "pearson_p": pearson.pvalue,
        "spearman_rho": spearman.statistic,
        "spearman_p": spearman.pvalue,
        "kendall_tau": kendall.statistic,
        "kendall_p": kendall.pvalue,
    }
    out.update({k: float(v) if math.isfinite(v) else None for k, v in values.items()})
    return out


def mean_exact(values: Sequence[float]) -> float:
    """Correctly rounded mean (``math.fsum``): independent of the order of the values.

    Example:
        >>> mean_exact([0.1] * 10)
        0.1
    """
    return math.fsum(values) / len(values)


def mean_as_pandas(values: Sequence[float]) -> float:
    """The mean pandas' ``groupby(...).mean()`` returns: a Kahan-compensated sum in row order,
    divided by the count. PosIR's bin means are these; where two bins hold mathematically equal
    means, the last bit decides whether Spearman's ρ and Kendall's τ see a tie.

    Example:
        >>> mean_as_pandas([0.1] * 10)
        0.1
    """
    total = compensation = 0.0
    for value in values:
        y = value - compensation
        t = total + y
        compensation = (t - total) - y
        total = t
    return total / len(values)


def _averages(
    rows: Sequence[QueryResult], buckets: Sequence[str], mean: Any = mean_exact
) -> tuple[dict[str, int], dict[str, float | None], dict[str, dict[str, float | None]]]:
    by_bucket: dict[str, list[QueryResult]] = {b: [] for b in buckets}
    for row in rows:
        by_bucket.setdefault(row.bucket, []).append(row)
    counts = {b: len(by_bucket[b]) for b in buckets}
    ndcg = {b: mean([r.ndcg_at_10 for r in v]) if v else None for b, v in by_bucket.items()}
    names = sorted({m for r in rows for m in r.metrics})
    metrics = {
        m: {
            b: mean_exact([r.metrics.get(m, 0.0) for r in v]) if v else None
            for b, v in by_bucket.items()
        }
        for m in names
    }
    return counts, {b: ndcg[b] for b in buckets}, metrics


def _query_mean(values: Sequence[float], posir: bool) -> float | None:
    if not values:
        return None
    if posir:
        import numpy as np

        return float(np.mean(values))  # PosIR's headline: np.mean over the queries
    return mean_exact(values)


def summarize_rows(
    rows: Sequence[QueryResult],
    buckets: Sequence[str],
    scoring: str = "default",
    notes: Sequence[str] = (),
) -> PositionScores:
    """Per-bucket means (exact, :func:`mean_exact`), mean over non-empty buckets, PSI, drop.

    Empty buckets are listed, never hidden; PSI is ``None`` (with a note) when every bucket
    scored 0.
    """
    # posir: PosIR's floats to the last bit (pandas' group means, numpy's means of them), so
    # ties between bins, and the rank statistics over them, are the ones its script sees.
    posir = scoring.startswith("posir")
    counts, ndcg, metrics = _averages(rows, buckets, mean_as_pandas if posir else mean_exact)
    notes = list(notes)
    mean = psi_value = drop = best = worst = None
    empty = [b for b in buckets if ndcg[b] is None]
    present = {b: v for b, v in ndcg.items() if v is not None}
    if present:
        # Only scored buckets go in, so summarize_positions has no empty bucket to warn about.
        summary = summarize_positions(present, allow_undefined_psi=True)
        mean, psi_value, drop = summary.mean, summary.psi, summary.worst_drop
        if posir:
            import numpy as np

            mean = float(np.mean(list(present.values())))
        best, worst = summary.best_bucket, summary.worst_bucket
        if psi_value is None:
            notes.append(UNDEFINED_PSI)
    if empty:
        notes.append(f"buckets without queries: {', '.join(empty)}")
    strata: dict[str, dict[str, Any]] = {}
    bin_trend: dict[str, dict[str, float | None]] = {}
    if scoring == "posir" and any(r.length_stratum for r in rows):
        for stratum in POSIR_TOKEN_LENGTH.labels:
            part = [r for r in rows if r.length_stratum == stratum]
            if not part:
                continue
            sub = summarize_rows(part, buckets, scoring="posir-stratum")
            strata[stratum] = {
                "n_queries": len(part),
                "ndcg_at_10": sub.ndcg_at_10,
                "mean": sub.mean,
                "psi": sub.psi,
            }
            bin_trend[stratum] = posir_bin_trend(sub.ndcg_at_10)
    elif scoring == "posir":
        notes.append("posir: the task gives no document token lengths (doc_tokens): no strata")
    from hf_posbias.statistics.levels import position_trend
    from hf_posbias.statistics.psi import harmonic_mean

    once = one_row_per_query(rows)
    placed = [r for r in once if r.relative_position is not None]
    return PositionScores(
        scoring=scoring,
        buckets=list(buckets),
        n_queries=counts,
        ndcg_at_10=ndcg,
        metrics=metrics,
        mean=mean,
        psi=psi_value,
        worst_drop=drop,
        best_bucket=best,
        worst_bucket=worst,
        empty_buckets=empty,
        strata=strata,
        notes=notes,
        harmonic_mean=harmonic_mean(list(present.values())) if present else None,
        trend=position_trend(
            [float(r.relative_position or 0.0) for r in placed], [r.ndcg_at_10 for r in placed]
        ),
        query_mean=_query_mean([r.ndcg_at_10 for r in once], posir),
        bin_trend=bin_trend,
    )


def bucket_scheme_label(scheme: str, info: Any) -> str:
    """How a scoring ``scheme`` puts the queries of a task (its :class:`TaskInfo` ``info``) into
    the buckets its PSI is over: the task's scheme and the intervals' closure.

    Example:
        >>> from hf_posbias.tasks.taskdata import TaskInfo
        >>> rule = {"buckets": {"edges": [0, 0.5, 1], "labels": ["a", "b"], "scheme": "halves"}}
        >>> info = TaskInfo("T", "t", ["a", "b"], bucket_scheme="halves", extra=rule)
        >>> bucket_scheme_label("default", info), bucket_scheme_label("zeng2025", info)
        ('halves [lo, hi)', 'halves inclusive [lo, hi]')
        >>> bucket_scheme_label("posir", info)
        'posir-relative-20 (lo, hi]'
    """
    if scheme == "posir":
        return f"{POSIR_RELATIVE_20.scheme} (lo, hi]"
    name = str(info.bucket_scheme)
    if scheme == "zeng2025":
        return f"{name} inclusive [lo, hi]"
    rule = rule_from_extra(info.extra)
    if rule is None:
        return f"{name} (labels of the source)"
    return f"{name} {'[lo, hi)' if rule.closed == 'left' else '(lo, hi]'}"
