"""Original vs shuffled input order (Q26 RQ2), with PermSC-style aggregation (RQ4).

Per judged query: rerank the first-stage top-k in first-stage order, and m seeded Fisher–Yates
shuffles of it; nDCG@10 of the original-order ranking against the mean over the shuffles, with
the evaluation side's paired test
(:func:`hf_posbias.statistics.uncertainty.paired_comparison`;
Δ = shuffled − original). With ``aggregate`` = m' the rankings of the first m' shuffles are also
aggregated by Borda and by Kemeny local search (:mod:`~hf_posbias.listwise.experiments.aggregate`)
— the
inference-stage answer to input-order bias, reported beside the reranker's own result. The
first-stage order itself (no reranking) is scored as the reference.

Writes ``shuffle_eval.json`` (means, per-shuffle means, paired tests), ``per_query.jsonl``
(one row per query: every variant's nDCG@10) and ``rankings.jsonl`` (every reranked list).

Example:
    >>> variants_needed(ShuffleEvalConfig(shuffles=5, aggregate=10))
    10
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from hf_posbias.listwise.experiments.aggregate import borda, kemeny_local_search
from hf_posbias.listwise.experiments.lists import QueryList, describe_lists
from hf_posbias.listwise.experiments.lists import shuffled as shuffle_list
from hf_posbias.listwise.experiments.runs import (
    fallback_stats,
    ndcg_at_10,
    run_experiment,
    write_jsonl,
)
from hf_posbias.listwise.experiments.taskio import RerankTask
from hf_posbias.listwise.settings import ShuffleEvalConfig
from hf_posbias.rerankers.base import ListwiseReranker
from hf_posbias.shards import write_json


def variants_needed(config: ShuffleEvalConfig) -> int:
    """How many shuffles each query needs (for the mean and for aggregation)."""
    return max(config.shuffles, config.aggregate)


def _mean(values: dict[str, float]) -> float:
    return float(np.mean(list(values.values()))) if values else float("nan")


def run_shuffle_eval(
    reranker: ListwiseReranker,
    task: RerankTask,
    out_dir: str | Path,
    config: ShuffleEvalConfig,
    *,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Run the comparison, write the outputs, return the ``shuffle_eval.json`` payload."""
    from hf_posbias.statistics.uncertainty import paired_comparison

    out = Path(out_dir)
    started = time.perf_counter()
    n_variants = variants_needed(config)

    def inputs(query_list: QueryList) -> list[tuple[dict[str, Any], list[str]]]:
        jobs = [({"shuffle": -1}, list(query_list.candidates))]
        for j in range(n_variants):
            order = shuffle_list(query_list.candidates, config.seed, query_list.query_id, j)
            jobs.append(({"shuffle": j}, order))
        return jobs

    lists, rows = run_experiment(
        reranker,
        task,
        out,
        inputs,
        config,
        experiment="shuffle-eval",
        settings={"variants": n_variants},
        show_progress=show_progress,
    )
    query_ids = [x.query_id for x in lists]
    for row, score in zip(rows, ndcg_at_10(rows, task.qrels)):
        row["ndcg_at_10"] = score

    by_query: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_query.setdefault(str(row["query_id"]), []).append(row)
    first_stage_rows = [{"query_id": x.query_id, "ranking": x.candidates} for x in lists]
    first_stage_scores = dict(zip(query_ids, ndcg_at_10(first_stage_rows, task.qrels)))

    variants: dict[str, dict[str, float]] = {"original": {}, "shuffled": {}}
    if config.aggregate:
        variants.update({"borda": {}, "kemeny": {}})
    per_shuffle: list[dict[str, float]] = [{} for _ in range(config.shuffles)]
    aggregated_rows: list[dict[str, Any]] = []
    for qid, query_rows in by_query.items():
        original = next(r for r in query_rows if r["shuffle"] == -1)
        shuffles = sorted((r for r in query_rows if r["shuffle"] >= 0), key=lambda r: r["shuffle"])
        variants["original"][qid] = original["ndcg_at_10"]
        variants["shuffled"][qid] = float(
            np.mean([r["ndcg_at_10"] for r in shuffles[: config.shuffles]])
        )
        for j, r in enumerate(shuffles[: config.shuffles]):
            per_shuffle[j][qid] = r["ndcg_at_10"]
        if config.aggregate:
            pool = [r["ranking"] for r in shuffles[: config.aggregate]]
            for name, ranking in (("borda", borda(pool)), ("kemeny", kemeny_local_search(pool))):
                aggregated_rows.append({"query_id": qid, "variant": name, "ranking": ranking})
    for row, score in zip(aggregated_rows, ndcg_at_10(aggregated_rows, task.qrels)):
        variants[row["variant"]][row["query_id"]] = score

    def test(a: str, b: str) -> dict[str, Any]:
        cmp = paired_comparison(
            {"all": variants[a]},
            {"all": variants[b]},
            method=config.method,  # type: ignore[arg-type]
            n_resamples=config.n_resamples,
            confidence=config.confidence,
            seed=config.seed,
        )
        diff = cmp.buckets["all"]
        return {
            "a": a,
            "b": b,
            "delta": diff.delta,
            "ci_low": diff.low,
            "ci_high": diff.high,
            "p_value": diff.p_value,
            "method": cmp.method,
            "n_queries": cmp.n_shared["all"],
        }

    tests = {"shuffled_vs_original": test("original", "shuffled")}
    if config.aggregate:
        for name in ("borda", "kemeny"):
            tests[f"{name}_vs_shuffled"] = test("shuffled", name)
            tests[f"{name}_vs_original"] = test("original", name)
    payload = {
        "k": config.k,
        "reranker": reranker.name,
        "reranker_details": reranker.describe(),
        "task": task.name,
        "split": task.split,
        "first_stage": config.first_stage,
        "shuffles": config.shuffles,
        "aggregate": config.aggregate,
        "seed": config.seed,
        "ndcg_at_10": {
            "first_stage": _mean(first_stage_scores),
            **{name: _mean(scores) for name, scores in variants.items()},
        },
        "per_shuffle_ndcg_at_10": [_mean(s) for s in per_shuffle],
        "tests": tests,
        "fallback": fallback_stats(rows).to_dict(),
        **describe_lists(lists),
        "seconds_this_run": round(time.perf_counter() - started, 3),
    }
    per_query = [
        {
            "query_id": qid,
            "first_stage": first_stage_scores[qid],
            **{name: scores[qid] for name, scores in variants.items()},
        }
        for qid in query_ids
    ]
    write_jsonl(out / "rankings.jsonl", rows + aggregated_rows)
    write_jsonl(out / "per_query.jsonl", per_query)
    write_json(out / "shuffle_eval.json", payload)
    return payload
