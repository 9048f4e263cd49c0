"""The position-wise result of one model on one task (``summary.json``) and its JSON files.

Example:
    >>> from hf_posbias.evaluation.summary import EvaluationSummary
    >>> s = EvaluationSummary.from_scores("m", "T", ["begin", "end"], {"begin": 0.8, "end": 0.4},
    ...                                   n_queries={"begin": 5, "end": 5})
    >>> (s.mean, s.psi)
    (0.6000000000000001, 0.5)
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError, first_line
from hf_posbias.jsonable import JsonRecord
from hf_posbias.shards import write_text_atomic
from hf_posbias.statistics.psi import UNDEFINED_PSI, summarize_positions


@dataclass
class EvaluationSummary(JsonRecord):
    """Position-wise results of one model on one task (``summary.json``).

    ``intervals`` holds the bootstrap confidence intervals
    (:class:`~hf_posbias.statistics.uncertainty.PositionIntervals` as a dict:
    ``buckets``,
    ``mean``, ``psi`` with ``estimate``/``low``/``high``), ``None`` when not computed.
    """

    model: str
    task: str
    buckets: list[str]
    ndcg_at_10: dict[str, float | None]
    n_queries: dict[str, int]
    empty_buckets: list[str]
    mean: float
    psi: float | None
    worst_drop: float
    best_bucket: str
    worst_bucket: str
    metrics: dict[str, dict[str, float | None]] = field(default_factory=dict)
    model_name: str = ""
    model_revision: str = ""
    task_path: str | None = None
    task_revision: str = ""
    task_repo: str | None = None
    """The Hub dataset repo the task folder was downloaded from (``None``: a folder built here);
    results pushed to the Hub name it as their benchmark."""
    task_repo_revision: str | None = None
    """The commit of :attr:`task_repo` the run read (its ``.eval_results`` revision)."""
    hf_subset: str = "default"
    scoring: str = "default"
    n_documents: int = 0
    top_k: int = 100
    reranker: str | None = None
    first_stage: str | None = None
    rerank_k: int | None = None
    remedy: str | None = None
    encode_stats: dict[str, Any] | None = None
    search_stats: dict[str, Any] | None = None
    evaluation_time_s: float = 0.0
    mteb_version: str = ""
    mteb_result_path: str | None = None
    intervals: dict[str, Any] | None = None
    per_query_path: str | None = None
    run_path: str | None = None
    strata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    harmonic_mean: float | None = None
    """Harmonic mean of the per-position nDCG@10 (interval: ``intervals["harmonic_mean"]``)."""
    trend: dict[str, Any] = field(default_factory=dict)
    """``{slope, r2, spearman_rho, spearman_p, n_queries}`` of per-query nDCG@10 on the relative
    evidence position (intervals: ``intervals["trend"]``)."""
    psi_by_length: dict[str, Any] = field(default_factory=dict)
    model_kind: str = ""
    """How the model loaded: ``bm25``, ``bi-encoder``, ``sparse``, ``multi-vector``,
    ``registry`` (mteb's loader), ``endpoint`` or ``rerank``."""
    """PSI within document-length tertiles.

    See :func:`~hf_posbias.statistics.levels.psi_by_length`.
    """
    bucket_scheme: str = ""
    """How the queries fall into the buckets the PSI is over (the task's scheme and the
    intervals' closure, e.g. ``squad-chars [lo, hi)``:
    :func:`~hf_posbias.tasks.position_scoring.bucket_scheme_label`)."""
    n_buckets: int = 0
    """Buckets the PSI is over."""
    max_seq_length: int | None = None
    """The model's maximum sequence length in tokens (``None``: no limit of its own, e.g. BM25)."""
    truncated: dict[str, int] = field(default_factory=dict)
    """Per bucket of the task folder: queries whose evidence starts at or beyond
    ``max_seq_length`` in the model's tokenization
    (:mod:`~hf_posbias.evaluation.runs.truncation`)."""
    exclude_truncated: bool = False
    """Whether those queries were left out of every score (``--exclude-truncated``)."""
    psi_by_token_length: dict[str, Any] = field(default_factory=dict)
    """PSI per document token-length stratum (PosIR's ``0-512`` … ``1536+``), with intervals."""
    query_mean: float | None = None
    """Mean nDCG@10 over the queries, each once (PosIR's headline ``nDCG@10``); ``mean`` is the
    mean of the bucket means."""
    bin_trend: dict[str, Any] = field(default_factory=dict)
    """``posir``: PosIR's trend per token-length stratum over the 20 bin means (``slope``,
    ``intercept``, ``r_squared``, ``pearson_r``/``_p``, ``spearman_rho``/``_p``,
    ``kendall_tau``/``_p``, ``n_bins``); ``trend`` is the toolkit's per-query fit."""

    @classmethod
    def from_scores(
        cls,
        model: str,
        task: str,
        buckets: Sequence[str],
        scores: Mapping[str, float | None],
        *,
        n_queries: Mapping[str, int],
        **extra: Any,
    ) -> EvaluationSummary:
        """Summarise per-bucket nDCG@10 (``None`` = empty bucket) with mean, PSI, worst drop.

        Empty buckets and an undefined PSI are recorded in ``warnings`` and re-emitted as
        :class:`UserWarning` — never dropped silently.
        """
        ordered = {b: scores.get(b) for b in buckets}
        notes: list[str] = list(extra.pop("warnings", []))
        if all(v is None for v in ordered.values()):
            raise InputError(f"{task}: no bucket has queries, nothing to score")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary = summarize_positions(ordered, allow_undefined_psi=True)
            psi_value = summary.psi
            mean, worst_drop = summary.mean, summary.worst_drop
            best, worst = summary.best_bucket, summary.worst_bucket
            empty = summary.empty_buckets
            if psi_value is None:
                # Every bucket scored 0: PSI is undefined (max = 0); say so instead of failing.
                notes.append(f"{task}: {UNDEFINED_PSI}")
        notes.extend(f"{task}: {w.message}" for w in caught)
        present_count = sum(v is not None for v in ordered.values())
        if present_count == 1 and len(ordered) > 1:
            notes.append(f"{task}: only one bucket has queries, PSI is trivially 0")
        for note in notes:
            warnings.warn(note, UserWarning, stacklevel=2)
        return cls(
            model=model,
            task=task,
            buckets=list(buckets),
            ndcg_at_10=ordered,
            n_queries={b: int(n_queries.get(b, 0)) for b in buckets},
            empty_buckets=empty,
            mean=mean,
            psi=psi_value,
            worst_drop=worst_drop,
            best_bucket=best,
            worst_bucket=worst,
            warnings=notes,
            **extra,
        )

    def protocol_line(self) -> str:
        """What the PSI is over and what the model could not read: bucket scheme, number of
        buckets, max sequence length, truncated queries per bucket.

        Example:
            >>> s = EvaluationSummary.from_scores("m", "T", ["a", "b"], {"a": 1.0, "b": 0.5},
            ...     n_queries={"a": 3, "b": 3}, bucket_scheme="thirds [lo, hi)", n_buckets=2,
            ...     max_seq_length=256, truncated={"a": 0, "b": 2})
            >>> s.protocol_line()
            'buckets thirds [lo, hi) (2); max_seq_length 256; evidence at or beyond it: a 0, b 2'
        """
        text = (
            f"buckets {self.bucket_scheme or 'of the task'} ({self.n_buckets or len(self.buckets)})"
        )
        if self.max_seq_length is None:
            return text + "; no token limit"
        counts = ", ".join(f"{b} {n}" for b, n in self.truncated.items()) or "none"
        text += f"; max_seq_length {self.max_seq_length}; evidence at or beyond it: {counts}"
        return text + (" (left out)" if self.exclude_truncated else "")

    @property
    def label(self) -> str:
        """Short label for plots and tables (model, plus the reranking pipeline if any)."""
        if self.reranker:
            return f"{self.first_stage} → {self.reranker}@{self.rerank_k}"
        # The display name (e.g. "models/posbias-minilm-begin"), not a long absolute path.
        name = self.model_name or self.model
        from hf_posbias.evaluation.runs.remedies import remedy_label

        return remedy_label(name, self.remedy)

    def interval(
        self, bucket: str | None = None, what: str = "bucket"
    ) -> tuple[float, float] | None:
        """``(low, high)`` of a bucket's interval (``what="mean"``/``"psi"``/``"harmonic_mean"``
        for those; ``"slope"``, ``"r2"``, ``"spearman_rho"`` for the trend's).

        Example:
            >>> s = EvaluationSummary.from_scores("m", "T", ["a"], {"a": .5}, n_queries={"a": 1},
            ...     intervals={"buckets": {"a": {"estimate": .5, "low": .4, "high": .6}},
            ...                "mean": None, "psi": None})
            >>> s.interval("a")
            (0.4, 0.6)
        """
        if not self.intervals:
            return None
        if what == "bucket":
            entry = self.intervals["buckets"].get(bucket)
        elif what in self.intervals:
            entry = self.intervals[what]
        else:
            entry = (self.intervals.get("trend") or {}).get(what)
        return None if not entry else (float(entry["low"]), float(entry["high"]))


def write_summary_json(summaries: Sequence[EvaluationSummary], out_dir: str | Path) -> Path:
    """``summary.json``: a dict for one summary, a list for several (order kept)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dicts = [s.to_dict() for s in summaries]
    payload = dicts[0] if len(dicts) == 1 else dicts
    # Not shards.write_json: it sorts keys, and bucket dicts must keep the position order.
    target = out / "summary.json"
    write_text_atomic(target, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    return target


def read_summaries(path: str | Path) -> list[EvaluationSummary]:
    """Read a ``summary.json`` (either layout) — or a run folder holding one — into summaries."""
    target = Path(path)
    if target.is_dir():
        target = target / "summary.json"
    if not target.is_file():
        raise InputError(f"{target}: not found (is this a `posbias evaluate` run folder?)")
    from hf_posbias.rows.readers import read_json

    data = read_json(target)
    rows = data if isinstance(data, list) else [data]
    summaries = []
    for row in rows:
        if not isinstance(row, Mapping):
            raise InputError(f"{target}: not a posbias summary (an entry is {type(row).__name__})")
        try:
            summaries.append(EvaluationSummary.from_dict(row))
        except TypeError as err:
            raise InputError(f"{target}: not a posbias summary ({first_line(err)})") from None
    return summaries
