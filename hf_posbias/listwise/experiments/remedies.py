"""``posbias listwise reranker-remedies``: every listwise remedy on one 1…k harness, with its cost.

The controlled test (:mod:`~hf_posbias.listwise.experiments.controlled`) puts the relevant
passage at each input position p of each query's first-stage list. On the *same* queries and
windows this module scores

- ``none`` — the plain reranker (the controlled test itself);
- ``calibrated`` — slot calibration from the recorded scores plus one content-free window per
  window shape (:mod:`~hf_posbias.listwise.experiments.calibration`);
- ``permsc-borda-m{m}``, ``permsc-kemeny-m{m}`` — PermSC-style aggregation (Q26 RQ4 / Fig. 5):
  the ranking of the list as given plus the rankings of m−1 seeded shuffles of the same k
  documents, aggregated by Borda or Kemeny local search
  (:mod:`~hf_posbias.listwise.experiments.aggregate`). A uniformly random order of the query's k
  documents does not depend on where the relevant one was put, so the m−1 shuffles of a query
  are reranked once and shared by every position: the harness pays m−1 extra lists per query,
  not per (query, position). ``m = 1`` is ``none``. Shuffle j of a query is always
  ``shuffled(documents, seed, query, j)``, so a rerun with a larger m reranks only the new
  shuffles (in ``OUT/shuffles-SSS-EEE/`` blocks) and gives the rows of a fresh run with that m;
- ``debiasfirst:<folder>`` — each ``--checkpoints`` folder, tested on the same queries and
  positions (``OUT/checkpoints/<folder>/``, a ``listwise test`` folder).

Per remedy: mean nDCG@10 over positions, PSI, the harmonic mean of the per-position means, Δ
mean against ``none`` with a paired p-value (per query, shared by the positions:
:func:`~hf_posbias.statistics.uncertainty.paired_comparison`), and the cost measured
in the same run — ``windows`` (forward passes this run spent on the remedy, shared shuffles and
the calibration window included), ``seconds`` (their measured time, plus the aggregation's),
and ``windows_per_ranking`` (what one ranked list costs when deployed: m for PermSC; 1 for
calibration, whose window is paid once per window shape). Writes ``remedies.json`` (the rows),
``remedies.md``, ``remedies.png`` (PSI against windows per ranking), ``per_query.jsonl`` (one
row per remedy, query and position) and the resumable shards of the reranked lists.

The remedies are :class:`~hf_posbias.listwise.experiments.remedy_kinds.ListwiseRemedy` objects
in :data:`LISTWISE_REMEDY_REGISTRY` (the built-ins, then the plugins of the entry-point group
``hf_posbias.listwise_remedies``), listed by ``posbias list remedies`` with the bi-encoder ones.

Example:
    >>> LISTWISE_REMEDY_REGISTRY.names()[:3]
    ['calibrated', 'permsc', 'debiasfirst']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.experiment_settings import ListwiseRemediesConfig
from hf_posbias.listwise.experiments.lists import QueryList, controlled_list, describe_lists
from hf_posbias.listwise.experiments.lists import shuffled as shuffle_list
from hf_posbias.listwise.experiments.remedy_kinds import (
    BUILTIN_LISTWISE_REMEDIES,
    ListwiseRemedy,
    Variant,
    per_ranking,
)
from hf_posbias.listwise.experiments.runs import (
    ListwiseExperiment,
    add_ndcg_at_10,
    experiment_params,
    rerank_queries,
    write_jsonl,
)
from hf_posbias.plugins import NO_REMEDY, Registry, remedy_registry
from hf_posbias.rerankers.base import ListwiseReranker
from hf_posbias.settings import flag_name

EXPERIMENT = "listwise-remedies"
"""The main stage's ``experiment`` in its manifest."""

LISTWISE_REMEDY_REGISTRY: Registry[ListwiseRemedy] = remedy_registry(
    "listwise_remedies",
    ListwiseRemedy,
    what="listwise remedy",
    builtins=lambda: BUILTIN_LISTWISE_REMEDIES,
)
"""The listwise remedy registry: the built-ins
(:data:`~hf_posbias.listwise.experiments.remedy_kinds.BUILTIN_LISTWISE_REMEDIES`), then the
plugins of the entry-point group ``hf_posbias.listwise_remedies``."""
SHUFFLE_BLOCK_PREFIX = "shuffles-"
"""Folders ``OUT/shuffles-SSS-EEE`` hold the PermSC shuffles [SSS, EEE) beyond the main stage's."""


@dataclass
class ListwiseRemedies(ListwiseExperiment[ListwiseRemediesConfig, list[dict[str, Any]]]):
    """Every listwise remedy on the experiment runner; :func:`run_listwise_remedies` is its
    :meth:`~hf_posbias.listwise.experiments.runs.ListwiseExperiment.run`.

    ``load_checkpoint(path)`` loads a ``--checkpoints`` folder as a reranker (the CLI passes
    :func:`~hf_posbias.rerankers.loading.load_reranker` with the run's options).
    Resumable: the reranked lists are kept per query in ``out_dir/shards/``. A rerun with
    another ``--shuffles`` reranks only the shuffles no stage holds yet: the main stage keeps
    the number of shuffles it was first pinned with, shuffles beyond it go to blocks
    ``out_dir/shuffles-SSS-EEE/`` (:func:`shuffle_blocks`); a smaller m reads a subset.
    """

    load_checkpoint: Callable[[str], ListwiseReranker] | None = None
    main_shuffles: int = field(init=False)
    """The shuffles the main stage reranks (see :meth:`__post_init__`)."""

    name = EXPERIMENT

    def __post_init__(self) -> None:
        from hf_posbias.shards import read_manifest

        # The main stage keeps the shuffle count it was first pinned with (a rerun with another
        # m reuses it); shuffles beyond it live in blocks of their own (see shuffle_blocks).
        pinned = read_manifest(self.out)
        self.main_shuffles = self.needed
        if pinned is not None and pinned["params"].get("experiment") == EXPERIMENT:
            self.main_shuffles = int(pinned["params"].get("shuffles", self.needed))

    @property
    def needed(self) -> int:
        """Shuffles per query the largest m needs (m − 1: the list as given is the first)."""
        return max(self.config.shuffles) - 1

    def check(self) -> None:
        from hf_posbias.listwise.experiments.calibration import check_calibratable

        config = self.config
        if config.calibrate:
            check_calibratable(self.reranker)  # before any window is scored
        if config.checkpoint_paths and self.load_checkpoint is None:
            raise ValueError(f"{flag_name('checkpoints')} needs load_checkpoint")
        missing = [p for p in config.checkpoint_paths if not Path(p).expanduser().is_dir()]
        if missing:  # before the first window, not after the plain run
            raise InputError(
                f"{flag_name('checkpoints')}: {missing[0]} is not a folder (give the output "
                "folders of posbias listwise train)"
            )

    def settings(self) -> dict[str, Any]:
        return {"positions": list(self.config.positions), "shuffles": self.main_shuffles}

    def inputs(self, query_list: QueryList) -> list[tuple[dict[str, Any], list[str]]]:
        tags = {"relevant": query_list.relevant, "injected": query_list.injected}
        jobs = [
            (
                {"position": p, "shuffle": -1, **tags},
                controlled_list(query_list.candidates, query_list.relevant, p),
            )
            for p in self.config.positions
        ]
        return jobs + shuffle_inputs(query_list, self.config.seed, range(self.main_shuffles))

    def report(self, lists: list[QueryList], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        task, out, config = self.task, self.out, self.config
        plain = [r for r in rows if r["shuffle"] < 0]
        blocks = shuffle_blocks(out, self.main_shuffles, self.needed)
        shuffles = self._shuffles(lists, [r for r in rows if r["shuffle"] >= 0], blocks)
        variants = self._variants(plain, shuffles)
        for variant in variants.values():
            add_ndcg_at_10(variant.rows, task.qrels)
        table = _table(variants, config)
        facts = {
            "shuffle_stages": [".", *(shuffle_block_dir(out, *b).name for b in blocks)],
            "reranker": self.reranker.name,
            "task": task.name,
            "split": task.split,
            "k": config.k,
            "positions": list(config.positions),
            "shuffles": list(config.shuffles),
            **describe_lists(lists),
        }
        _write(out, table, variants, facts, config)
        return table

    def _shuffles(
        self,
        lists: list[QueryList],
        shuffle_rows: list[dict[str, Any]],
        blocks: list[tuple[int, int]],
    ) -> dict[str, list[dict[str, Any]]]:
        """Each query's shuffles 0 … needed−1 in order: the main stage's ``shuffle_rows`` and
        those of the shuffle ``blocks`` (reranked here when missing)."""
        needed = self.needed
        for start, stop in blocks:
            shuffle_rows += self._shuffle_block(lists, start, stop)
        shuffles: dict[str, list[dict[str, Any]]] = {}
        for row in sorted(
            (r for r in shuffle_rows if r["shuffle"] < needed), key=lambda r: r["shuffle"]
        ):
            shuffles.setdefault(str(row["query_id"]), []).append(row)
        for query_list in lists:  # every query has shuffles 0 … needed-1, each once
            got = [r["shuffle"] for r in shuffles.get(query_list.query_id, [])]
            if got != list(range(needed)):
                raise RuntimeError(
                    f"query {query_list.query_id}: shuffles {got}, not 0..{needed - 1}"
                )
        return shuffles

    def _shuffle_block(
        self, lists: Sequence[QueryList], start: int, stop: int
    ) -> list[dict[str, Any]]:
        """Rerank shuffles [start, stop) of every query (resumable, one query per shard), on
        the main stage's first-stage lists; the block pins the main stage's parameters and its
        range."""
        reranker, task, config = self.reranker, self.task, self.config
        query_ids = [q.query_id for q in lists]
        settings = {"shuffles": [start, stop]}
        params = experiment_params(
            reranker, task, config, query_ids, f"{EXPERIMENT}-shuffles", settings
        )
        return rerank_queries(
            reranker,
            task,
            lists,
            lambda query_list: shuffle_inputs(query_list, config.seed, range(start, stop)),
            shuffle_block_dir(self.out, start, stop),
            params,
            window=config.window,
            step=config.step,
            desc=f"{EXPERIMENT} shuffles {start}-{stop - 1}",
            show_progress=self.show_progress,
        )

    def _variants(
        self, plain: list[dict[str, Any]], shuffles: dict[str, list[dict[str, Any]]]
    ) -> dict[str, Variant]:
        """Every remedy's rows and cost: none, then each registered listwise remedy's
        (calibrated, PermSC, the checkpoints, then the plugins')."""
        none = Variant(
            plain,
            sum(int(r["windows"]) for r in plain),
            sum(float(r["seconds"]) for r in plain),
            per_ranking(plain),
            {},
        )
        variants = {NO_REMEDY: none}
        for entry in LISTWISE_REMEDY_REGISTRY.entries().values():
            variants.update(entry.value.variants(self, plain, shuffles, none))
        return variants


run_listwise_remedies = ListwiseRemedies.run
"""``run_listwise_remedies(reranker, task, out_dir, config, *, load_checkpoint=None,
show_progress=True)``: run every remedy (see the module docstring and
:class:`ListwiseRemedies`), write the outputs, return the rows."""


def shuffle_inputs(
    query_list: QueryList, seed: int, indices: Iterable[int]
) -> list[tuple[dict[str, Any], list[str]]]:
    """The PermSC shuffles ``indices`` of one query: ``shuffled(documents, seed, query, j)``.

    Every controlled list orders the same k documents, so a shuffle of them serves every
    position; shuffle j is the same list whichever stage (main or block) reranks it.

    Example:
        >>> q = QueryList("q", ["d1", "d2", "d3"], "d2", False)
        >>> [(tags["shuffle"], order) for tags, order in shuffle_inputs(q, 0, [1])] == [
        ...     (1, shuffle_list(["d2", "d1", "d3"], 0, "q", 1))]
        True
    """
    tags = {"position": 0, "relevant": query_list.relevant, "injected": query_list.injected}
    documents = controlled_list(query_list.candidates, query_list.relevant, 1)
    return [
        ({**tags, "shuffle": j}, shuffle_list(documents, seed, query_list.query_id, j))
        for j in indices
    ]


def shuffle_block_dir(out: Path, start: int, stop: int) -> Path:
    """The stage folder of shuffle indices [start, stop) (``OUT/shuffles-009-019``).

    Example:
        >>> shuffle_block_dir(Path("out"), 9, 19).as_posix()
        'out/shuffles-009-019'
    """
    return out / f"{SHUFFLE_BLOCK_PREFIX}{start:03d}-{stop:03d}"


def shuffle_blocks(out: Path, covered: int, needed: int) -> list[tuple[int, int]]:
    """The shuffle blocks ``[start, stop)`` that, after the main stage's ``covered`` shuffles,
    give shuffles up to ``needed``: blocks already in ``out`` first (the longest one that does
    not overshoot, else the shortest one), a new block for the rest.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> (folder / "shuffles-009-019").mkdir()
        >>> [shuffle_blocks(folder, 9, needed) for needed in (4, 25, 14)]
        [[], [(9, 19), (19, 25)], [(9, 19)]]
    """
    found: dict[int, list[int]] = {}
    for folder in out.glob(f"{SHUFFLE_BLOCK_PREFIX}*-*"):
        try:
            start, stop = (int(x) for x in folder.name[len(SHUFFLE_BLOCK_PREFIX) :].split("-"))
        except ValueError:
            continue
        if folder.is_dir() and stop > start:
            found.setdefault(start, []).append(stop)
    blocks = []
    while covered < needed:
        stops = found.get(covered, [])
        fitting = [s for s in stops if s <= needed]
        stop = max(fitting) if fitting else min(stops, default=needed)
        blocks.append((covered, stop))
        covered = stop
    return blocks


def _table(variants: dict[str, Variant], config: ListwiseRemediesConfig) -> list[dict[str, Any]]:
    from hf_posbias.listwise.experiments.compare import compare_rows
    from hf_posbias.listwise.experiments.controlled import positions_summary
    from hf_posbias.statistics.psi import harmonic_mean

    table = []
    for name, variant in variants.items():
        summary = positions_summary(variant.rows, config, name)
        curve = [r["ndcg_at_10"] for r in summary["positions"]]
        cmp = None
        if name != "none":
            cmp = compare_rows(
                variants["none"].rows,
                variant.rows,
                method=config.method,  # type: ignore[arg-type]
                n_resamples=config.n_resamples,
                seed=config.seed,
            )
        table.append(
            {
                "remedy": name,
                "mean": summary["mean"],
                "psi": summary["psi"],
                "harmonic_mean": float(harmonic_mean(curve)),
                "delta_mean": None if cmp is None else cmp.mean.delta,
                "p_value": None if cmp is None else cmp.mean.p_value,
                "windows": variant.windows,
                "seconds": round(variant.seconds, 3),
                "windows_per_ranking": variant.windows_per_ranking,
                "ndcg_by_position": curve,
                **variant.extra,
            }
        )
    return table


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """``remedies.md``: the headline columns of every remedy row (curves left out).

    Example:
        >>> print(markdown_table([{"remedy": "none", "mean": 0.5, "psi": 0.2,
        ...     "harmonic_mean": 0.4, "delta_mean": None, "p_value": None, "windows": 4,
        ...     "seconds": 1.0, "windows_per_ranking": 1.0}]).splitlines()[0])
        | remedy | mean | psi | harmonic_mean | delta_mean | p_value | windows | seconds | windows_per_ranking |
    """  # noqa: E501
    from hf_posbias.tables import as_table

    columns = (
        "remedy",
        "mean",
        "psi",
        "harmonic_mean",
        "delta_mean",
        "p_value",
        "windows",
        "seconds",
        "windows_per_ranking",
    )
    return as_table([{c: row.get(c) for c in columns} for row in rows]).to_markdown()


def _write(
    out: Path,
    table: list[dict[str, Any]],
    variants: dict[str, Variant],
    facts: dict[str, Any],
    config: ListwiseRemediesConfig,
) -> None:
    from hf_posbias.shards import write_json, write_text_atomic

    write_json(out / "remedies.json", table)
    write_json(out / "remedies_run.json", {**facts, "method": config.method, "seed": config.seed})
    write_text_atomic(out / "remedies.md", markdown_table(table) + "\n")
    per_query = [
        {
            "remedy": name,
            "query_id": r["query_id"],
            "position": r["position"],
            "ranking": r["ranking"],
            "ndcg_at_10": r["ndcg_at_10"],
        }
        for name, variant in variants.items()
        for r in variant.rows
    ]
    write_jsonl(out / "per_query.jsonl", per_query)
    if config.plot:
        from hf_posbias.evaluation.runs.remedy_table import plot_psi_against_cost

        plot_psi_against_cost(
            table,
            out / "remedies.png",
            f"{facts['reranker']} on {facts['task']}: k={facts['k']}, {facts['queries']} queries",
            cost="windows_per_ranking",
            cost_label="windows (forward passes) per ranked list",
        )
