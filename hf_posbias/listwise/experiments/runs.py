"""The resumable loop every listwise experiment shares: rerank input lists query by query.

An experiment turns each query's first-stage list into input lists (the relevant passage at
position p; n shuffles …). :func:`rerank_queries` reranks them with sliding windows, one query
per shard through :func:`hf_posbias.shards.run_sharded`: a killed run keeps every finished
query and a rerun skips them; a rerun with other parameters is refused. Each output row is
``{query_id, <tags>, input, ranking, scores, windows, windows_with_fallback, appended, cut,
identifiers, seconds}`` with ``scores`` in ranking order and ``seconds`` the measured reranking
time of the row's query shared out by windows.

:class:`ListwiseExperiment` is the one experiment runner on top of it: an experiment (the
controlled test, propensity, shuffle-eval, remedies) says which input lists it reranks per
query and what it reports; :meth:`ListwiseExperiment.run` does the rest and is the experiment's
entry point (``run_controlled_test`` is ``ControlledTest.run``).

Example:
    >>> from hf_posbias.rerankers.records import Passage
    >>> rows = [{"query_id": "q", "ranking": ["d2", "d1"]}]
    >>> ndcg_at_10(rows, {"q": {"d1": 1}})
    [0.6309297535714575]
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from hf_posbias.listwise.experiments.experiment_settings import LIST_PARAMS, ListSettings
from hf_posbias.listwise.experiments.lists import QueryList
from hf_posbias.listwise.experiments.taskio import RerankTask
from hf_posbias.rerankers.base import ListwiseReranker
from hf_posbias.rerankers.records import FallbackStats, RerankedList, WindowCounts
from hf_posbias.rerankers.window import rerank_lists

InputsFn = Callable[[QueryList], list[tuple[dict[str, Any], list[str]]]]
"""One query's list → ``[(tags, input doc ids), …]`` (tags become row columns)."""


def rerank_queries(
    reranker: ListwiseReranker,
    task: RerankTask,
    lists: Sequence[QueryList],
    inputs: InputsFn,
    out_dir: str | Path,
    params: dict[str, Any],
    *,
    window: int | None = None,
    step: int | None = None,
    desc: str = "rerank",
    show_progress: bool = True,
) -> list[dict[str, Any]]:
    """Rerank every input list of every query, resumably; rows in query then input order."""
    from hf_posbias.shards import run_sharded

    def one_shard(shard: list[QueryList]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for query_list in shard:
            jobs = inputs(query_list)
            query = task.queries[query_list.query_id]
            windows = [(query, task.passages(doc_ids)) for _, doc_ids in jobs]
            started = time.perf_counter()
            reranked = rerank_lists(reranker, windows, window=window, step=step)
            # The query's lists are reranked in lockstep batches: its measured time is shared
            # out by windows (the cost column of ``listwise reranker-remedies``).
            per_window = (time.perf_counter() - started) / max(sum(r.windows for r in reranked), 1)
            for (tags, doc_ids), result in zip(jobs, reranked):
                row = _row(query_list.query_id, tags, doc_ids, result)
                row["seconds"] = round(per_window * result.windows, 6)
                rows.append(row)
        return rows

    # One query per shard: the unit of resumption (the progress counts queries).
    return run_sharded(
        list(lists),
        one_shard,
        out_dir,
        shard_size=1,
        params=params,
        desc=desc,
        progress=show_progress,
    )


def run_experiment(
    reranker: ListwiseReranker,
    task: RerankTask,
    out_dir: str | Path,
    inputs: InputsFn,
    lists_from: ListSettings,
    *,
    experiment: str,
    settings: dict[str, Any],
    show_progress: bool = True,
) -> tuple[list[QueryList], list[dict[str, Any]]]:
    """Select queries, list their first-stage top-k, rerank their inputs (resumably).

    The reranker, task, list settings, ``settings`` and query ids are pinned in the manifest: a
    rerun with other settings is refused instead of mixing outputs.
    """
    from hf_posbias.listwise.experiments.lists import first_stage_lists, select_queries

    s = lists_from
    query_ids = select_queries(task, s.max_queries, s.seed)
    lists = first_stage_lists(
        task,
        query_ids,
        s.first_stage,
        s.k,
        out_dir,
        show_progress=show_progress,
        endpoint=s,
        **s.first_stage_options(),
    )
    params = experiment_params(reranker, task, s, query_ids, experiment, settings)
    rows = rerank_queries(
        reranker,
        task,
        lists,
        inputs,
        out_dir,
        params,
        window=s.window,
        step=s.step,
        desc=experiment,
        show_progress=show_progress,
    )
    return lists, rows


ConfigT = TypeVar("ConfigT", bound=ListSettings)
PayloadT = TypeVar("PayloadT")


@dataclass
class ListwiseExperiment(ABC, Generic[ConfigT, PayloadT]):
    """One listwise experiment on the shared runner: what it reranks, what it reports.

    :meth:`run` is every experiment's entry point: it makes the experiment for one call, lets
    it refuse what cannot run (:meth:`check`, before any window is scored), selects the
    queries and reranks the :meth:`inputs` of each resumably (:func:`run_experiment`, pinning
    :attr:`name` and :meth:`settings` in the manifest), then hands the lists and rows to
    :meth:`report`, which writes the experiment's outputs and returns its payload. A subclass
    holds only what is its own: those four (and :meth:`facts` gives every payload the same
    description of the run).

    Example:
        >>> import tempfile
        >>> from hf_posbias.listwise.experiments.taskio import load_rerank_task
        >>> from hf_posbias.rerankers.loading import load_reranker
        >>> from hf_posbias.tasks.beir import write_beir_folder
        >>> docs = {"d1": ("", "cats purr"), "d2": ("", "dogs bark"), "d3": ("", "cows moo")}
        >>> folder = write_beir_folder(tempfile.mkdtemp(), docs, {"q": "cats?"}, {"q": {"d1": 1}})
        >>> task = load_rerank_task(folder)
        >>> class Reversed(ListwiseExperiment[ListSettings, list[str]]):
        ...     name = "reversed"
        ...     def settings(self): return {}
        ...     def inputs(self, query_list): return [({}, query_list.candidates[::-1])]
        ...     def report(self, lists, rows): return rows[0]["input"][-1], rows[0]["ranking"][0]
        >>> bm25 = load_reranker("bm25", corpus_texts=[p.content() for p in task.corpus.values()])
        >>> Reversed.run(bm25, task, "out", ListSettings(k=3), show_progress=False)  # last → first
        ('d1', 'd1')
    """

    reranker: ListwiseReranker
    task: RerankTask
    out: Path
    config: ConfigT
    show_progress: bool = True
    started: float = field(default_factory=time.perf_counter, init=False)
    """When the run started (``seconds_this_run``)."""

    name: ClassVar[str]
    """The ``experiment`` pinned in the manifest."""

    @classmethod
    def run(
        cls,
        reranker: ListwiseReranker,
        task: RerankTask,
        out_dir: str | Path,
        config: ConfigT,
        *,
        show_progress: bool = True,
        **options: Any,
    ) -> PayloadT:
        """Run the experiment with ``reranker`` on ``task`` into ``out_dir``, return its payload.

        Resumable: finished queries are kept in ``out_dir/shards/`` and skipped on a rerun.
        ``options`` are the experiment's own (``load_checkpoint`` of
        ``listwise reranker-remedies``).
        """
        experiment = cls(reranker, task, Path(out_dir), config, show_progress, **options)
        experiment.check()
        lists, rows = run_experiment(
            reranker,
            task,
            experiment.out,
            experiment.inputs,
            config,
            experiment=cls.name,
            settings=experiment.settings(),
            show_progress=show_progress,
        )
        return experiment.report(lists, rows)

    def check(self) -> None:
        """Refuse what cannot run, before any window is scored (nothing by default)."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The experiment's own parameters, pinned in the manifest beside the list settings."""

    @abstractmethod
    def inputs(self, query_list: QueryList) -> list[tuple[dict[str, Any], list[str]]]:
        """One query's input lists: ``[(tags, input doc ids), …]`` (:data:`InputsFn`)."""

    @abstractmethod
    def report(self, lists: list[QueryList], rows: list[dict[str, Any]]) -> PayloadT:
        """Write the outputs from the query lists and reranked rows; return the payload."""

    def facts(self) -> dict[str, Any]:
        """What every payload says about the run: reranker, task, split, first stage, seed."""
        return {
            "reranker": self.reranker.name,
            "reranker_details": self.reranker.describe(),
            "task": self.task.name,
            "split": self.task.split,
            "first_stage": self.config.first_stage,
            "seed": self.config.seed,
        }

    def seconds_this_run(self) -> float:
        """Seconds since :meth:`run` started, to the millisecond."""
        return round(time.perf_counter() - self.started, 3)


def experiment_params(
    reranker: ListwiseReranker,
    task: RerankTask,
    lists_from: ListSettings,
    query_ids: Sequence[str],
    experiment: str,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """What a stage of an experiment pins in its manifest: the reranker, the task, the list settings
    (:data:`~hf_posbias.listwise.experiments.experiment_settings.LIST_PARAMS`), the experiment's own
    ``settings`` and the query ids (:func:`run_experiment`, and the extra stages that extend one,
    e.g. ``listwise reranker-remedies``' shuffle blocks)."""
    return {
        "experiment": experiment,
        "reranker": reranker.describe(),
        "task": task.source,
        "split": task.split,
        **{name: getattr(lists_from, name) for name in LIST_PARAMS},
        **_pinned_options(lists_from),
        **settings,
        "queries": list(query_ids),
    }


def _pinned_options(lists_from: ListSettings) -> dict[str, Any]:
    """The first stage's fusion k / similarity, pinned only where they apply (so a manifest of
    one stage with the model's own similarity stays what it was)."""
    options = lists_from.first_stage_options()
    return {"first_stage_options": options} if options else {}


def _row(
    query_id: str, tags: dict[str, Any], doc_ids: list[str], result: RerankedList
) -> dict[str, Any]:
    return {
        "query_id": query_id,
        **tags,
        "input": list(doc_ids),
        "ranking": result.ranking,
        "scores": result.ranked_scores(),
        **result.as_row(),
    }


def fallback_stats(rows: Sequence[dict[str, Any]]) -> FallbackStats:
    """Sum the rows' window counts (generation fallbacks, endpoint top-n cuts)."""
    stats = FallbackStats()
    for row in rows:
        stats.add(WindowCounts(**{name: int(row[name]) for name in stats.as_row()}))
    return stats


def add_ndcg_at_10(rows: Sequence[dict[str, Any]], qrels: dict[str, dict[str, int]]) -> None:
    """Set each row's ``ndcg_at_10`` from its ``ranking`` (:func:`ndcg_at_10`), in place.

    Example:
        >>> rows = [{"query_id": "q", "ranking": ["d1", "d2"]}]
        >>> add_ndcg_at_10(rows, {"q": {"d1": 1}}); rows[0]["ndcg_at_10"]
        1.0
    """
    for row, score in zip(rows, ndcg_at_10(rows, qrels)):
        row["ndcg_at_10"] = score


def ndcg_at_10(rows: Sequence[dict[str, Any]], qrels: dict[str, dict[str, int]]) -> list[float]:
    """nDCG@10 of each row's ``ranking`` (the project's one scorer), in row order."""
    from hf_posbias.statistics.scoring import per_query_metrics, ranking_to_run

    out: list[float] = [0.0] * len(rows)
    # One pytrec_eval call per group of rows with distinct query ids (a run maps a query once).
    pending: dict[str, int] = {}

    def flush() -> None:
        run = {q: ranking_to_run(rows[i]["ranking"]) for q, i in pending.items()}
        scores = per_query_metrics(run, {q: qrels[q] for q in pending})
        for q, i in pending.items():
            out[i] = scores[q]["ndcg_at_10"]
        pending.clear()

    for i, row in enumerate(rows):
        qid = str(row["query_id"])
        if qid in pending:
            flush()
        pending[qid] = i
    if pending:
        flush()
    return out


def first_stage_ndcg(
    lists: Sequence[QueryList], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    """nDCG@10 of each query's first-stage order (its list as listed), by query id.

    Example:
        >>> first_stage_ndcg([QueryList("q", ["d2", "d1"], "d1", False)], {"q": {"d1": 1}})
        {'q': 0.6309297535714575}
    """
    rows = [{"query_id": x.query_id, "ranking": x.candidates} for x in lists]
    return dict(zip((x.query_id for x in lists), ndcg_at_10(rows, qrels)))


def write_jsonl(path: str | Path, rows: Sequence[dict[str, Any]]) -> None:
    """One JSON object per line (atomic: :func:`hf_posbias.shards.atomic_path`)."""
    from hf_posbias.shards import atomic_path

    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, default=_plain) + "\n")


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def load_task_and_reranker(s: Any) -> tuple[Any, ListwiseReranker, Path]:
    """Read the task, load the reranker (the first heavy step) and make the output folder, for
    a verb's settings (``task``, ``split``, ``k``, ``reranker``, reranker options, ``out``):
    what ``listwise test``, ``shuffle-eval``, ``propensity`` and the demo share. (What the
    folder may already hold is the command line's to check:
    :func:`hf_posbias.output_folders.claim_output_folder`; a run's manifest refuses a rerun with
    other settings.)
    """
    from hf_posbias.listwise.experiments.firststage import check_k
    from hf_posbias.listwise.experiments.taskio import check_split_queries, load_rerank_task
    from hf_posbias.rerankers.loading import load_reranker

    task = load_rerank_task(s.task, s.split)
    # The study's rule: a bare verb's set is named by its folder.
    check_split_queries(Path(s.task).name, task.split, len(task.judged_queries()))
    check_k(s.k, len(task.corpus))
    texts = (p.content() for p in task.corpus.values())
    reranker = load_reranker(s.reranker, s, corpus_texts=texts)
    out = Path(s.out)
    out.mkdir(parents=True, exist_ok=True)
    return task, reranker, out
