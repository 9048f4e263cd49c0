"""The controlled input-position test (Q26 RQ1): the relevant passage at each input slot 1…k.

Per judged query: the first-stage top-k (a relevant document missing from it replaces the
k-th); for each position p, the relevant passage at input position p and the other k−1 in
first-stage order; rerank; nDCG@10 against the qrels. Every query is scored at every position,
so the per-position confidence intervals come from a *paired* bootstrap over queries
(:func:`hf_posbias.statistics.uncertainty.bootstrap_positions`), and PSI is the
project's one
formula (:func:`hf_posbias.statistics.psi.psi`). Writes

- ``positions.json`` — ``{"k", "reranker", "positions": [{"position", "ndcg_at_10", "ci_low",
  "ci_high", "n_queries"}, …], "psi", "fallback_rate", …}``;
- ``per_query.jsonl`` — one row per (query, position): ``query_id``, ``position``, ``input``,
  ``ranking``, ``scores`` (ranking order), ``ndcg_at_10`` and the window counts;
- ``positions.png`` — nDCG@10 against input position with the CI band.

:func:`summarize_positions_rows` recomputes the table from the per-query rows, so
``per_query.jsonl`` reproduces ``positions.json`` exactly.

Example:
    >>> ControlledTestConfig(k=20, positions="20,1,5").positions  # checked when made
    [1, 5, 20]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.experiment_settings import ControlledTestConfig
from hf_posbias.listwise.experiments.lists import QueryList, controlled_list, describe_lists
from hf_posbias.listwise.experiments.runs import (
    ListwiseExperiment,
    add_ndcg_at_10,
    fallback_stats,
    write_jsonl,
)
from hf_posbias.shards import write_json

CALIBRATED_FACTS = (
    "task",
    "task_source",
    "split",
    "first_stage",
    "queries",
    "relevant_injected",
    "seed",
)
"""What the calibrated curve's ``positions.json`` copies from the plain run's."""


def summarize_positions_rows(
    rows: Sequence[dict[str, Any]],
    *,
    k: int,
    reranker: str,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The positions table (means, paired-bootstrap CIs, PSI, fallback rate) of per-query rows.

    Rows need ``query_id``, ``position``, ``ndcg_at_10`` and the window counts.
    """
    from hf_posbias.statistics.psi import defined_psi
    from hf_posbias.statistics.uncertainty import bootstrap_positions

    per_position: dict[int, dict[str, float]] = {}
    for row in rows:
        per_position.setdefault(int(row["position"]), {})[str(row["query_id"])] = float(
            row["ndcg_at_10"]
        )
    if not per_position:
        raise InputError("no scored (query, position) rows to summarise")
    positions = sorted(per_position)
    intervals = bootstrap_positions(
        {str(p): per_position[p] for p in positions},
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        paired=True,
    )
    means = [intervals.buckets[str(p)].estimate for p in positions]
    fallback = fallback_stats(rows)
    return {
        "k": k,
        "reranker": reranker,
        "positions": [
            {
                "position": p,
                "ndcg_at_10": intervals.buckets[str(p)].estimate,
                "ci_low": intervals.buckets[str(p)].low,
                "ci_high": intervals.buckets[str(p)].high,
                "n_queries": intervals.n_queries[str(p)],
            }
            for p in positions
        ],
        "mean": intervals.mean.estimate,
        "mean_ci": [intervals.mean.low, intervals.mean.high],
        "psi": defined_psi(means),
        "psi_ci": [intervals.psi.low, intervals.psi.high] if intervals.psi else None,
        "fallback_rate": fallback.rate,
        "fallback": fallback.to_dict(),
        "bootstrap": {
            "n_resamples": n_resamples,
            "confidence": confidence,
            "seed": seed,
            "paired": True,
        },
    }


def positions_summary(
    rows: Sequence[dict[str, Any]], config: ControlledTestConfig, reranker: str
) -> dict[str, Any]:
    """:func:`summarize_positions_rows` with ``config``'s k and bootstrap settings."""
    return summarize_positions_rows(
        rows,
        k=config.k,
        reranker=reranker,
        n_resamples=config.n_resamples,
        confidence=config.confidence,
        seed=config.seed,
    )


class ControlledTest(ListwiseExperiment[ControlledTestConfig, dict[str, Any]]):
    """The controlled test on the experiment runner; :func:`run_controlled_test` is its
    :meth:`~hf_posbias.listwise.experiments.runs.ListwiseExperiment.run`, which writes the three
    outputs and returns the ``positions.json`` payload."""

    name = "controlled-test"

    def check(self) -> None:
        if self.config.calibrate:
            from hf_posbias.listwise.experiments.calibration import check_calibratable

            check_calibratable(self.reranker)  # before any window is scored

    def settings(self) -> dict[str, Any]:
        return {"positions": list(self.config.positions)}  # parsed and checked by the settings

    def inputs(self, query_list: QueryList) -> list[tuple[dict[str, Any], list[str]]]:
        return [
            (
                {"position": p, "relevant": query_list.relevant, "injected": query_list.injected},
                controlled_list(query_list.candidates, query_list.relevant, p),
            )
            for p in self.config.positions
        ]

    def report(self, lists: list[QueryList], rows: list[dict[str, Any]]) -> dict[str, Any]:
        add_ndcg_at_10(rows, self.task.qrels)
        summary = positions_summary(rows, self.config, self.reranker.name)
        summary.update(
            {
                **self.facts(),
                "task_source": self.task.source,
                **describe_lists(lists),
                "seconds_this_run": self.seconds_this_run(),
            }
        )
        if self.config.calibrate:
            summary["calibrated"] = self._write_calibrated(rows, summary)
        write_jsonl(self.out / "per_query.jsonl", rows)
        write_json(self.out / "positions.json", summary)
        _plot(summary, self.out / "positions.png")
        return summary

    def _write_calibrated(
        self, rows: list[dict[str, Any]], plain: dict[str, Any]
    ) -> dict[str, Any]:
        """The slot-calibrated curve from the recorded scores → ``out/calibrated/`` (a test
        folder of its own: ``listwise compare-tests OUT OUT/calibrated`` works); returns its
        headline."""
        from hf_posbias.listwise.experiments.calibration import (
            CALIBRATION_FILE,
            calibrated_rows,
            estimate_slot_priors,
        )

        calibration = estimate_slot_priors(self.reranker, {len(r["input"]) for r in rows}, self.out)
        cal_rows = calibrated_rows(rows, calibration["priors"])
        add_ndcg_at_10(cal_rows, self.task.qrels)
        summary = positions_summary(cal_rows, self.config, f"{self.reranker.name} (calibrated)")
        summary.update({key: plain[key] for key in CALIBRATED_FACTS})
        summary["calibration"] = {
            "file": f"../{CALIBRATION_FILE}",
            "windows": calibration["windows"],
            "seconds": calibration["seconds"],
            "priors": {str(k): v for k, v in calibration["priors"].items()},
        }
        folder = self.out / "calibrated"
        folder.mkdir(parents=True, exist_ok=True)
        write_jsonl(folder / "per_query.jsonl", cal_rows)
        write_json(folder / "positions.json", summary)
        _plot(summary, folder / "positions.png")
        return {
            "folder": "calibrated",
            "mean": summary["mean"],
            "psi": summary["psi"],
            "extra_windows": calibration["windows"],
        }


run_controlled_test = ControlledTest.run
"""``run_controlled_test(reranker, task, out_dir, config, *, show_progress=True)``: run the test,
write the three outputs, return the ``positions.json`` payload (resumable: finished queries are
kept in ``out_dir/shards/`` and skipped on a rerun)."""


def _plot(summary: dict[str, Any], path: Path) -> None:
    from hf_posbias.figures import save_figure
    from hf_posbias.listwise.experiments.plots import positions_figure

    table = summary["positions"]
    psi_text = f"PSI {summary['psi']:.3f}" if summary["psi"] is not None else "PSI undefined"
    fig = positions_figure(
        [r["position"] for r in table],
        [r["ndcg_at_10"] for r in table],
        [r["ci_low"] for r in table],
        [r["ci_high"] for r in table],
        f"{summary['reranker']} on {summary.get('task', '')}\n"
        f"k={summary['k']}, {table[0]['n_queries']} queries, {psi_text}",
        band_label=f"{summary['bootstrap']['confidence']:.0%} CI (paired bootstrap)",
    )
    save_figure(fig, path)
