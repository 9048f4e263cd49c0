"""The study report: YHP26's Table 3 per task, PSI reductions, the direction check, curves.

One implementation for ``posbias study report DIR`` (a study folder) and ``posbias study report
RUN … --out OUT`` (any ``posbias evaluate`` run folders; each model's base and configuration are
read from its checkpoint's card facts, an untrained model is the ``base``). Every number is
recomputed from the per-query tables (``per_query/<task>.parquet``) with
:mod:`hf_posbias.statistics.uncertainty`:

- a **cell** per (task, model, configuration[, pooling]): nDCG@10 per position, their mean and
  PSI, each with its percentile bootstrap interval (queries resampled within positions);
- a **PSI reduction** per (task, model[, pooling]):
  ``1 − PSI(uniform) / max(PSI(begin), PSI(middle), PSI(end))`` with a joint bootstrap interval
  and a p-value (H0: no reduction) on the queries all four runs share;
- the **direction check**: does each skewed configuration raise the score of its own position
  against the untrained base (paired bootstrap test on that position's queries);
- with inference-time remedies (the study's ``remedies``, or ``posbias evaluate --remedy`` runs
  in ``posbias study report RUN …``), a **row per remedy** (configuration ``base +<remedy>``,
  placed after the base) and its paired Δ mean nDCG@10 and Δ PSI against the base on the same
  queries; remedy rows are no training configuration (no PSI reduction, no direction check);
- per task a table with a row per base (per base · pooling in a pooling study) and a column per
  configuration plus the base (mean nDCG@10 and PSI), the average over tasks, and a grid of
  per-position curves in both orientations (a panel per configuration and a line per base, as
  YHP26 draws them, and the transpose);
- with the spec's ``analyses``, their tables and figures (:mod:`hf_posbias.study.analyses`,
  ``report.json`` key ``analyses``).

Files: ``report.md``, ``report.csv`` (one row per cell and position), ``curves-<task>.png``, and
``report.json`` = ``{"cells": [{task, model, config, pooling, per_position, mean, psi, ci,
n_queries, per_query}, …], "psi_reductions": [{task, model, pooling, psi_reduction, ci,
p_value, worst}, …], "direction": […], "remedies": [{task, model, pooling, config, remedy,
delta_mean, ci, p_value, delta_psi, psi_ci, psi_p_value}, …], "averages": […]}``.

Example:
    >>> psi_reduction({"uniform": 0.1, "begin": 0.4, "middle": 0.2, "end": 0.3})
    (0.75, 'begin')
"""

from __future__ import annotations

import csv
import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.jsonable import JsonRecord
from hf_posbias.rows.readers import read_json
from hf_posbias.settings import Settings, setting, shared_setting
from hf_posbias.shards import atomic_path, write_text_atomic
from hf_posbias.study.report_sources import (
    BASE,
    SKEWED,
    UNIFORM,
    Cell,
    Source,
    _keys,
    _row_label,
    _scores,
    compute_cell,
    single_pooling,
    study_sources,
)
from hf_posbias.tasks.taskdata import PLAIN_BUCKET

REPORT_DIRNAME = "report"


@dataclass(kw_only=True)
class ReportOptions(Settings):
    """What the report over run folders takes beside them (a study folder's report takes its
    spec's)."""

    bootstrap: int = shared_setting("bootstrap", default=1000)
    seed: int = shared_setting("seed")
    title: str = shared_setting("title", default="Position bias report")


@dataclass(kw_only=True)
class ReportSettings(ReportOptions):
    """``posbias study report RUN … --out OUT``: the study report over any `posbias evaluate`
    run folders."""

    runs: list[str] = setting("`posbias evaluate` run folders (one model each)", positional=True)
    out: str = shared_setting("out")


@dataclass(kw_only=True)
class StudyReportSettings(ReportOptions):
    """``posbias study report``: the report of one study folder (into ``FOLDER/report/``), or,
    with ``--out``, the same report over any `posbias evaluate` run folders (issue 40: one verb
    for the one job; ``study report-runs`` was the second).

    Example:
        >>> StudyReportSettings(folder="yhp26").runs_report() is None
        True
        >>> StudyReportSettings(folder=["a", "b"], out="r").runs_report().runs
        ['a', 'b']
        >>> StudyReportSettings(folder=["a", "b"])
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: give one study folder, or run folders with --out
    """

    folder: list[str] = setting(
        "a study folder of `posbias study run`, or with --out `posbias evaluate` run folders "
        "(one model each)",
        positional=True,
        metavar="FOLDER",
    )
    out: str | None = shared_setting("out", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.folder, str):
            self.folder = [self.folder]
        if self.out is not None:
            return
        if len(self.folder) != 1:
            raise InputError("give one study folder, or run folders with --out")
        defaults = ReportOptions()
        if (self.bootstrap, self.seed, self.title) != (
            defaults.bootstrap,
            defaults.seed,
            defaults.title,
        ):
            raise InputError(
                "--bootstrap, --seed and --title are for run folders (with --out): a study "
                "folder's report takes its spec's"
            )

    def runs_report(self) -> ReportSettings | None:
        """The report over run folders these settings ask for (``--out`` given), else ``None``
        (the report of the study folder ``folder[0]``)."""
        if self.out is None:
            return None
        return ReportSettings(
            runs=list(self.folder),
            out=self.out,
            bootstrap=self.bootstrap,
            seed=self.seed,
            title=self.title,
        )


@dataclass
class StudyReport(JsonRecord):
    """Everything ``report.json`` holds."""

    cells: list[Cell]
    psi_reductions: list[dict[str, Any]] = field(default_factory=list)
    direction: list[dict[str, Any]] = field(default_factory=list)
    remedies: list[dict[str, Any]] = field(default_factory=list)
    averages: list[dict[str, Any]] = field(default_factory=list)
    bootstrap: int = 1000
    seed: int = 0
    standard: dict[str, Any] = field(default_factory=dict)
    """YHP26's Table 4 view of the standard tasks (:func:`hf_posbias.study.standard.standard_view`:
    ``rows``, ``average_over_bases``, ``vs_base``); empty without standard tasks."""


def psi_reduction(psi: Mapping[str, float | None]) -> tuple[float | None, str | None]:
    """``1 − PSI(uniform) / max(skewed PSI)`` and the worst skewed configuration."""
    skewed = {c: psi[c] for c in SKEWED if psi.get(c) is not None}
    if psi.get(UNIFORM) is None or not skewed:
        return None, None
    worst = max(skewed, key=lambda c: skewed[c])  # type: ignore[arg-type,return-value]
    top = skewed[worst]
    if not top:
        return None, worst
    return 1.0 - float(psi[UNIFORM]) / float(top), worst  # type: ignore[arg-type]


def _groups(sources: Sequence[Source]) -> dict[tuple[str, str, str | None], dict[str, Source]]:
    groups: dict[tuple[str, str, str | None], dict[str, Source]] = {}
    for s in sources:
        configs = groups.setdefault((s.task, s.model, s.pooling), {})
        if s.config in configs:
            raise InputError(
                f"two runs of {s.model} ({s.config}) on {s.task}: report each model once"
            )
        configs[s.config] = s
    return groups


def _reduction_statistic(n_skewed: int) -> Any:
    import numpy as np

    from hf_posbias.statistics.psi import psi_columns

    def statistic(means: list[Any]) -> Any:
        skewed = np.vstack([psi_columns(m) for m in means[:n_skewed]])
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 - psi_columns(means[n_skewed]) / skewed.max(axis=0)

    return statistic


def reductions(
    sources: Sequence[Source], cells: Sequence[Cell], n_resamples: int, seed: int
) -> list[dict[str, Any]]:
    """PSI reduction of uniform against the worst skewed configuration, per task and model."""
    from hf_posbias.statistics.uncertainty import bootstrap_statistic

    psi = {(c.task, c.model, c.pooling, c.config): c.psi for c in cells}
    out = []
    for (task, model, pooling), configs in _groups(sources).items():
        skewed = [c for c in SKEWED if c in configs]
        if UNIFORM not in configs or not skewed:
            continue
        value, worst = psi_reduction({c: psi[(task, model, pooling, c)] for c in configs})
        if value is None:
            continue
        runs = [_scores(configs[c]) for c in (*skewed, UNIFORM)]
        joint = bootstrap_statistic(
            runs, _reduction_statistic(len(skewed)), n_resamples=n_resamples, seed=seed
        )
        out.append(
            {
                "task": task,
                "model": model,
                "pooling": pooling,
                "psi_reduction": joint.delta,
                "ci": [joint.low, joint.high],
                "p_value": joint.p_value,
                "worst": worst,
            }
        )
    return out


def direction_checks(sources: Sequence[Source], n_resamples: int, seed: int) -> list[dict]:
    """Does each skewed configuration raise its own region against the untrained base (paired
    bootstrap test on that region's queries), and where does its curve peak? Any bucket scheme:
    the region is :func:`hf_posbias.study.direction.own_region` of the task's buckets."""
    from hf_posbias.evaluation.compare import ALPHA
    from hf_posbias.statistics.uncertainty import paired_comparison
    from hf_posbias.study.direction import own_region, pooled, region_of

    out = []
    for (task, model, pooling), configs in _groups(sources).items():
        if BASE not in configs:
            continue
        base_scores = _scores(configs[BASE])
        buckets = [b for b in configs[BASE].summary.buckets if base_scores.get(b)]
        if not buckets or buckets == [PLAIN_BUCKET]:
            continue
        for config in SKEWED:
            region = own_region(buckets, config)
            if config not in configs or not region:
                continue
            scores = _scores(configs[config])
            comparison = paired_comparison(
                pooled(base_scores, region, config),
                pooled(scores, region, config),
                n_resamples=n_resamples,
                seed=seed,
            )
            diff = comparison.buckets[config]
            curve = {b: sum(scores[b].values()) / len(scores[b]) for b in buckets if scores.get(b)}
            peak = max(curve, key=lambda b: curve[b])
            out.append(
                {
                    "task": task,
                    "model": model,
                    "pooling": pooling,
                    "config": config,
                    "position": config,
                    "region": region,
                    "delta": diff.delta,
                    "ci": [diff.low, diff.high],
                    "p_value": diff.p_value,
                    "raised": diff.delta > 0 and diff.p_value < ALPHA,
                    "peak": peak,
                    "peak_region": region_of(buckets, peak),
                }
            )
    return out


def remedy_deltas(sources: Sequence[Source], n_resamples: int, seed: int) -> list[dict]:
    """Each remedy row against its own row without the remedy (``base +maxp`` − ``base``): Δ
    mean nDCG@10 and Δ PSI with paired bootstrap intervals and p-values, on the same queries."""
    from hf_posbias.statistics.uncertainty import paired_comparison
    from hf_posbias.study.layout import split_remedy

    out = []
    for (task, model, pooling), configs in _groups(sources).items():
        for config, source in configs.items():
            plain, remedy = split_remedy(config)
            if remedy is None or plain not in configs:
                continue
            comparison = paired_comparison(
                _scores(configs[plain]), _scores(source), n_resamples=n_resamples, seed=seed
            )
            psi = comparison.psi
            out.append(
                {
                    "task": task,
                    "model": model,
                    "pooling": pooling,
                    "config": config,
                    "remedy": remedy,
                    "delta_mean": comparison.mean.delta,
                    "ci": [comparison.mean.low, comparison.mean.high],
                    "p_value": comparison.mean.p_value,
                    "delta_psi": None if psi is None else psi.delta,
                    "psi_ci": None if psi is None else [psi.low, psi.high],
                    "psi_p_value": None if psi is None else psi.p_value,
                }
            )
    return out


def task_averages(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """The plain-retrieval table: nDCG@10 over all queries per model, configuration and task,
    and its average over the tasks; with standard retrieval tasks in the study (YHP26's Table 4
    check), also ``average_standard``, the average over those alone.

    Example:
        >>> cells = [Cell("T", "m", "base", None, {"all": 0.5}, 0.5, 0.0, {}, {}, "", 0.5, True),
        ...          Cell("P", "m", "base", None, {"begin": 0.9}, 0.9, 0.0, {}, {}, "", 0.7)]
        >>> row = task_averages(cells)[0]
        >>> row["T"], row["P"], row["average"], row["average_standard"]
        (0.5, 0.7, 0.6, 0.5)
    """
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for cell in cells:
        row = rows.setdefault((cell.row, cell.config), {"model": cell.row, "config": cell.config})
        row[cell.task] = cell.ndcg_at_10_all
    tasks = sorted({c.task for c in cells})
    standard = sorted({c.task for c in cells if c.standard})
    for row in rows.values():
        values = [row[t] for t in tasks if t in row]
        row["average"] = sum(values) / len(values)
        if standard:
            values = [row[t] for t in standard if t in row]
            row["average_standard"] = sum(values) / len(values) if values else None
    return list(rows.values())


def position_tasks(cells: Sequence[Cell]) -> list[str]:
    """The tasks with evidence positions (per-position tables, PSI and curves), in order."""
    return list(dict.fromkeys(c.task for c in cells if not c.standard))


def build_report(
    sources: Sequence[Source], n_resamples: int, seed: int, root: Path | None = None
) -> StudyReport:
    """Cells, PSI reductions, direction checks and averages of ``sources``."""
    from hf_posbias.progress import progress

    cells = [
        compute_cell(s, n_resamples, seed, root)
        for s in progress(
            sources, total=len(sources), desc="report cells", disable=len(sources) < 8
        )
    ]
    return StudyReport(
        cells=cells,
        psi_reductions=reductions(sources, cells, n_resamples, seed),
        direction=direction_checks(sources, n_resamples, seed),
        remedies=remedy_deltas(sources, n_resamples, seed),
        averages=task_averages(cells),
        bootstrap=n_resamples,
        seed=seed,
        standard=standard_report(sources, cells, n_resamples, seed),
    )


def standard_report(
    sources: Sequence[Source], cells: Sequence[Cell], n_resamples: int, seed: int
) -> dict[str, Any]:
    """The Table 4 view (``report.json`` key ``standard``) of the standard tasks' evaluations."""
    from hf_posbias.study.standard import standard_view

    tasks = {c.task for c in cells if c.standard}
    if not tasks:
        return {}
    per_query = {
        key: {config: _scores(source) for config, source in configs.items()}
        for key, configs in _groups(sources).items()
        if key[0] in tasks
    }
    return standard_view(per_query, n_resamples=n_resamples, seed=seed)


def _configs_in_order(cells: Sequence[Cell]) -> list[str]:
    """Trained configurations, the base, remedy rows, off-the-shelf.

    Example:
        >>> cells = [Cell("T", "m", c, None, {}, 0.0, None, {}, {}, "")
        ...          for c in ("base", "off-the-shelf", "base +maxp", "begin")]
        >>> _configs_in_order(cells)
        ['begin', 'base', 'base +maxp', 'off-the-shelf']
    """
    from hf_posbias.study.layout import split_remedy

    seen = list(dict.fromkeys(c.config for c in cells))
    remedied = [c for c in seen if split_remedy(c)[1] is not None]
    plain = [c for c in seen if c not in remedied]
    trained = [c for c in plain if c not in (BASE, "off-the-shelf")]
    tail = [c for c in ("off-the-shelf",) if c in seen]
    return trained + [c for c in (BASE,) if c in seen] + remedied + tail


def _ci(value: float | None, interval: Sequence[float] | None) -> str | None:
    from hf_posbias.evaluation.reports.report import with_interval

    return with_interval(value, tuple(interval) if interval else None)  # type: ignore[arg-type]


def task_tables(report: StudyReport) -> dict[str, dict[str, Any]]:
    """Per task: ``{"mean": table, "psi": table}`` (rows = bases, columns = configurations)."""
    from hf_posbias.tables import as_table

    out: dict[str, dict[str, Any]] = {}
    for task in position_tasks(report.cells):
        cells = [c for c in report.cells if c.task == task]
        configs = _configs_in_order(cells)
        tables = {}
        for what in ("mean", "psi"):
            rows = []
            for label in dict.fromkeys(c.row for c in cells):
                row: dict[str, Any] = {"model": label}
                for config in configs:
                    match = [c for c in cells if c.row == label and c.config == config]
                    row[config] = _ci(getattr(match[0], what), match[0].ci[what]) if match else "—"
                rows.append(row)
            tables[what] = as_table(rows)
        out[task] = tables
    return out


def protocol_line(cells: Sequence[Cell]) -> str:
    """What every PSI of a task's cells is over: scoring, bucket scheme, number of buckets, each
    model's max sequence length, and the queries truncated at it.

    Example:
        >>> c = Cell("T", "m", "base", None, {}, 0.5, 0.1, {}, {}, "", bucket_scheme="thirds",
        ...          n_buckets=3, max_seq_length=256, truncated={"end": 2})
        >>> print(textwrap.fill(protocol_line([c]), 90))
        Protocol: default scoring, buckets thirds (3 buckets); max sequence length m 256; queries
        whose evidence starts at or beyond it: m base 2.
    """
    first = cells[0]
    lengths = {c.row: c.max_seq_length for c in cells if c.max_seq_length}
    cut = [
        f"{c.row} {c.config} {sum(c.truncated.values())}"
        for c in cells
        if any(c.truncated.values())
    ]
    text = (
        f"Protocol: {first.scoring} scoring, buckets {first.bucket_scheme or 'of the task'} "
        f"({first.n_buckets} buckets)"
    )
    if lengths:
        text += "; max sequence length " + ", ".join(f"{m} {n}" for m, n in lengths.items())
    text += "; queries whose evidence starts at or beyond it: " + (", ".join(cut) or "none")
    return text + "."


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def report_markdown(report: StudyReport, title: str) -> str:
    """The human report (tables, reductions, direction check, averages, curve images)."""
    from hf_posbias.evaluation.runs.exports import safe_name
    from hf_posbias.tables import as_table

    parts = [f"# {title}", ""]
    parts.append(
        f"Brackets: 95% percentile bootstrap intervals ({report.bootstrap} resamples, seed "
        f"{report.seed}; queries resampled within positions), recomputed from the per-query "
        "tables listed in report.json."
    )
    for task, tables in task_tables(report).items():
        parts += ["", f"## {task}", "", "Mean nDCG@10:", "", tables["mean"].to_markdown()]
        parts += ["", "PSI:", "", tables["psi"].to_markdown()]
        parts += ["", protocol_line([c for c in report.cells if c.task == task])]
        parts += ["", f"![a panel per configuration](curves-{safe_name(task)}-by-config.png)"]
        parts += ["", f"![a panel per base](curves-{safe_name(task)}.png)"]
    sections: list[tuple[str, list[dict[str, Any]]]] = [
        (
            "PSI reduction: 1 − PSI(uniform) / max(PSI(begin), PSI(middle), PSI(end))",
            [
                {
                    **_keys(r),
                    "worst skewed": r["worst"],
                    "PSI reduction": _ci(r["psi_reduction"], r["ci"]),
                    "p (H0: none)": _fmt(r["p_value"], 4),
                }
                for r in report.psi_reductions
            ],
        ),
        (
            "Direction check: Δ nDCG@10 in each skewed configuration's own region (its third "
            "of the ordered buckets) vs the untrained base (paired bootstrap), and where its "
            "curve peaks",
            [
                {
                    **_keys(r),
                    "config": r["config"],
                    "own region": ", ".join(r["region"]),
                    "Δ in own region": _ci(r["delta"], r["ci"]),
                    "p": _fmt(r["p_value"], 4),
                    "raised (p < 0.05)": "yes" if r["raised"] else "no",
                    "peak (its region)": f"{r['peak']} ({r['peak_region']})",
                }
                for r in report.direction
            ],
        ),
        (
            "Inference-time remedies: Δ against the same model without the remedy, on the "
            "same queries (paired bootstrap; no retraining)",
            [
                {
                    **_keys(r),
                    "config": r["config"],
                    "Δ mean nDCG@10": _ci(r["delta_mean"], r["ci"]),
                    "p": _fmt(r["p_value"], 4),
                    "Δ PSI": _ci(r["delta_psi"], r["psi_ci"]),
                    "p (PSI)": _fmt(r["psi_p_value"], 4),
                }
                for r in report.remedies
            ],
        ),
    ]
    for heading, rows in sections:
        if rows:
            parts += ["", f"## {heading}", "", as_table(rows).to_markdown()]
    if report.averages:
        standard = list(dict.fromkeys(c.task for c in report.cells if c.standard))
        parts += [
            "",
            "## Plain retrieval: nDCG@10 over all queries of each task (each query once) and "
            "the average over the tasks",
            "",
        ]
        if standard:
            parts += [
                f"Standard retrieval tasks (no evidence positions): {', '.join(standard)}; "
                "`average_standard` averages those alone (YHP26's Table 4 check: does the "
                "training configuration cost quality on the natural distribution?).",
                "",
            ]
        parts.append(as_table(report.averages).to_markdown())
    if report.standard.get("rows"):
        from hf_posbias.study.standard import standard_markdown

        configs = _configs_in_order([c for c in report.cells if c.standard])
        parts += ["", standard_markdown(report.standard, configs)]
    return "\n".join(parts) + "\n"


def write_csv(report: StudyReport, path: Path) -> Path:
    """One row per cell and position (plus its mean and PSI)."""
    fields = ["task", "model", "pooling", "config", "position", "ndcg_at_10", "ci_low", "ci_high"]
    fields += ["n_queries", "mean", "mean_low", "mean_high", "psi", "psi_low", "psi_high"]
    with atomic_path(path) as tmp, tmp.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for c in report.cells:
            psi_ci = c.ci["psi"] or ["", ""]
            for position, value in c.per_position.items():
                low, high = c.ci["per_position"][position]
                writer.writerow(
                    {
                        "task": c.task,
                        "model": c.model,
                        "pooling": c.pooling or "",
                        "config": c.config,
                        "position": position,
                        "ndcg_at_10": value,
                        "ci_low": low,
                        "ci_high": high,
                        "n_queries": c.n_queries[position],
                        "mean": c.mean,
                        "mean_low": c.ci["mean"][0],
                        "mean_high": c.ci["mean"][1],
                        "psi": "" if c.psi is None else c.psi,
                        "psi_low": psi_ci[0],
                        "psi_high": psi_ci[1],
                    }
                )
    return path


def plot_grid(
    sources: Sequence[Source], cells: Sequence[Cell], task: str, path: Path, by: str = "base"
) -> Path:
    """Per-position curves of one task: a panel per base (· pooling) and a line per
    configuration; ``by="config"``: a panel per configuration and a line per base (the
    orientation of YHP26's Figs. 1, 2 and 8)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hf_posbias.evaluation.reports.report import plot_position_curves
    from hf_posbias.figures import save_figure

    rows = list(dict.fromkeys(c.row for c in cells if c.task == task))
    order = _configs_in_order([c for c in cells if c.task == task])
    panels, lines = (order, rows) if by == "config" else (rows, order)
    ncols = min(len(panels), 4)
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(5.2 * ncols, 3.8 * nrows), dpi=100, squeeze=False
    )
    for index, panel in enumerate(panels):
        ax = axes[index // ncols][index % ncols]
        mine = {}
        for s in (s for s in sources if s.task == task):
            label = _row_label({"model": s.model, "pooling": s.pooling})
            panel_of, line_of = (s.config, label) if by == "config" else (label, s.config)
            if panel_of == panel:
                mine[line_of] = s.summary
        shown = [line for line in lines if line in mine]
        plot_position_curves(
            [mine[c] for c in shown], path, title=panel, labels=dict(enumerate(shown)), ax=ax
        )
    for index in range(len(panels), nrows * ncols):
        axes[index // ncols][index % ncols].axis("off")
    # Wrapped to the grid's width: one panel is too narrow for the whole title on one line.
    title = f"{task}: nDCG@10 per position (95% bootstrap intervals)"
    fig.suptitle(textwrap.fill(title, width=48 * ncols))
    return save_figure(fig, path, tight_layout=True)


def write_report(
    sources: Sequence[Source],
    out_dir: str | Path,
    *,
    n_resamples: int,
    seed: int,
    title: str = "Position bias study",
    root: Path | None = None,
) -> Path:
    """Write ``report.md``, ``report.csv``, ``report.json`` and ``curves-<task>.png``."""
    from hf_posbias.evaluation.runs.exports import safe_name

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sources = single_pooling(sources)
    report = build_report(sources, n_resamples, seed, root)
    for task in position_tasks(report.cells):
        plot_grid(sources, report.cells, task, out / f"curves-{safe_name(task)}.png")
        plot_grid(
            sources, report.cells, task, out / f"curves-{safe_name(task)}-by-config.png", "config"
        )
    write_csv(report, out / "report.csv")
    write_text_atomic(out / "report.md", report_markdown(report, title))
    target = out / "report.json"
    write_text_atomic(target, json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")
    return target


def write_study_report(out: str | Path) -> Path:
    """The report of a study folder into ``<out>/report/`` (per-query paths relative to it)."""
    from hf_posbias.study.layout import base_label
    from hf_posbias.study.spec import spec_from_folder

    spec = spec_from_folder(out)
    bases = ", ".join(base_label(b) for b in spec.bases)
    target = write_report(
        study_sources(out),
        Path(out) / REPORT_DIRNAME,
        n_resamples=spec.bootstrap,
        seed=spec.seed,
        title=f"Position bias study: {bases} × {', '.join(spec.configs)}"
        if spec.train
        else f"Position bias of published models (evaluation only): {bases}",
        root=Path(out),
    )
    from hf_posbias.study.layout import resolve_tasks

    folders = {t.name: t.folder for t in resolve_tasks(spec.tasks)}
    add_evidence_positions(folders, target.parent)
    if spec.analyses:
        from hf_posbias.study.analyses import add_analyses_to_report

        add_analyses_to_report(spec, out, target.parent)
    if not spec.train:  # evaluation only: Zeng et al.'s view of published models
        from hf_posbias.study.zeng import add_zeng_to_report

        add_zeng_to_report(target.parent, folders)
    return target


EVIDENCE_FIGURE = "evidence-positions.png"


def add_evidence_positions(folders: Mapping[str, str], report_dir: Path) -> dict[str, Any]:
    """Where the evidence of each position task starts (YHP26 Fig. 9 on its four BEIR subsets):
    ``evidence-positions.png`` (a panel per task, the dashed line at the mean relative start),
    ``report.json``'s ``evidence_positions`` (per task the queries placed and the mean relative
    start; tasks with position labels only, FineWeb-PosQ, under ``skipped``) and a line of
    ``report.md``. Nothing is written when no task has evidence offsets."""
    from hf_posbias.evaluation.reports.evidence_plot import plot_evidence_distribution
    from hf_posbias.shards import write_json

    try:
        summary = plot_evidence_distribution(list(folders.values()), report_dir / EVIDENCE_FIGURE)
    except InputError:  # no task with offsets: nothing to draw
        return {}
    view = {
        "tasks": {name: {"n_queries": sum(counts), "mean_relative_start": summary.means[name]}
                  for name, counts in summary.counts.items()},
        "skipped": summary.skipped,
        "figure": EVIDENCE_FIGURE,
    }  # fmt: skip
    target = report_dir / "report.json"
    write_json(target, {**read_json(target), "evidence_positions": view})
    means = ", ".join(f"{n} {v['mean_relative_start']:.3f}" for n, v in view["tasks"].items())
    markdown = report_dir / "report.md"
    markdown.write_text(
        markdown.read_text()
        + "\n## Where the evidence starts (YHP26 Fig. 9)\n\nMean relative start (start ÷ "
        + f"document length): {means}.\n\n![where the evidence starts]({EVIDENCE_FIGURE})\n"
    )
    return view


def read_report(path: str | Path) -> dict[str, Any]:
    """``report.json`` of a report folder or study folder (or the file itself)."""
    target = Path(path)
    for candidate in (target, target / "report.json", target / REPORT_DIRNAME / "report.json"):
        if candidate.is_file():
            return read_json(candidate)
    raise InputError(f"{path}: no report.json (run `posbias study report`)")
