"""``posbias evaluate`` as a thin layer over ``mteb.evaluate``: summaries, intervals, exports.

The flow for ``evaluate_model(model, tasks, out=…)``:

1. every task is resolved (:func:`hf_posbias.tasks.mteb_tasks.get_task`, with the chosen
   ``scoring``) and its data loaded and validated *before* the model is loaded, so a broken
   folder fails in a second, in one line;
2. the model is loaded once (:func:`hf_posbias.modeling.loaders.load_model`) and made ready for
   mteb (:func:`hf_posbias.evaluation.runs.mteb_models.load_mteb_model`);
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
``task_repo``/``task_repo_revision`` (the Hub dataset repo and commit a downloaded task came
from), ``hf_subset``, ``scoring``, ``buckets``, ``ndcg_at_10``, ``n_queries``, ``empty_buckets``,
``mean``, ``psi``, ``worst_drop``, ``best_bucket``, ``worst_bucket``, ``metrics``
(``ndcg_at_100``, ``recall_at_10``, ``recall_at_100``, ``mrr_at_10`` per bucket), ``intervals``,
``per_query_path``, ``run_path``, ``n_documents``, ``top_k``, ``reranker``, ``first_stage``,
``rerank_k``, ``encode_stats``, ``search_stats``, ``evaluation_time_s``, ``mteb_version``,
``mteb_result_path``, ``strata`` (posir), ``warnings``, ``harmonic_mean``, ``trend``
(``slope``, ``r2``, ``spearman_rho``, ``spearman_p``), ``psi_by_length``, ``query_mean``
(mean over queries: PosIR's headline), ``bin_trend`` (posir: PosIR's per-stratum trend over
the bin means).

Example:
    >>> from hf_posbias.evaluation.runs.runner import RESULTS_DIRNAME
    >>> RESULTS_DIRNAME
    'mteb-results'
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import BackendError, InputError, PosbiasError, first_line
from hf_posbias.evaluation.evaluation_settings import (
    CORPUS_CHUNK_SIZE,
    check_run_options,
)
from hf_posbias.evaluation.runs.exports import (
    PER_QUERY_DIRNAME,
    RUNS_DIRNAME,
    per_bucket_from_table,
    safe_name,
    write_per_query,
    write_trec_run,
)
from hf_posbias.evaluation.runs.mteb_models import MtebModel, load_mteb_model
from hf_posbias.evaluation.summary import EvaluationSummary, write_summary_json
from hf_posbias.modeling.resolve import check_model_name
from hf_posbias.setting_values import DEFAULT_SEED
from hf_posbias.tasks.benchmark_registry import DEFAULT_TOP_K, SPLIT

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from hf_posbias.evaluation.runs.remedies import RemedySettings
    from hf_posbias.evaluation.runs.truncation import TruncationCount
    from hf_posbias.modeling.loaders import LoadedModel
    from hf_posbias.modeling.resolve import ModelSettings
    from hf_posbias.rerankers.options import RerankerOptions

logger = logging.getLogger(__name__)

RESULTS_DIRNAME = "mteb-results"
DEFAULT_BOOTSTRAP = 1000


def scores_by_subset(task_result: Any, split: str = SPLIT) -> dict[str, dict[str, Any]]:
    """``{hf_subset: scores}`` read straight from a ``TaskResult`` (no registry lookup)."""
    entries = task_result.scores.get(split)
    if entries is None:
        raise PosbiasError(f"mteb returned no {split!r} scores for {task_result.task_name}")
    return {str(entry["hf_subset"]): dict(entry) for entry in entries}


def run_task(
    loaded: MtebModel,
    task: Any,
    *,
    batch_size: int = 32,
    results_dir: str | Path | None = None,
    show_progress: bool = False,
    progress: bool = True,
    desc: str | None = None,
    corpus_chunk_size: int = CORPUS_CHUNK_SIZE,
) -> Any:
    """Run ``mteb.evaluate`` on one task and return its ``TaskResult``.

    ``results_dir`` is an explicit mteb ``ResultCache`` folder (or ``None``: no cache at all);
    either way the evaluation always runs — cached scores are never reused. ``show_progress``
    turns on mteb's and sentence-transformers' own bars; ``progress`` reports texts encoded /
    total and queries scored / total with an ETA for an encoder
    (:class:`~hf_posbias.evaluation.runs.encode_progress.EvaluationProgress`), a ``still
    running`` line every 30 s for BM25 and reranking pipelines
    (:class:`hf_posbias.progress.Heartbeat`), labelled ``desc`` (default: model and task).
    A bi-encoder searches the corpus ``corpus_chunk_size`` documents at a time (encoded,
    scored against every query, top-k merged, then dropped): :func:`search_model`.
    """
    import mteb

    task.load_data()
    cache = mteb.ResultCache(cache_path=results_dir) if results_dir is not None else None
    label = desc or f"evaluating {loaded.name} on {task.metadata.name}"
    try:
        with _run_progress(loaded, task, label, disable=not progress):
            result = mteb.evaluate(
                search_model(loaded, corpus_chunk_size),
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


def search_model(loaded: MtebModel, corpus_chunk_size: int = CORPUS_CHUNK_SIZE) -> Any:
    """What ``mteb.evaluate`` runs for ``loaded``: a bi-encoder inside mteb's own exact search
    (``SearchEncoderWrapper``), which encodes the corpus ``corpus_chunk_size`` documents at a
    time, scores each chunk against every query and merges the per-chunk top-k in a heap, so
    only one chunk's embeddings are held; BM25, rerankers and remedies search their own way.

    The ranking does not depend on the chunk size (the merge keeps every chunk's top-k): a
    corpus whose embeddings do not fit in memory is searched exactly, one chunk at a time.

    Example:
        >>> from hf_posbias.evaluation.runs.mteb_models import MtebModel
        >>> bm25 = MtebModel(spec="bm25", model=object(), kind="bm25", name="bm25", revision="")
        >>> search_model(bm25, 1000) is bm25.model
        True
    """
    if loaded.encoder is None or loaded.model is not loaded.encoder:
        return loaded.model
    if corpus_chunk_size < 1:
        raise InputError(f"--corpus-chunk-size must be at least 1, got {corpus_chunk_size}")
    from mteb.models import SearchEncoderWrapper

    return SearchEncoderWrapper(loaded.model, corpus_chunk_size=corpus_chunk_size)


@contextlib.contextmanager
def _run_progress(loaded: MtebModel, task: Any, label: str, *, disable: bool) -> Iterator[None]:
    """Counted progress while mteb evaluates an encoder; a heartbeat for the other models."""
    from hf_posbias.evaluation.runs.encode_progress import EvaluationProgress, task_size
    from hf_posbias.progress import Heartbeat

    encoder = loaded.encoder
    if encoder is None or loaded.model is not encoder:
        with Heartbeat(label, disable=disable):
            yield
        return
    documents, queries = task_size(task)
    st_model = loaded.sentence_transformer
    with EvaluationProgress(label, documents=documents, queries=queries, disable=disable) as p:
        handle = p.hook(st_model) if st_model is not None else None
        encoder.progress, encoder.progress_counts_batches = p, handle is not None
        try:
            yield
        finally:
            encoder.progress, encoder.progress_counts_batches = None, False
            if handle is not None:
                handle.remove()


def _intervals(
    rows: Sequence[dict[str, Any]], n_resamples: int | None, seed: int
) -> dict[str, Any] | None:
    if n_resamples is None or not rows:
        return None
    from hf_posbias.statistics.levels import trend_intervals
    from hf_posbias.statistics.uncertainty import bootstrap_positions
    from hf_posbias.tasks.position_scoring import one_row_per_query

    per_bucket = per_bucket_from_table(rows)
    out = bootstrap_positions(per_bucket, n_resamples=n_resamples, seed=seed).to_dict()
    placed = [r for r in one_row_per_query(rows) if r.get("relative_position") is not None]
    out["trend"] = trend_intervals(
        [float(r["relative_position"]) for r in placed],
        [float(r["ndcg_at_10"]) for r in placed],
        n_resamples=n_resamples,
        seed=seed,
    )
    return out


def summarize_task(
    loaded: MtebModel,
    task: Any,
    task_result: Any,
    *,
    out_dir: Path | None = None,
    bootstrap: int | None = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    evaluation_time_s: float = 0.0,
    results_dir: str | Path | None = None,
    truncation: TruncationCount | None = None,
    exclude_truncated: bool = False,
) -> list[EvaluationSummary]:
    """One :class:`EvaluationSummary` per subset of a ``TaskResult`` (one unless multilingual).

    The numbers come from the ``position`` scores mteb recorded; the per-query rows kept by the
    task give the intervals and (with ``out_dir``) the per-query table and the TREC run.
    ``truncation``
    (:func:`~hf_posbias.evaluation.runs.truncation.count_truncated_evidence`) gives the
    truncated queries per bucket and the PSI per document token-length stratum.
    """
    import mteb

    from hf_posbias.evaluation.runs.truncation import token_length_strata
    from hf_posbias.statistics.levels import psi_by_length
    from hf_posbias.tasks.position_scoring import bucket_scheme_label, one_row_per_query

    subsets = scores_by_subset(task_result)
    name = task.metadata.name
    origin = getattr(task, "hub_origin", None)
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
        # Per-query statistics count each query once (zeng2025 puts boundary queries in two
        # buckets: they stay in both bucket means, in their stored bucket here).
        once = one_row_per_query(table)
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
                task_repo=origin[0] if origin else None,
                task_repo_revision=origin[1] if origin else None,
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
                query_mean=position.get("query_mean"),
                bin_trend=dict(position.get("bin_trend") or {}),
                psi_by_length=psi_by_length(once, n_resamples=bootstrap, seed=seed),
                bucket_scheme=bucket_scheme_label(task.scoring, task.task_data.info),
                n_buckets=len(position["buckets"]),
                max_seq_length=None if truncation is None else truncation.max_seq_length,
                truncated={} if truncation is None else dict(truncation.per_bucket),
                exclude_truncated=exclude_truncated,
                psi_by_token_length=(
                    {}
                    if truncation is None
                    else token_length_strata(
                        once, truncation.doc_tokens, n_resamples=bootstrap, seed=seed
                    )
                ),
            )
        )
        for note in summaries[-1].warnings:
            warnings.warn(note, UserWarning, stacklevel=2)
    return summaries


def _truncation(loaded: MtebModel, task: Any, exclude: bool) -> TruncationCount | None:
    """Count the task's truncated queries in the model's tokenization (``None`` for a model
    without a token limit of its own); with ``exclude``, leave them out of the task."""
    from hf_posbias.evaluation.runs.truncation import (
        count_truncated_evidence,
        drop_queries,
        model_tokenization,
    )

    tokenization = model_tokenization(loaded)
    if tokenization is None:
        if exclude:
            raise InputError(
                f"--exclude-truncated: {loaded.name} has no token limit of its own "
                "(a bi-encoder with a fast tokenizer has one); nothing to exclude"
            )
        return None
    tokenizer, limit, prefix = tokenization
    count = count_truncated_evidence(task.task_data, tokenizer, limit, prefix=prefix)
    if exclude:
        drop_queries(task, count.truncated_ids)
    return count


TaskReference = str | os.PathLike[str] | Any
"""One task as the evaluation takes it: a task folder, a registered task name, or a task object
(:class:`~hf_posbias.tasks.mteb_tasks.PositionRetrievalTask`, what ``pb.get_task`` returns)."""


def task_list(tasks: TaskReference | Sequence[TaskReference]) -> list[TaskReference]:
    """The tasks of ``tasks``, one task or several, as a list (``mteb.evaluate`` takes either).

    Example:
        >>> task_list("tasks/mine"), task_list(["a", Path("b")])
        (['tasks/mine'], ['a', PosixPath('b')])
    """
    if isinstance(tasks, str | os.PathLike) or hasattr(tasks, "load_data"):
        return [tasks]
    return list(tasks)


def check_task_references(
    tasks: TaskReference | Sequence[TaskReference],
) -> list[TaskReference]:
    """The tasks of ``tasks`` (:func:`task_list`), every name and folder checked without
    loading mteb: a mistake is one line in a second."""
    from hf_posbias.tasks.benchmark_registry import resolve_task_reference

    tasks = task_list(tasks)
    if not tasks:
        raise InputError("no task given")
    for spec in tasks:
        if not hasattr(spec, "load_data"):
            resolve_task_reference(spec)
    return tasks


def load_tasks(
    tasks: TaskReference | Sequence[TaskReference],
    *,
    scoring: str = "default",
    top_k: int = DEFAULT_TOP_K,
) -> list[Any]:
    """Resolve and load every task of ``tasks`` (one or several: :func:`task_list`); fails
    fast, one line, before any model is loaded (:func:`check_task_references`)."""
    tasks = check_task_references(tasks)
    from hf_posbias.tasks.mteb_tasks import get_task

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
    model: str | os.PathLike[str] | LoadedModel | MtebModel | SentenceTransformer,
    tasks: TaskReference | Sequence[TaskReference],
    *,
    out: str | Path,
    scoring: str = "default",
    top_k: int = DEFAULT_TOP_K,
    batch_size: int = 32,
    bootstrap: int | None = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    progress: bool = True,
    show_progress: bool = False,
    device: str | None = None,
    model_options: ModelSettings | None = None,
    remedy: RemedySettings | None = None,
    reranker: str | None = None,
    first_stage: str | None = None,
    rerank_k: int = 100,
    reranker_options: RerankerOptions | None = None,
    exclude_truncated: bool = False,
    corpus_chunk_size: int = CORPUS_CHUNK_SIZE,
) -> list[EvaluationSummary]:
    """Evaluate ``model`` on position tasks; write summaries, tables and exports into ``out``.

    The library call behind ``posbias evaluate``, in the shape of ``mteb.evaluate(model, tasks,
    …)``; the verb's :class:`~hf_posbias.evaluation.evaluation_settings.EvaluateSettings` give
    every keyword
    (:meth:`~hf_posbias.evaluation.evaluation_settings.EvaluationOptions.evaluate_kwargs`).

    Args:
        model: a model name as ``posbias evaluate --model`` takes it (``bm25``, a folder, a Hub
            id, ``openai:<model>``, …); a model loaded once for several evaluations
            (``pb.load_model``, :func:`hf_posbias.modeling.loaders.load_model`: ``device`` and
            ``model_options`` then load only the reranker, ``remedy`` and the reranker apply);
            a model made ready for mteb already
            (:func:`~hf_posbias.evaluation.runs.mteb_models.load_mteb_model`: every loading
            keyword is then unused); or a sentence-transformers model object
            (:func:`hf_posbias.modeling.loaders.loaded_instance`).
        tasks: one task or several: task folders, registered task names or task objects
            (:func:`load_tasks`).
        out: the output folder.
        scoring: the per-position protocol (``default``, ``zeng2025`` or ``posir``).
        top_k: documents retrieved per query (at least 10).
        batch_size: texts per encoding batch (windows per forward pass of a listwise reranker).
        bootstrap: bootstrap resamples of the intervals (``None``: no intervals).
        seed: the bootstrap's seed.
        progress: plain progress lines while mteb runs.
        show_progress: progress bars and notices from the libraries (mteb,
            sentence-transformers, transformers' weights bar, their ``FutureWarning`` notices);
            off: :func:`hf_posbias.progress.quiet_libraries`.
        device: torch device (default: automatic).
        model_options: how a model given by name loads
            (:class:`~hf_posbias.modeling.resolve.ModelSettings`: remote code, endpoint, …).
        remedy: an inference-time remedy wrapping a bi-encoder
            (:class:`~hf_posbias.evaluation.runs.remedies.RemedySettings`).
        reranker: a second stage reordering ``model``'s top ``rerank_k``.
        first_stage: the retriever whose top ``rerank_k`` the reranker ``model`` reorders.
        rerank_k: candidates per query for the reranker.
        reranker_options: how a listwise reranker is loaded and slid
            (:class:`~hf_posbias.rerankers.options.RerankerOptions`).
        exclude_truncated: leave out the queries whose evidence starts at or beyond the
            model's ``max_seq_length`` (they are counted either way:
            :mod:`~hf_posbias.evaluation.runs.truncation`).
        corpus_chunk_size: documents a bi-encoder encodes and scores at once
            (:func:`search_model`; the ranking is the same at any size).

    Returns:
        One :class:`EvaluationSummary` per task (per subset of a multilingual task), in order.

    Example:
        >>> from hf_posbias.evaluation.evaluation_settings import EvaluateSettings
        >>> # evaluate_model("bm25", ["tasks/squad-posq-tiny"], out="runs/bm25", bootstrap=200)
        >>> # writes runs/bm25/summary.json; the same run from the verb's settings:
        >>> s = EvaluateSettings(model="bm25", task=("tasks/squad-posq-tiny",), out="runs/bm25")
        >>> # evaluate_model(s.model, s.task, **s.evaluate_kwargs())
        >>> s.evaluate_kwargs()["out"]
        'runs/bm25'
    """
    check_run_options(batch_size=batch_size, top_k=top_k, scoring=scoring, bootstrap=bootstrap)
    if isinstance(model, str | os.PathLike) and not first_stage:
        check_model_name(model)  # a misspelt name: one line before mteb loads
    check_task_references(tasks)
    from hf_posbias.progress import quiet_libraries

    # What a call prints is its own progress; libraries' bars and notices only when asked.
    with quiet_libraries(not show_progress):
        task_objects = load_tasks(tasks, scoring=scoring, top_k=top_k)
        if isinstance(model, MtebModel):
            loaded = model
        else:
            loaded = load_mteb_model(
                model,
                reranker=reranker,
                first_stage=first_stage,
                rerank_k=rerank_k,
                device=device,
                settings=model_options,
                remedy=remedy,
                reranker_options=reranker_options,
            )
        out_dir = Path(out)
        results_dir = out_dir / RESULTS_DIRNAME
        summaries: list[EvaluationSummary] = []
        for task in task_objects:
            logger.info("evaluating %s on %s", loaded.name, task.metadata.name)
            start = time.perf_counter()
            truncation = _truncation(loaded, task, exclude_truncated)
            task_result = run_task(
                loaded,
                task,
                batch_size=batch_size,
                results_dir=results_dir,
                show_progress=show_progress,
                progress=progress,
                corpus_chunk_size=corpus_chunk_size,
            )
            summaries.extend(
                summarize_task(
                    loaded,
                    task,
                    task_result,
                    out_dir=out_dir,
                    bootstrap=bootstrap,
                    seed=seed,
                    evaluation_time_s=time.perf_counter() - start,
                    results_dir=results_dir,
                    truncation=truncation,
                    exclude_truncated=exclude_truncated,
                )
            )
        write_summaries(summaries, out_dir)
    return summaries
