"""Evaluate one model on position tasks with ``mteb.evaluate`` → per-bucket nDCG@10, mean, PSI.

The flow for ``evaluate_model(model, tasks, out_dir)``:

1. every task is resolved (:func:`hf_posbias.evaluation.tasks.get_task`) and its data loaded and
   validated *before* the model is loaded, so a broken folder fails in a second, in one line;
2. the model is loaded once (:func:`load_model`): ``bm25`` → :class:`~.search.BM25Model`;
   anything else through :mod:`hf_posbias.modeling` (local path → packaged model → Hub id),
   wrapped in :class:`~.cache.CachedEncoder` (corpus embedded once per model across buckets and
   tasks) with a unique mteb name/revision; with a reranker, :class:`~.search.RerankSearch`;
3. each task runs through ``mteb.evaluate`` with an explicit result folder
   (``<out>/mteb-results``, mteb's ``ResultCache`` layout, ``overwrite_strategy="always"``: a
   rerun never silently reuses old scores);
4. per-subset scores are read from the ``TaskResult`` itself (``TaskResult.task`` raises for
   non-registry tasks) and summarised with :func:`hf_posbias.evaluation.psi.summarize_positions`.

Outputs in ``out_dir``:

- ``summary.json`` — ONE task: the task's summary dict (schema below). SEVERAL tasks: a JSON
  list of those dicts, in the order given;
- ``summary.md`` / ``summary.csv`` — tables for any number of tasks (CSV in long format: one
  row per task × bucket);
- ``mteb-results/results/<model>/<revision>/<Task>.json`` — mteb's own result files, ready for
  ``ResultCache.submit_results`` (see ``docs/submitting_results.md``).

Summary dict keys: ``model`` (the argument), ``model_name``/``model_revision`` (what mteb
recorded), ``task``, ``task_path``, ``buckets`` (ordered, empty ones included), ``ndcg_at_10``
({bucket: score or null for empty buckets}), ``n_queries`` ({bucket: count}), ``empty_buckets``,
``mean``, ``psi`` (null only if every bucket scored 0), ``worst_drop``, ``best_bucket``,
``worst_bucket``, ``metrics`` ({metric: {bucket: score}} for recall@100, mrr@10, ndcg@100 …),
``n_documents``, ``top_k``, ``reranker``, ``first_stage``, ``rerank_k``, ``encode_stats``,
``search_stats``, ``evaluation_time_s``, ``mteb_version``, ``mteb_result_path``, ``warnings``.
``encode_stats`` (texts encoded per prompt type, cache hits) and ``search_stats`` (BM25 index
builds, reranked pairs) are cumulative for the loaded model up to the end of that task.

Example:
    >>> from hf_posbias.evaluation.runner import EvaluationSummary
    >>> s = EvaluationSummary.from_scores("m", "T", ["begin", "end"], {"begin": 0.8, "end": 0.4},
    ...                                   n_queries={"begin": 5, "end": 5})
    >>> (s.mean, s.psi)
    (0.6000000000000001, 0.5)
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError, ModelLoadError, PosbiasError
from hf_posbias.evaluation.psi import summarize_positions

logger = logging.getLogger(__name__)

EXTRA_METRICS: tuple[str, ...] = ("ndcg_at_100", "recall_at_10", "recall_at_100", "mrr_at_10")
"""Per-bucket metrics kept besides ``ndcg_at_10``."""
RESULTS_DIRNAME = "mteb-results"
SPLIT = "test"


@dataclass
class EvaluationSummary:
    """Position-wise results of one model on one task (``summary.json``)."""

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
    n_documents: int = 0
    top_k: int = 100
    reranker: str | None = None
    first_stage: str | None = None
    rerank_k: int | None = None
    encode_stats: dict[str, Any] | None = None
    search_stats: dict[str, Any] | None = None
    evaluation_time_s: float = 0.0
    mteb_version: str = ""
    mteb_result_path: str | None = None
    warnings: list[str] = field(default_factory=list)

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
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                summary = summarize_positions(ordered)
                psi_value: float | None = summary.psi
                mean, worst_drop = summary.mean, summary.worst_drop
                best, worst = summary.best_bucket, summary.worst_bucket
                empty = summary.empty_buckets
            except InputError as err:
                present = {b: v for b, v in ordered.items() if v is not None}
                if not present:
                    raise InputError(f"{task}: no bucket has queries, nothing to score") from None
                # Every bucket scored 0: PSI is undefined (max = 0); say so instead of failing.
                notes.append(f"{task}: {err}")
                psi_value, worst_drop = None, 0.0
                mean = sum(present.values()) / len(present)
                best = worst = next(iter(present))
                empty = [b for b, v in ordered.items() if v is None]
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (the ``summary.json`` schema)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvaluationSummary:
        """Read a dict written by :meth:`to_dict` (unknown keys are ignored)."""
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def label(self) -> str:
        """Short label for plots and tables (model, plus the reranking pipeline if any)."""
        if self.reranker:
            return f"{self.first_stage} → {self.reranker}@{self.rerank_k}"
        # The display name (e.g. "models/posbias-minilm-begin"), not a long absolute path.
        return self.model_name or self.model


@dataclass
class LoadedModel:
    """A model ready for ``mteb.evaluate`` plus what the summaries report about it."""

    spec: str
    model: Any
    kind: str
    name: str
    revision: str
    encoder: Any = None
    search: Any = None
    reranker: str | None = None
    first_stage: str | None = None
    rerank_k: int | None = None

    @property
    def sentence_transformer(self) -> Any:
        """The SentenceTransformer behind a bi-encoder (``None`` for BM25 and rerankers).

        The analyses (evidence moving, segment profile) need the raw model, not the cached
        mteb encoder wrapped around it.
        """
        if self.kind != "bi-encoder" or self.encoder is None:
            return None
        # CachedEncoder → mteb SentenceTransformerEncoderWrapper → SentenceTransformer
        return self.encoder.model.model

    def encode_stats(self) -> dict[str, Any] | None:
        """Counters of the embedding cache (``None`` for BM25)."""
        return self.encoder.stats.to_dict() if self.encoder is not None else None

    def search_stats(self) -> dict[str, Any] | None:
        """Counters of the search model (index builds, pairs reranked …)."""
        return self.search.stats.to_dict() if self.search is not None else None


def _check_model_path(spec: str) -> None:
    text = str(spec)
    if text.startswith(("/", "./", "../", "~")) and not Path(text).expanduser().exists():
        raise ModelLoadError(f"model path {text} does not exist")


def _model_identity(spec: str, loaded: Any) -> tuple[str, str]:
    """Unique mteb (name, revision) for a model argument (see OFFLINE_NOTES, mteb pitfalls)."""
    from hf_posbias.evaluation.cache import folder_fingerprint
    from hf_posbias.modeling import PACKAGED_MODELS, model_display_name, resolve_model

    resolved = resolve_model(spec)
    if spec in PACKAGED_MODELS:
        name = spec if "/" in spec else f"sentence-transformers/{spec}"
    else:
        name = model_display_name(spec)
    if Path(resolved).exists():
        return name, f"local-{folder_fingerprint(resolved)}"
    revision = None
    try:  # transformers records the Hub commit it loaded
        revision = loaded[0].auto_model.config._commit_hash
    except (AttributeError, IndexError, KeyError, TypeError):
        revision = getattr(getattr(loaded, "config", None), "_commit_hash", None)
    return name, revision or "no_revision_available"


def _load_retriever(
    spec: str, *, device: str | None, embedding_cache_dir: str | Path | None
) -> tuple[Any, str, str, Any, Any]:
    """(mteb model, name, revision, encoder-or-None, search-or-None) for a first-stage spec."""
    from hf_posbias.evaluation.search import BM25Model, is_bm25

    if is_bm25(spec):
        bm25 = BM25Model()
        meta = bm25.mteb_model_meta
        return bm25, str(meta.name), str(meta.revision), None, bm25
    _check_model_path(spec)
    from mteb.models import SentenceTransformerEncoderWrapper

    from hf_posbias.evaluation.cache import CachedEncoder, unique_model_meta
    from hf_posbias.modeling import load_sentence_transformer

    st_model = load_sentence_transformer(spec, device=device)
    name, revision = _model_identity(spec, st_model)
    wrapper = SentenceTransformerEncoderWrapper(st_model)
    meta = unique_model_meta(wrapper.mteb_model_meta, name, revision)
    wrapper.mteb_model_meta = meta
    encoder = CachedEncoder(wrapper, cache_dir=embedding_cache_dir, meta=meta)
    return encoder, name, revision, encoder, None


def load_model(
    model: str,
    *,
    reranker: str | None = None,
    first_stage: str | None = None,
    rerank_k: int = 100,
    device: str | None = None,
    embedding_cache_dir: str | Path | None = None,
) -> LoadedModel:
    """Load a retriever (``bm25`` or a bi-encoder) or a two-stage reranking pipeline.

    Two spellings of the same pipeline: ``load_model("bm25", reranker=CE)`` and
    ``load_model(CE, first_stage="bm25")`` — the cross-encoder reranks the first stage's top
    ``rerank_k``.

    Raises:
        ModelLoadError: a model path that does not exist or a model that cannot load.
    """
    if reranker and first_stage:
        raise InputError("give either a reranker (model = first stage) or a first stage, not both")
    if first_stage:
        retriever_spec, reranker_spec = first_stage, model
    else:
        retriever_spec, reranker_spec = model, reranker
    retriever, name, revision, encoder, search = _load_retriever(
        retriever_spec, device=device, embedding_cache_dir=embedding_cache_dir
    )
    if not reranker_spec:
        kind = "bm25" if search is not None else "bi-encoder"
        return LoadedModel(
            spec=model,
            model=retriever,
            kind=kind,
            name=name,
            revision=revision,
            encoder=encoder,
            search=search,
        )
    _check_model_path(reranker_spec)
    from mteb.models import CrossEncoderWrapper

    from hf_posbias.evaluation.cache import unique_model_meta
    from hf_posbias.evaluation.search import RerankSearch
    from hf_posbias.modeling import load_cross_encoder

    ce = load_cross_encoder(reranker_spec, device=device)
    ce_name, ce_revision = _model_identity(reranker_spec, ce)
    ce_wrapper = CrossEncoderWrapper(ce)
    ce_wrapper.mteb_model_meta = unique_model_meta(ce_wrapper.mteb_model_meta, ce_name, ce_revision)
    pipeline = RerankSearch(
        retriever, ce_wrapper, rerank_k=rerank_k, first_stage_name=f"{name}@{revision}"
    )
    return LoadedModel(
        spec=model,
        model=pipeline,
        kind="rerank",
        name=ce_name,
        revision=ce_revision,
        encoder=encoder,
        search=pipeline,
        reranker=reranker_spec,
        first_stage=retriever_spec,
        rerank_k=rerank_k,
    )


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
    top_k: int = 100,
    results_dir: str | Path | None = None,
    show_progress: bool = False,
) -> Any:
    """Run ``mteb.evaluate`` on one loaded task and return its ``TaskResult``.

    ``results_dir`` is an explicit mteb ``ResultCache`` folder (or ``None``: no cache at all);
    either way the evaluation always runs — cached scores are never reused.
    """
    import mteb

    if top_k < 10:
        raise InputError(f"top_k must be >= 10 to compute nDCG@10, got {top_k}")
    task.load_data()
    task._top_k = top_k  # mteb retrieves max(k_values)=1000 by default; Z25 uses 100
    cache = mteb.ResultCache(cache_path=results_dir) if results_dir is not None else None
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
    if result.exceptions:
        raise PosbiasError(f"{task.metadata.name}: {result.exceptions[0].exception}")
    return result.task_results[0]


def summarize_task(
    loaded: LoadedModel,
    task: Any,
    task_result: Any,
    *,
    top_k: int,
    evaluation_time_s: float = 0.0,
    results_dir: str | Path | None = None,
) -> EvaluationSummary:
    """Turn a ``TaskResult`` into an :class:`EvaluationSummary` (PSI over non-empty buckets)."""
    import mteb

    subsets = scores_by_subset(task_result)
    counts = task.bucket_counts
    buckets = task.buckets
    missing = [b for b in buckets if counts.get(b, 0) > 0 and b not in subsets]
    if missing:
        raise PosbiasError(f"{task.metadata.name}: mteb returned no scores for bucket(s) {missing}")
    ndcg = {b: (float(subsets[b]["ndcg_at_10"]) if b in subsets else None) for b in buckets}
    metrics = {
        m: {
            b: (float(subsets[b][m]) if b in subsets and m in subsets[b] else None) for b in buckets
        }
        for m in EXTRA_METRICS
    }
    result_path = None
    if results_dir is not None:
        result_path = str(
            mteb.ResultCache(cache_path=results_dir).get_task_result_path(
                task_result.task_name, loaded.model.mteb_model_meta
            )
        )
    return EvaluationSummary.from_scores(
        loaded.spec,
        task.metadata.name,
        buckets,
        ndcg,
        n_queries=counts,
        metrics=metrics,
        model_name=loaded.name,
        model_revision=loaded.revision,
        task_path=str(task.folder),
        n_documents=len(task.task_data.corpus),
        top_k=top_k,
        reranker=loaded.reranker,
        first_stage=loaded.first_stage,
        rerank_k=loaded.rerank_k,
        encode_stats=loaded.encode_stats(),
        search_stats=loaded.search_stats(),
        evaluation_time_s=round(evaluation_time_s, 3),
        mteb_version=str(task_result.mteb_version or ""),
        mteb_result_path=result_path,
    )


def load_tasks(tasks: Sequence[str | Path | Any]) -> list[Any]:
    """Resolve and load every task (fails fast, one line, before any model is loaded)."""
    from hf_posbias.evaluation.tasks import get_task

    if not tasks:
        raise InputError("no task given")
    loaded = []
    for spec in tasks:
        task = spec if hasattr(spec, "load_data") else get_task(spec)
        task.load_data()
        loaded.append(task)
    names = [t.metadata.name for t in loaded]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"several tasks share the name {duplicates[0]!r}; rename one task.json")
    return loaded


def write_summaries(summaries: Sequence[EvaluationSummary], out_dir: str | Path) -> Path:
    """Write ``summary.json`` (dict for one task, list for several) + markdown/CSV tables."""
    import json
    import os

    from hf_posbias.evaluation.report import write_summary_tables

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dicts = [s.to_dict() for s in summaries]
    payload = dicts[0] if len(dicts) == 1 else dicts
    # Not shards.write_json: it sorts keys, and bucket dicts must keep the position order.
    target = out / "summary.json"
    tmp = target.with_name(f".summary.json.tmp{os.getpid()}")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, target)
    write_summary_tables(summaries, out)
    return target


def read_summaries(path: str | Path) -> list[EvaluationSummary]:
    """Read a ``summary.json`` (either layout) back into summaries."""
    import json

    data = json.loads(Path(path).read_text())
    rows = data if isinstance(data, list) else [data]
    return [EvaluationSummary.from_dict(row) for row in rows]


def evaluate_model(
    model: str,
    tasks: Sequence[str | Path | Any],
    out_dir: str | Path,
    *,
    batch_size: int = 32,
    top_k: int = 100,
    reranker: str | None = None,
    first_stage: str | None = None,
    rerank_k: int = 100,
    device: str | None = None,
    embedding_cache_dir: str | Path | None = None,
    show_progress: bool = False,
    loaded: LoadedModel | None = None,
) -> list[EvaluationSummary]:
    """Evaluate ``model`` on position tasks; write ``summary.json`` and tables in ``out_dir``.

    Args:
        model: ``bm25``, a local folder, a packaged name (``all-MiniLM-L6-v2``) or a Hub id;
            with ``first_stage`` set, the cross-encoder that reranks it.
        tasks: task folders, registered task names, or task objects.
        out_dir: output folder (see the module docstring for the layout).
        batch_size: encoding batch size.
        top_k: documents retrieved per query (Z25: 100).
        reranker: a cross-encoder reranking ``model``'s top ``rerank_k``.
        first_stage: the retriever whose top ``rerank_k`` the cross-encoder ``model`` reranks.
        rerank_k: candidates handed to the reranker.
        device: torch device for the models.
        embedding_cache_dir: persist embeddings there (in-memory cache is always on).
        show_progress: progress bars from mteb/sentence-transformers.
        loaded: an already loaded model (skips loading; used by the audit and reversal).

    Returns:
        One :class:`EvaluationSummary` per task, in order.

    Example:
        >>> # evaluate_model("bm25", ["tasks/squad-posq-tiny"], "runs/bm25")
    """
    task_objects = load_tasks(tasks)
    if loaded is None:
        loaded = load_model(
            model,
            reranker=reranker,
            first_stage=first_stage,
            rerank_k=rerank_k,
            device=device,
            embedding_cache_dir=embedding_cache_dir,
        )
    out = Path(out_dir)
    results_dir = out / RESULTS_DIRNAME
    summaries = []
    for task in task_objects:
        logger.info("evaluating %s on %s", loaded.name, task.metadata.name)
        start = time.perf_counter()
        task_result = run_task(
            loaded,
            task,
            batch_size=batch_size,
            top_k=top_k,
            results_dir=results_dir,
            show_progress=show_progress,
        )
        summaries.append(
            summarize_task(
                loaded,
                task,
                task_result,
                top_k=top_k,
                evaluation_time_s=time.perf_counter() - start,
                results_dir=results_dir,
            )
        )
    write_summaries(summaries, out)
    return summaries
