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

from typing import Any

import numpy as np

from hf_posbias.listwise.experiments.aggregate import borda, kemeny_local_search
from hf_posbias.listwise.experiments.experiment_settings import ShuffleEvalConfig
from hf_posbias.listwise.experiments.lists import QueryList, describe_lists
from hf_posbias.listwise.experiments.lists import shuffled as shuffle_list
from hf_posbias.listwise.experiments.runs import (
    ListwiseExperiment,
    add_ndcg_at_10,
    fallback_stats,
    first_stage_ndcg,
    ndcg_at_10,
    write_jsonl,
)
from hf_posbias.shards import write_json


def variants_needed(config: ShuffleEvalConfig) -> int:
    """How many shuffles each query needs (for the mean and for aggregation)."""
    return max(config.shuffles, config.aggregate)


def _mean(values: dict[str, float]) -> float:
    return float(np.mean(list(values.values()))) if values else float("nan")


def paired_tests(
    variants: dict[str, dict[str, float]], config: ShuffleEvalConfig
) -> dict[str, dict[str, Any]]:
    """The paired tests between the variants' per-query nDCG@10 (``shuffle_eval.json``'s
    ``tests``): shuffled against original, and each aggregation against both."""
    from hf_posbias.statistics.uncertainty import paired_comparison

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
    return tests


class ShuffleEval(ListwiseExperiment[ShuffleEvalConfig, dict[str, Any]]):
    """Original vs shuffled order on the experiment runner; :func:`run_shuffle_eval` is its
    :meth:`~hf_posbias.listwise.experiments.runs.ListwiseExperiment.run`."""

    name = "shuffle-eval"

    def settings(self) -> dict[str, Any]:
        return {"variants": variants_needed(self.config)}

    def inputs(self, query_list: QueryList) -> list[tuple[dict[str, Any], list[str]]]:
        jobs = [({"shuffle": -1}, list(query_list.candidates))]
        for j in range(variants_needed(self.config)):
            order = shuffle_list(query_list.candidates, self.config.seed, query_list.query_id, j)
            jobs.append(({"shuffle": j}, order))
        return jobs

    def report(self, lists: list[QueryList], rows: list[dict[str, Any]]) -> dict[str, Any]:
        config, qrels, out = self.config, self.task.qrels, self.out
        query_ids = [x.query_id for x in lists]
        add_ndcg_at_10(rows, qrels)

        by_query: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_query.setdefault(str(row["query_id"]), []).append(row)
        first_stage_scores = first_stage_ndcg(lists, qrels)

        variants: dict[str, dict[str, float]] = {"original": {}, "shuffled": {}}
        if config.aggregate:
            variants.update({"borda": {}, "kemeny": {}})
        per_shuffle: list[dict[str, float]] = [{} for _ in range(config.shuffles)]
        aggregated_rows: list[dict[str, Any]] = []
        for qid, query_rows in by_query.items():
            original = next(r for r in query_rows if r["shuffle"] == -1)
            shuffles = sorted(
                (r for r in query_rows if r["shuffle"] >= 0), key=lambda r: r["shuffle"]
            )
            variants["original"][qid] = original["ndcg_at_10"]
            variants["shuffled"][qid] = float(
                np.mean([r["ndcg_at_10"] for r in shuffles[: config.shuffles]])
            )
            for j, r in enumerate(shuffles[: config.shuffles]):
                per_shuffle[j][qid] = r["ndcg_at_10"]
            if config.aggregate:
                pool = [r["ranking"] for r in shuffles[: config.aggregate]]
                for name, aggregate in (("borda", borda), ("kemeny", kemeny_local_search)):
                    aggregated_rows.append(
                        {"query_id": qid, "variant": name, "ranking": aggregate(pool)}
                    )
        for row, score in zip(aggregated_rows, ndcg_at_10(aggregated_rows, qrels)):
            variants[row["variant"]][row["query_id"]] = score

        tests = paired_tests(variants, config)
        payload = {
            "k": config.k,
            **self.facts(),
            "shuffles": config.shuffles,
            "aggregate": config.aggregate,
            "ndcg_at_10": {
                "first_stage": _mean(first_stage_scores),
                **{name: _mean(scores) for name, scores in variants.items()},
            },
            "per_shuffle_ndcg_at_10": [_mean(s) for s in per_shuffle],
            "tests": tests,
            "fallback": fallback_stats(rows).to_dict(),
            **describe_lists(lists),
            "seconds_this_run": self.seconds_this_run(),
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


run_shuffle_eval = ShuffleEval.run
"""``run_shuffle_eval(reranker, task, out_dir, config, *, show_progress=True)``: run the
comparison, write the outputs, return the ``shuffle_eval.json`` payload."""
