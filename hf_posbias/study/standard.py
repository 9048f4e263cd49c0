"""YHP26's Table 4 view: nDCG@10 on the standard retrieval tasks per base × configuration.

Does a training configuration cost quality on the natural distribution? For every standard task
of a study (a one-bucket task: ``posbias benchmark beir|msmarco|trec-dl`` or a plain BEIR/MS MARCO
folder, listed under the spec's ``standard:`` or ``tasks:``), ``report.json`` key ``standard``
holds:

- ``rows``: nDCG@10 of each (task, base, configuration) with its 95% percentile bootstrap
  interval (queries resampled);
- ``average_over_bases``: per (task, configuration) the average over the bases, its interval
  from the same resampling of the queries every base shares, and the number of bases; the task
  ``average`` averages the standard tasks (YHP26: "BEIR average nDCG@10 over 8 models");
- ``vs_base``: each configuration against the untrained base of the same model on the same
  queries, the paired difference with its interval and p-value.

Example:
    >>> per_query = {("T", "m", None): {"base": {"all": {"q1": 0.5, "q2": 1.0}},
    ...                                   "uniform": {"all": {"q1": 1.0, "q2": 1.0}}}}
    >>> view = standard_view(per_query, n_resamples=50, seed=0)
    >>> [(r["config"], r["ndcg_at_10"]) for r in view["rows"]]
    [('base', 0.75), ('uniform', 1.0)]
    >>> view["vs_base"][0]["delta"]
    0.25
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PerQuery = Mapping[str, Mapping[str, float]]
"""``{bucket: {query_id: nDCG@10}}`` of one evaluation (one bucket, ``all``, for a standard
task)."""
Key = tuple[str, str, "str | None"]
"""``(task, model, pooling)``."""
BASE = "base"


def _flat(scores: PerQuery) -> dict[str, float]:
    return {q: v for per in scores.values() for q, v in per.items()}


def _mean_ci(values: Mapping[str, float], n_resamples: int, seed: int) -> tuple[float, list]:
    from hf_posbias.statistics.uncertainty import bootstrap_positions

    ci = bootstrap_positions({"all": dict(values)}, n_resamples=n_resamples, seed=seed).mean
    return ci.estimate, [ci.low, ci.high]


def _row_label(model: str, pooling: str | None) -> str:
    return model if not pooling else f"{model} · {pooling}"


def standard_view(
    per_query: Mapping[Key, Mapping[str, PerQuery]], *, n_resamples: int, seed: int
) -> dict[str, list[dict[str, Any]]]:
    """The Table 4 view of the standard tasks' per-query scores (see the module docstring);
    ``per_query``: ``{(task, model, pooling): {configuration: {bucket: {query: nDCG@10}}}}``."""
    from hf_posbias.statistics.uncertainty import paired_comparison

    rows: list[dict[str, Any]] = []
    vs_base: list[dict[str, Any]] = []
    by_task_config: dict[tuple[str, str], list[dict[str, float]]] = {}
    for (task, model, pooling), configs in per_query.items():
        for config, scores in configs.items():
            flat = _flat(scores)
            estimate, ci = _mean_ci(flat, n_resamples, seed)
            rows.append({"task": task, "model": _row_label(model, pooling), "config": config,
                         "ndcg_at_10": estimate, "ci": ci, "n_queries": len(flat)})  # fmt: skip
            by_task_config.setdefault((task, config), []).append(flat)
            if config == BASE or BASE not in configs:
                continue
            diff = paired_comparison(
                {"all": _flat(configs[BASE])}, {"all": flat}, n_resamples=n_resamples, seed=seed
            ).mean
            vs_base.append({"task": task, "model": _row_label(model, pooling), "config": config,
                            "delta": diff.delta, "ci": [diff.low, diff.high],
                            "p_value": diff.p_value})  # fmt: skip
    averages = []
    for (task, config), per_base in by_task_config.items():
        shared = set.intersection(*(set(p) for p in per_base))
        joint = {q: sum(p[q] for p in per_base) / len(per_base) for q in shared}
        estimate, ci = _mean_ci(joint, n_resamples, seed) if joint else (None, None)
        averages.append({"task": task, "config": config, "ndcg_at_10": estimate, "ci": ci,
                         "n_bases": len(per_base), "n_queries": len(shared)})  # fmt: skip
    tasks = list(dict.fromkeys(t for t, _ in by_task_config))
    if len(tasks) > 1:
        for config in dict.fromkeys(c for _, c in by_task_config):
            values = [a["ndcg_at_10"] for a in averages if a["config"] == config]
            if len(values) == len(tasks) and None not in values:
                averages.append({"task": "average", "config": config,
                                 "ndcg_at_10": sum(values) / len(values), "ci": None,
                                 "n_bases": None, "n_queries": None})  # fmt: skip
    return {"rows": rows, "average_over_bases": averages, "vs_base": vs_base}


def standard_markdown(
    view: Mapping[str, Sequence[Mapping[str, Any]]], configs: Sequence[str]
) -> str:
    """The Table 4 section of ``report.md``: per standard task a row per base and the average
    over bases, a column per configuration; then each configuration against the base."""
    from hf_posbias.evaluation.reports.report import with_interval
    from hf_posbias.tables import as_table

    def cell(entry: Mapping[str, Any] | None) -> str:
        if entry is None or entry["ndcg_at_10"] is None:
            return "—"
        ci = entry.get("ci")
        return with_interval(entry["ndcg_at_10"], tuple(ci) if ci else None)

    parts = [
        "## Table 4: standard retrieval, nDCG@10 per base × configuration",
        "",
        "Brackets: 95% percentile bootstrap intervals over queries; the average over bases is "
        "resampled on the queries every base shares.",
    ]
    rows, averages = view["rows"], view["average_over_bases"]
    for task in dict.fromkeys([*(r["task"] for r in rows), *(a["task"] for a in averages)]):
        table = []
        for model in dict.fromkeys(r["model"] for r in rows if r["task"] == task):
            found = {r["config"]: r for r in rows if r["task"] == task and r["model"] == model}
            table.append({"model": model, **{c: cell(found.get(c)) for c in configs}})
        mean = {a["config"]: a for a in averages if a["task"] == task}
        table.append({"model": "average over bases", **{c: cell(mean.get(c)) for c in configs}})
        parts += ["", f"### Table 4: {task}", "", as_table(table).to_markdown()]
    if view["vs_base"]:
        table = [
            {"task": r["task"], "model": r["model"], "config": r["config"],
             "Δ nDCG@10 vs base": with_interval(r["delta"], tuple(r["ci"])),
             "p": f"{r['p_value']:.4f}"}
            for r in view["vs_base"]
        ]  # fmt: skip
        parts += ["", "Each configuration against the untrained base (paired, same queries):"]
        parts += ["", as_table(table).to_markdown()]
    return "\n".join(parts)
