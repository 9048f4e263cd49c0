"""``posbias evaluate`` as a thin layer over ``mteb.evaluate``: summaries, intervals, exports.

The flow for ``evaluate_model(settings)`` (an
:class:`~hf_posbias.evaluation.settings.EvaluateSettings`):

1. every task is resolved (:func:`hf_posbias.tasks.mteb_tasks.get_task`, with the chosen
   ``scoring``) and its data loaded and validated *before* the model is loaded, so a broken
   folder fails in a second, in one line;
2. the model is loaded once (:func:`hf_posbias.evaluation.runs.models.load_model`);
3. each task runs through ``mteb.evaluate`` with an explicit result folder
   (``<out>/mteb-results``, mteb's ``ResultCache`` layout, ``overwrite_strategy="always"``: a
   rerun never silently reuses old scores). The task's ``task_specific_scores`` hook puts the
   per-position scores, mean, PSI and worst drop into mteb's own result;
4. the summary is read from that ``TaskResult``; the per-query rows the hook kept give the
   bootstrap intervals (:func:`~hf_posbias.statistics.uncertainty.bootstrap_positions`),
   the
   per-query table and the TREC run file (:mod:`~hf_posbias.evaluation.runs.exports`).

Outputs in ``out_dir``:

- ``summary.json`` — ONE task: the task's summary dict; SEVERAL: a JSON list of them;
- ``summary.md`` / ``summary.csv`` — tables (intervals included; CSV in long format);
- ``per_query/<Task>.parquet`` and ``runs/<Task>.trec`` — per-query results and the top-100;
- ``mteb-results/results/<model>/<revision>/<Task>.json`` — mteb's own result files (with PSI),
  ready for ``ResultCache.submit_results`` (see ``docs/submitting_results.md``).

Summary dict keys: those of :class:`~hf_posbias.evaluation.summary.EvaluationSummary`:
``model``, ``model_name``/``model_revision``, ``task``, ``task_path``, ``task_revision``,
``hf_subset``, ``scoring``, ``buckets``, ``ndcg_at_10``, ``n_queries``, ``empty_buckets``,
``mean``, ``psi``, ``worst_drop``, ``best_bucket``, ``worst_bucket``, ``metrics``
(``ndcg_at_100``, ``recall_at_10``, ``recall_at_100``, ``mrr_at_10`` per bucket), ``intervals``,
``per_query_path``, ``run_path``, ``n_documents``, ``top_k``, ``reranker``, ``first_stage``,
``rerank_k``, ``encode_stats``, ``search_stats``, ``evaluation_time_s``, ``mteb_version``,
``mteb_result_path``, ``strata`` (posir), ``warnings``, ``harmonic_mean``, ``trend``
(``slope``, ``r2``, ``spearman_rho``, ``spearman_p``), ``psi_by_length``.

Example:
    >>> from hf_posbias.evaluation.runs.runner import RESULTS_DIRNAME
    >>> RESULTS_DIRNAME
    'mteb-results'
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import BackendError, InputError, PosbiasError, first_line
from hf_posbias.evaluation.runs.exports import (
    PER_QUERY_DIRNAME,
    RUNS_DIRNAME,
    per_bucket_from_table,
    safe_name,
    write_per_query,
    write_trec_run,
)
from hf_posbias.evaluation.runs.models import LoadedModel, load_model
from hf_posbias.evaluation.summary import EvaluationSummary, write_summary_json
from hf_posbias.tasks.registry import DEFAULT_TOP_K, SPLIT

if TYPE_CHECKING:
    from hf_posbias.evaluation.settings import (
        EvaluateSettings,
        ModelAuditSettings,
        RemediesSettings,
    )

logger = logging.getLogger(__name__)

RESULTS_DIRNAME = "mteb-results"
DEFAULT_BOOTSTRAP = 1000
BOOTSTRAP_SEED = 0


def scores_by_subset(task_result: Any, split: str = SPLIT) -> dict[str, dict[str, Any]]:
    """``{hf_subset: scores}`` read straight from a ``TaskResult`` (no registry lookup)."""
    entries = task_result.scores.get(split)
    if entries is None:
        raise PosbiasError(f"mteb returned no {split!r} scores for {task_result.task_name}")
    return {str(entry["hf_subset"]): dict(entry) for entry in entries}


def run_task(
    loaded: LoadedModel,
    task: Any,
    *,
    batch_size: int = 32,
    results_dir: str | Path | None = None,
    show_progress: bool = False,
    progress: bool = True,
    desc: str | None = None,
) -> Any:
    """Run ``mteb.evaluate`` on one task and return its ``TaskResult``.

    ``results_dir`` is an explicit mteb ``ResultCache`` folder (or ``None``: no cache at all);
    either way the evaluation always runs — cached scores are never reused. ``show_progress``
    turns on mteb's and sentence-transformers' own bars; ``progress`` prints a plain
    ``still running`` line every 30 s while mteb works (:class:`hf_posbias.progress.Heartbeat`),
    labelled ``desc`` (default: model and task).
    """
    import mteb

    from hf_posbias.progress import Heartbeat

    task.load_data()
    cache = mteb.ResultCache(cache_path=results_dir) if results_dir is not None else None
    label = desc or f"evaluating {loaded.name} on {task.metadata.name}"
    try:
        with Heartbeat(label, disable=not progress):
            result = mteb.evaluate(
                loaded.model,
                task,
                cache=cache,
                overwrite_strategy="always",
                encode_kwargs={"batch_size": batch_size, "show_progress_bar": show_progress},
                show_progress_bar=show_progress,
                co2_tracker=False,
                raise_error=True,
            )
    except PosbiasError as err:
        # A problem found while scoring (e.g. NaN scores) names the task and the model.
        raise type(err)(f"{task.metadata.name} with {loaded.name}: {err}") from None
    if result.exceptions:
        raise BackendError(f"{task.metadata.name}: {first_line(result.exceptions[0].exception)}")
    return result.task_results[0]


def _intervals(
    rows: Sequence[dict[str, Any]], n_resamples: int | None, seed: int
) -> dict[str, Any] | None:
    if n_resamples is None or not rows:
        return None
    from hf_posbias.statistics.levels import trend_intervals
    from hf_posbias.statistics.uncertainty import bootstrap_positions

    per_bucket = per_bucket_from_table(rows)
    out = bootstrap_positions(per_bucket, n_resamples=n_resamples, seed=seed).to_dict()
    placed = [r for r in rows if r.get("relative_position") is not None]
    out["trend"] = trend_intervals(
        [float(r["relative_position"]) for r in placed],
        [float(r["ndcg_at_10"]) for r in placed],
        n_resamples=n_resamples,
        seed=seed,
    )
    return out


def summarize_task(
    loaded: LoadedModel,
    task: Any,
    task_result: Any,
    *,
    out_dir: Path | None = None,
    bootstrap: int | None = DEFAULT_BOOTSTRAP,
    seed: int = BOOTSTRAP_SEED,
    evaluation_time_s: float = 0.0,
    results_dir: str | Path | None = None,
) -> list[EvaluationSummary]:
    """One :class:`EvaluationSummary` per subset of a ``TaskResult`` (one unless multilingual).

    The numbers come from the ``position`` scores mteb recorded; the per-query rows kept by the
    task give the intervals and (with ``out_dir``) the per-query table and the TREC run.
    """
    import mteb

    from hf_posbias.statistics.levels import psi_by_length

    subsets = scores_by_subset(task_result)
    name = task.metadata.name
    result_path = None
    if results_dir is not None:
        result_path = str(
            mteb.ResultCache(cache_path=results_dir).get_task_result_path(
                task_result.task_name, loaded.model.mteb_model_meta
            )
        )
    summaries = []
    for subset, scores in subsets.items():
        position = scores.get("position")
        kept = task.last_evaluation.get(subset)
        if position is None or kept is None:
            raise PosbiasError(f"{name}: mteb returned no position scores for subset {subset!r}")
        label = name if len(subsets) == 1 else f"{name} ({subset})"
        table = [r.to_row() for r in kept.rows]  # once: the per-query file and the intervals
        per_query_path = run_path = None
        if out_dir is not None:
            stem = safe_name(label)
            per_query_path = str(
                write_per_query(table, out_dir / PER_QUERY_DIRNAME / f"{stem}.parquet")
            )
            run_path = str(
                write_trec_run(
                    kept.run, out_dir / RUNS_DIRNAME / f"{stem}.trec", loaded.name, task._top_k
                )
            )
        notes = list(position.get("notes") or [])
        present = {b: v for b, v in position["ndcg_at_10"].items() if v is not None}
        if not present:
            raise InputError(f"{label}: no bucket has queries, nothing to score")
        summaries.append(
            EvaluationSummary(
                model=loaded.spec,
                task=label,
                buckets=list(position["buckets"]),
                ndcg_at_10=dict(position["ndcg_at_10"]),
                n_queries=dict(position["n_queries"]),
                empty_buckets=list(position["empty_buckets"]),
                mean=float(position["mean"]),
                psi=position["psi"],
                worst_drop=float(position["worst_drop"] or 0.0),
                best_bucket=str(position["best_bucket"]),
                worst_bucket=str(position["worst_bucket"]),
                metrics=dict(position["metrics"]),
                model_name=loaded.name,
                model_revision=loaded.revision,
                model_kind=loaded.kind,
                task_path=str(task.folder),
                task_revision=str(task.metadata.revision),
                hf_subset=subset,
                scoring=str(position["scoring"]),
                n_documents=len(task.task_data.corpus),
                top_k=int(task._top_k),
                reranker=loaded.reranker,
                first_stage=loaded.first_stage,
                rerank_k=loaded.rerank_k,
                remedy=loaded.remedy,
                encode_stats=loaded.encode_stats(),
                search_stats=loaded.search_stats(),
                evaluation_time_s=round(evaluation_time_s, 3),
                mteb_version=str(task_result.mteb_version or ""),
                mteb_result_path=result_path,
                intervals=_intervals(table, bootstrap, seed),
                per_query_path=per_query_path,
                run_path=run_path,
                strata=dict(position.get("strata") or {}),
                warnings=[f"{label}: {n}" for n in notes],
                harmonic_mean=position.get("harmonic_mean"),
                trend=dict(position.get("trend") or {}),
                psi_by_length=psi_by_length(table, n_resamples=bootstrap, seed=seed),
            )
        )
        for note in summaries[-1].warnings:
            warnings.warn(note, UserWarning, stacklevel=2)
    return summaries


def load_tasks(
    tasks: Sequence[str | Path | Any], *, scoring: str = "default", top_k: int = DEFAULT_TOP_K
) -> list[Any]:
    """Resolve and load every task (fails fast, one line, before any model is loaded)."""
    from hf_posbias.tasks.mteb_tasks import get_task

    if not tasks:
        raise InputError("no task given")
    loaded = []
    for spec in tasks:
        task = spec if hasattr(spec, "load_data") else get_task(spec, scoring=scoring, top_k=top_k)
        task.load_data()
        loaded.append(task)
    names = [t.metadata.name for t in loaded]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"several tasks share the name {duplicates[0]!r}; rename one task.json")
    return loaded


def write_summaries(summaries: Sequence[EvaluationSummary], out_dir: str | Path) -> Path:
    """Write ``summary.json`` (dict for one task, list for several) + markdown/CSV tables."""
    from hf_posbias.evaluation.reports.report import write_summary_tables

    target = write_summary_json(summaries, out_dir)
    write_summary_tables(summaries, out_dir)
    return target


def evaluate_model(
    settings: EvaluateSettings | ModelAuditSettings | RemediesSettings,
    tasks: Sequence[Any] | None = None,
    *,
    loaded: LoadedModel | None = None,
    show_progress: bool = False,
) -> list[EvaluationSummary]:
    """Evaluate ``settings.model`` on position tasks; write summaries, tables and exports.

    Args:
        settings: the run's settings (:class:`~hf_posbias.evaluation.settings.EvaluateSettings`
            for ``posbias evaluate``; the audit's and the remedies' settings work too): model,
            tasks, output folder, batch, top-k, device, scoring, bootstrap (``None``: no
            intervals), seed, progress lines, how the model loads, a remedy, and (evaluate
            only: ``reranker``, ``first_stage``, ``rerank_k``) the reranking pipeline.
        tasks: task objects already loaded (:func:`load_tasks`) in place of ``settings.task``.
        loaded: an already loaded model (skips loading; used by the audit, the remedies and
            the study).
        show_progress: progress bars from mteb/sentence-transformers.

    Returns:
        One :class:`EvaluationSummary` per task (per subset of a multilingual task), in order.

    Example:
        >>> from hf_posbias.evaluation.settings import EvaluateSettings
        >>> s = EvaluateSettings(model="bm25", task=("tasks/squad-posq-tiny",), out="runs/bm25")
        >>> # evaluate_model(s)  # writes runs/bm25/summary.json
    """
    task_objects = load_tasks(
        settings.task if tasks is None else tasks, scoring=settings.scoring, top_k=settings.top_k
    )
    if loaded is None:
        from hf_posbias.rerankers.options import RerankerOptions

        loaded = load_model(
            settings.model,
            reranker=getattr(settings, "reranker", None),
            first_stage=getattr(settings, "first_stage", None),
            rerank_k=getattr(settings, "rerank_k", 100),
            device=settings.device,
            settings=settings,
            remedy=settings,
            reranker_options=settings if isinstance(settings, RerankerOptions) else None,
        )
    out = Path(settings.out)
    results_dir = out / RESULTS_DIRNAME
    summaries: list[EvaluationSummary] = []
    for task in task_objects:
        logger.info("evaluating %s on %s", loaded.name, task.metadata.name)
        start = time.perf_counter()
        task_result = run_task(
            loaded,
            task,
            batch_size=settings.batch_size,
            results_dir=results_dir,
            show_progress=show_progress,
            progress=settings.progress,
        )
        summaries.extend(
            summarize_task(
                loaded,
                task,
                task_result,
                out_dir=out,
                bootstrap=settings.bootstrap,
                seed=settings.seed,
                evaluation_time_s=time.perf_counter() - start,
                results_dir=results_dir,
            )
        )
    write_summaries(summaries, out)
    return summaries
