"""YHP26's Table 4 and Table 14: nDCG@10 on the standard retrieval tasks per base × configuration.

Does a training configuration cost quality on the natural distribution? For every standard task
of a study (a one-bucket task: ``posbias benchmark build beir|msmarco|trec-dl`` or a plain
BEIR/MS MARCO folder, listed under the spec's ``standard:`` or ``tasks:``), ``report.json`` key
``standard`` holds:

- ``rows``: nDCG@10 of each (task, base, configuration) with its 95% percentile bootstrap
  interval (queries resampled);
- ``average_over_bases``: per (task, configuration) the average over the bases, its interval
  from the same resampling of the queries every base shares, and the number of bases; the task
  ``average`` averages the standard tasks (YHP26 Table 4: a row per BEIR set and their average,
  a column per configuration, each cell the average over the eight bases);
- ``average_over_tasks``: per (base, configuration) the plain mean of that base's nDCG@10 over
  the standard tasks (YHP26 Table 14's ``Average`` row of each base's block);
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
    >>> [(a["model"], a["config"], a["ndcg_at_10"]) for a in view["average_over_tasks"]]
    [('m', 'base', 0.75), ('m', 'uniform', 1.0)]
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
    per_model: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        per_model.setdefault((r["model"], r["config"]), []).append(r["ndcg_at_10"])
    over_tasks = [
        {"model": model, "config": config, "ndcg_at_10": sum(values) / len(values),
         "n_tasks": len(values)}
        for (model, config), values in per_model.items()
    ]  # fmt: skip
    if len(tasks) > 1:
        for config in dict.fromkeys(c for _, c in by_task_config):
            values = [a["ndcg_at_10"] for a in averages if a["config"] == config]
            if len(values) == len(tasks) and None not in values:
                averages.append({"task": "average", "config": config,
                                 "ndcg_at_10": sum(values) / len(values), "ci": None,
                                 "n_bases": None, "n_queries": None})  # fmt: skip
    return {
        "rows": rows,
        "average_over_bases": averages,
        "average_over_tasks": over_tasks,
        "vs_base": vs_base,
    }


def standard_markdown(
    view: Mapping[str, Sequence[Mapping[str, Any]]], configs: Sequence[str]
) -> str:
    """The Table 4 and Table 14 sections of ``report.md`` in YHP26's layout: Table 4 a row per
    standard task and their average, a column per configuration, each cell averaged over the
    bases; Table 14 the same per base (its ``Average`` row: the mean over the tasks); then each
    configuration against the base.

    Example:
        >>> per_query = {("T", "m", None): {"base": {"all": {"q1": 0.5, "q2": 1.0}},
        ...                                   "uniform": {"all": {"q1": 1.0, "q2": 1.0}}}}
        >>> text = standard_markdown(standard_view(per_query, n_resamples=20, seed=0),
        ...                          ["uniform", "base"])
        >>> print("\\n".join(line for line in text.splitlines() if line.startswith(("#", "| T"))))
        ## Table 4: standard retrieval, nDCG@10 averaged over the 1 base(s)
        | T | 1.0000 [1.000, 1.000] | 0.7500 [0.500, 1.000] |
        ## Table 14: standard retrieval, nDCG@10 per base
        ### m
        | T | 1.0000 [1.000, 1.000] | 0.7500 [0.500, 1.000] |
        | T | m | uniform | 0.2500 [0.000, 0.500] | 0.5714 |
    """
    from hf_posbias.evaluation.reports.report import with_interval
    from hf_posbias.tables import as_table

    def cell(entry: Mapping[str, Any] | None) -> str:
        if entry is None or entry["ndcg_at_10"] is None:
            return "—"
        ci = entry.get("ci")
        return with_interval(entry["ndcg_at_10"], tuple(ci) if ci else None)

    rows, averages = view["rows"], view["average_over_bases"]
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    n_bases = len({r["model"] for r in rows})
    table4 = []
    for task in [*tasks, "average"]:
        found = {a["config"]: a for a in averages if a["task"] == task}
        if found:
            table4.append({"standard task": task, **{c: cell(found.get(c)) for c in configs}})
    parts = [
        f"## Table 4: standard retrieval, nDCG@10 averaged over the {n_bases} base(s)",
        "",
        "A row per standard task and their average, a column per configuration (YHP26's "
        "layout). Brackets: 95% percentile bootstrap intervals over the queries every base "
        "shares.",
        "",
        as_table(table4).to_markdown(),
        "",
        "## Table 14: standard retrieval, nDCG@10 per base",
    ]
    over_tasks = view.get("average_over_tasks", [])
    for model in dict.fromkeys(r["model"] for r in rows):
        block = []
        for task in tasks:
            found = {r["config"]: r for r in rows if r["task"] == task and r["model"] == model}
            block.append({"standard task": task, **{c: cell(found.get(c)) for c in configs}})
        mean = {a["config"]: a for a in over_tasks if a["model"] == model}
        if len(tasks) > 1:
            block.append({"standard task": "average", **{c: cell(mean.get(c)) for c in configs}})
        parts += ["", f"### {model}", "", as_table(block).to_markdown()]
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
