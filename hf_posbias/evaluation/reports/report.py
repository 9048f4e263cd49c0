"""Tables (markdown/CSV), per-position plots (PNG) and the ``posbias analyze audit`` report.

- :func:`write_summary_tables` — ``summary.md`` (overview + one per-bucket table per task, each
  score with its bootstrap interval) and ``summary.csv`` (long format: one row per model × task
  × bucket with ``ci_low``/``ci_high``, easy to pivot);
- :func:`plot_position_curves` — nDCG@10 per position bucket with error bars (the intervals),
  one line per model/config, PSI (and its interval) and mean in the legend;
- :func:`plot_relative_curve` — PosIR's view: nDCG@10 over 20 relative-position bins of the
  evidence, from per-query tables;
- :func:`write_audit_report` — ``audit.md`` and a self-contained ``audit.html`` (PNG plots
  embedded as base64) built from a list of :class:`ReportSection`. The sections come from the
  builders in :data:`AUDIT_SECTIONS`; other analyses (mirror reversal, evidence moving) plug in
  with :func:`register_audit_section`.

Example:
    >>> from hf_posbias.evaluation.reports.report import ReportSection
    >>> print(ReportSection("PSI", paragraphs=["Lower is better."]).to_markdown())
    ## PSI
    <BLANKLINE>
    Lower is better.
    <BLANKLINE>
"""

from __future__ import annotations

import base64
import csv
import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.figures import save_figure
from hf_posbias.shards import atomic_path, write_text_atomic
from hf_posbias.tables import MarkdownTable, as_table, format_cell

if TYPE_CHECKING:
    from hf_posbias.evaluation.summary import EvaluationSummary

RELATIVE_BINS = 20
"""PosIR's relative-position bins for the audit curve."""


def with_interval(value: float | None, interval: tuple[float, float] | None) -> str | None:
    """``0.8374 [0.791, 0.880]`` — a score and its interval as one table cell.

    Always four decimals (trailing zeros kept), so a column of scores lines up.

    Example:
        >>> with_interval(0.83741, (0.7912, 0.8801)), with_interval(0.968, None)
        ('0.8374 [0.791, 0.880]', '0.9680')
    """
    if value is None:
        return None
    text = f"{float(value):.4f}"
    return text if interval is None else f"{text} [{interval[0]:.3f}, {interval[1]:.3f}]"


# -- tables ---------------------------------------------------------------------------------
def overview_rows(summaries: Sequence[EvaluationSummary]) -> list[dict[str, Any]]:
    """One row per (model, task): mean, PSI (with intervals), worst drop, best/worst bucket."""
    return [
        {
            "model": s.label,
            "task": s.task,
            "mean nDCG@10": with_interval(s.mean, s.interval(what="mean")),
            "PSI": with_interval(s.psi, s.interval(what="psi")),
            "worst drop": s.worst_drop,
            "best": s.best_bucket,
            "worst": s.worst_bucket,
            "queries": sum(s.n_queries.values()),
            "empty buckets": ", ".join(s.empty_buckets) or "-",
        }
        for s in summaries
    ]


def bucket_table(
    summaries: Sequence[EvaluationSummary],
    labels: Sequence[str] | None = None,
    extra: Sequence[dict[str, Any]] | None = None,
) -> MarkdownTable:
    """Per-bucket nDCG@10 of summaries that share a task (rows = models, columns = buckets).

    Each score carries its bootstrap interval when the summary has one. ``labels`` names the
    rows (default: each summary's model label), e.g. training configs; ``extra`` adds columns
    (e.g. a significance verdict) per row.
    """
    rows = []
    for index, s in enumerate(summaries):
        row: dict[str, Any] = {"model": labels[index] if labels is not None else s.label}
        for bucket in s.buckets:
            value = s.ndcg_at_10.get(bucket)
            cell = "empty" if value is None else with_interval(value, s.interval(bucket))
            row[f"{bucket} (n={s.n_queries.get(bucket, 0)})"] = cell
        row["mean"] = with_interval(s.mean, s.interval(what="mean"))
        row["PSI"] = with_interval(s.psi, s.interval(what="psi"))
        if extra is not None:
            row.update(extra[index])
        rows.append(row)
    return as_table(rows)


def long_rows(summaries: Sequence[EvaluationSummary]) -> list[dict[str, Any]]:
    """CSV rows: model × task × bucket with nDCG@10, counts and the task-level mean/PSI."""
    rows = []
    for s in summaries:
        for index, bucket in enumerate(s.buckets):
            rows.append(
                {
                    "model": s.model,
                    "model_name": s.model_name,
                    "reranker": s.reranker or "",
                    "task": s.task,
                    "bucket": bucket,
                    "position_index": index,
                    "n_queries": s.n_queries.get(bucket, 0),
                    "ndcg_at_10": "" if s.ndcg_at_10.get(bucket) is None else s.ndcg_at_10[bucket],
                    "ci_low": _or_blank((s.interval(bucket) or (None, None))[0]),
                    "ci_high": _or_blank((s.interval(bucket) or (None, None))[1]),
                    "recall_at_100": _or_blank(s.metrics.get("recall_at_100", {}).get(bucket)),
                    "mean": s.mean,
                    "psi": "" if s.psi is None else s.psi,
                    "psi_ci_low": _or_blank((s.interval(what="psi") or (None, None))[0]),
                    "psi_ci_high": _or_blank((s.interval(what="psi") or (None, None))[1]),
                    "worst_drop": s.worst_drop,
                    "scoring": s.scoring,
                }
            )
    return rows


def _or_blank(value: Any) -> Any:
    return "" if value is None else value


def _by_task(summaries: Sequence[EvaluationSummary]) -> dict[str, list[EvaluationSummary]]:
    grouped: dict[str, list[EvaluationSummary]] = {}
    for s in summaries:
        grouped.setdefault(s.task, []).append(s)
    return grouped


def summary_markdown(summaries: Sequence[EvaluationSummary]) -> str:
    """Markdown: the overview table, then one per-bucket table per task."""
    parts = [
        "# Position-wise retrieval results",
        "",
        as_table(overview_rows(summaries)).to_markdown(),
    ]
    for task, group in _by_task(summaries).items():
        parts += ["", f"## {task}", "", bucket_table(group).to_markdown()]
        parts += [""] + [f"- {s.label}: {s.protocol_line()}" for s in group]
        strata = [
            {"model": s.label, "tokens": name, "queries": entry["n_queries"],
             "PSI": with_interval(entry["psi"], _low_high(entry.get("psi_interval")))}
            for s in group
            for name, entry in s.psi_by_token_length.items()
        ]  # fmt: skip
        if strata:
            parts += ["", "PSI per document token-length stratum:", ""]
            parts.append(as_table(strata).to_markdown())
    notes = [w for s in summaries for w in s.warnings]
    if notes:
        parts += ["", "## Warnings", ""] + [f"- {format_cell(n)}" for n in notes]
    return "\n".join(parts) + "\n"


def _low_high(interval: Mapping[str, float] | None) -> tuple[float, float] | None:
    return None if not interval else (interval["low"], interval["high"])


def write_summary_tables(
    summaries: Sequence[EvaluationSummary], out_dir: str | Path, stem: str = "summary"
) -> tuple[Path, Path]:
    """Write ``<stem>.md`` and ``<stem>.csv``; returns both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md_path, csv_path = out / f"{stem}.md", out / f"{stem}.csv"
    write_text_atomic(md_path, summary_markdown(summaries))
    rows = long_rows(summaries)
    with atomic_path(csv_path) as tmp, tmp.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["model"])
        writer.writeheader()
        writer.writerows(rows)
    return md_path, csv_path


# -- plots ----------------------------------------------------------------------------------
def plot_position_curves(
    summaries: Sequence[EvaluationSummary],
    path: str | Path,
    *,
    title: str | None = None,
    labels: dict[int, str] | None = None,
    ax: Any = None,
) -> Path | None:
    """nDCG@10 per position bucket with interval error bars, one line per model/config.

    PSI (with its interval) and the mean are in the legend. Summaries should share a task (same
    buckets); empty buckets are gaps in the line. With ``ax`` (a matplotlib axes, e.g. a panel
    of a grid) the curves are drawn there and nothing is saved (``path`` is ignored).

    Example:
        >>> # plot_position_curves(read_summaries("runs/a/summary.json"), "squad.png")
    """
    import matplotlib

    matplotlib.use("Agg")  # no display on servers; must precede pyplot
    import matplotlib.pyplot as plt

    if not summaries:
        raise ValueError("nothing to plot")
    buckets = list(summaries[0].buckets)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(buckets) + 2), 3.6), dpi=110)
    for index, s in enumerate(summaries):
        ys = [s.ndcg_at_10.get(b) for b in buckets]
        values = [float("nan") if y is None else y for y in ys]
        psi_text = "n/a" if s.psi is None else f"{s.psi:.3f}"
        psi_ci = s.interval(what="psi")
        if psi_ci is not None:
            psi_text += f" [{psi_ci[0]:.3f}, {psi_ci[1]:.3f}]"
        label = f"{(labels or {}).get(index, s.label)} (PSI {psi_text}, mean {s.mean:.3f})"
        # Shift the lines apart a little so that overlapping error bars stay readable.
        xs = [i + (index - (len(summaries) - 1) / 2) * 0.04 for i in range(len(buckets))]
        low = [v - (s.interval(b) or (v, v))[0] for b, v in zip(buckets, values, strict=True)]
        high = [(s.interval(b) or (v, v))[1] - v for b, v in zip(buckets, values, strict=True)]
        ax.errorbar(xs, values, yerr=[low, high], marker="o", capsize=3, label=label)
    ax.set_xticks(range(len(buckets)))
    ax.set_xticklabels(buckets, rotation=30 if len(buckets) > 4 else 0, ha="right")
    ax.set_xlabel("evidence position bucket")
    ax.set_ylabel("nDCG@10")
    ax.set_ylim(bottom=0)
    ax.set_title(title or summaries[0].task)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return None if fig is None else save_figure(fig, path, tight_layout=True)


def plot_relative_curve(
    curves: dict[str, Sequence[Any]], path: str | Path, *, title: str, bins: int = RELATIVE_BINS
) -> Path:
    """Mean nDCG@10 over ``bins`` equal relative-position bins (PosIR's view), one line each.

    ``curves`` maps a label to per-query table rows (``relative_position``, ``ndcg_at_10``);
    rows without a position are left out; empty bins are gaps.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 3.6), dpi=110)
    centres = [(i + 0.5) / bins for i in range(bins)]
    for label, rows in curves.items():
        means, counts = relative_bin_means(rows, bins)
        ax.plot(centres, [float("nan") if m is None else m for m in means], marker=".",
                label=f"{label} ({sum(counts)} queries)")  # fmt: skip
    ax.set_xlabel("relative position of the evidence in its document")
    ax.set_ylabel("nDCG@10")
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path, tight_layout=True)


def relative_bin_means(
    rows: Sequence[Any], bins: int = RELATIVE_BINS
) -> tuple[list[float | None], list[int]]:
    """Mean nDCG@10 and query count per equal relative-position bin (right-closed, first closed).

    Example:
        >>> relative_bin_means([{"relative_position": 0.0, "ndcg_at_10": 1.0},
        ...                     {"relative_position": 0.9, "ndcg_at_10": 0.5}], bins=2)
        ([1.0, 0.5], [1, 1])
    """
    import math

    from hf_posbias.tasks.bucketing import IntervalBuckets

    rule = IntervalBuckets(tuple(i / bins for i in range(bins + 1)), closed="right")
    index = {label: i for i, label in enumerate(rule.labels)}
    sums: list[list[float]] = [[] for _ in range(bins)]
    seen: set[tuple[str, Any]] = set()
    for row in rows:
        position = row.get("relative_position")
        key = (str(row.get("query_id")), position)
        if position is None or key in seen:  # a query counted in two buckets is one point
            continue
        seen.add(key)
        sums[index[rule.assign(float(position))]].append(float(row["ndcg_at_10"]))  # type: ignore[index]
    means = [math.fsum(v) / len(v) if v else None for v in sums]
    return means, [len(v) for v in sums]


# -- report sections ------------------------------------------------------------------------
@dataclass
class ReportSection:
    """One section of a report: paragraphs, tables and images, rendered to markdown and HTML."""

    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[MarkdownTable] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)

    def to_markdown(self, base: Path | None = None) -> str:
        """Markdown; image links relative to ``base`` (the report's folder)."""
        parts = [f"## {self.title}", ""]
        for text in self.paragraphs:
            parts += [text, ""]
        for table in self.tables:
            parts += [table.to_markdown(), ""]
        for image in self.images:
            link = image.relative_to(base) if base and image.is_relative_to(base) else image
            parts += [f"![{image.stem}]({link})", ""]
        return "\n".join(parts)

    def to_html(self) -> str:
        """HTML fragment with the images inlined as base64 PNG (self-contained)."""
        parts = [f"<h2>{html.escape(self.title)}</h2>"]
        parts += [f"<p>{html.escape(t)}</p>" for t in self.paragraphs]
        for table in self.tables:
            head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
            body = "".join(
                "<tr>"
                + "".join(f"<td>{html.escape(c.replace(chr(92) + '|', '|'))}</td>" for c in row)
                + "</tr>"
                for row in table.rows
            )
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        for image in self.images:
            data = base64.b64encode(Path(image).read_bytes()).decode()
            parts.append(
                f'<figure><img alt="{html.escape(image.stem)}" '
                f'src="data:image/png;base64,{data}"/></figure>'
            )
        return "\n".join(parts)


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;"
    "text-align:right}th{background:#f4f4f4}img{max-width:100%}"
)


def render_markdown(title: str, sections: Sequence[ReportSection], base: Path) -> str:
    """A whole markdown report."""
    return "\n".join([f"# {title}", ""] + [s.to_markdown(base) for s in sections])


def render_html(title: str, sections: Sequence[ReportSection]) -> str:
    """A whole self-contained HTML report."""
    body = "\n".join(s.to_html() for s in sections)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n"
    )


@dataclass
class AuditContext:
    """Everything the section builders may use."""

    model: str
    out_dir: Path
    summaries: list[EvaluationSummary]
    reversals: list[Any] = field(default_factory=list)
    """:class:`~hf_posbias.evaluation.runs.reversal.ReversalResult` of each task, when run."""
    reversal_skipped: dict[str, str] = field(default_factory=dict)
    loaded: Any = None
    tasks: list[Any] = field(default_factory=list)
    progress: bool = False
    """Plain progress lines from the long sections (evidence moving)."""


SectionBuilder = Callable[[AuditContext], list[ReportSection]]


def _positions_section(ctx: AuditContext) -> list[ReportSection]:
    sections = []
    for task, group in _by_task(ctx.summaries).items():
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in task)
        png = plot_position_curves(group, ctx.out_dir / "plots" / f"{safe}.png", title=task)
        sections.append(
            ReportSection(
                f"Per-position nDCG@10 — {task}",
                paragraphs=[
                    f"{sum(group[0].n_queries.values()):,} queries over "
                    f"{group[0].n_documents:,} documents, top-{group[0].top_k} retrieval, "
                    f"{group[0].scoring} scoring. Brackets and error bars: "
                    + _interval_note(group[0])
                ],
                tables=[bucket_table(group)],
                images=[png],
            )
        )
    return sections


def _interval_note(summary: EvaluationSummary) -> str:
    if not summary.intervals:
        return "no intervals (bootstrap off)."
    level = round(100 * float(summary.intervals["confidence"]))
    return (
        f"{level}% percentile bootstrap intervals ({summary.intervals['n_resamples']} "
        "resamples of the queries within each bucket)."
    )


def _relative_section(ctx: AuditContext) -> list[ReportSection]:
    """PosIR's 20-bin curve from the per-query tables of tasks with evidence spans."""
    from hf_posbias.evaluation.runs.exports import read_per_query

    sections = []
    for s in ctx.summaries:
        if not s.per_query_path:
            continue
        rows = read_per_query(s.per_query_path)
        if not any(r.get("relative_position") is not None for r in rows):
            continue  # label-only task (FineWeb-PosQ): no spans, no curve
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in s.task)
        png = plot_relative_curve(
            {s.label: rows},
            ctx.out_dir / "plots" / f"relative-{safe}.png",
            title=f"{s.task}: nDCG@10 by relative evidence position",
        )
        means, counts = relative_bin_means(rows)
        table = as_table(
            [
                {
                    "bin": f"{i / RELATIVE_BINS:.2f}-{(i + 1) / RELATIVE_BINS:.2f}",
                    "queries": n,
                    "nDCG@10": "empty" if m is None else m,
                }
                for i, (m, n) in enumerate(zip(means, counts, strict=True))
            ]
        )
        sections.append(
            ReportSection(
                f"Relative-position curve — {s.task}",
                paragraphs=[
                    f"PosIR's view: mean nDCG@10 over {RELATIVE_BINS} equal bins of the "
                    "evidence start's relative position, from the per-query table "
                    f"({s.per_query_path})."
                ],
                tables=[table],
                images=[png],
            )
        )
    return sections


def _psi_section(ctx: AuditContext) -> list[ReportSection]:
    notes = [w for s in ctx.summaries for w in s.warnings]
    return [
        ReportSection(
            "Position Sensitivity Index",
            paragraphs=[
                "PSI = 1 − min/max of the per-position nDCG@10 (0 = position-robust); read it "
                "with the mean: a uniformly weak model also has a low PSI.",
                *notes,
            ],
            tables=[as_table(overview_rows(ctx.summaries))],
        )
    ]


AUDIT_SECTIONS: list[SectionBuilder] = [_positions_section, _relative_section, _psi_section]
"""Section builders of the audit report, in order. Extend with :func:`register_audit_section`."""


def register_audit_section(builder: SectionBuilder) -> SectionBuilder:
    """Add a section builder to every later audit (usable as a decorator)."""
    if builder not in AUDIT_SECTIONS:
        AUDIT_SECTIONS.append(builder)
    return builder


def write_audit_report(
    ctx: AuditContext, builders: Sequence[SectionBuilder] | None = None
) -> tuple[Path, Path]:
    """Write ``audit.md`` and a self-contained ``audit.html`` into ``ctx.out_dir``."""
    sections: list[ReportSection] = []
    for builder in builders if builders is not None else AUDIT_SECTIONS:
        sections.extend(builder(ctx))
    title = f"Position-bias audit: {ctx.model}"
    md_path, html_path = ctx.out_dir / "audit.md", ctx.out_dir / "audit.html"
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(md_path, render_markdown(title, sections, ctx.out_dir))
    write_text_atomic(html_path, render_html(title, sections))
    return md_path, html_path


def png_bytes_ok(path: str | Path) -> bool:
    """Whether a file starts with the PNG signature (used by tests and the CLI summary)."""
    with open(path, "rb") as handle:
        return handle.read(8) == b"\x89PNG\r\n\x1a\n"
