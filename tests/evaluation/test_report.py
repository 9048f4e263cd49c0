"""Tables, plots and the audit report from constructed summaries (no model needed)."""

from __future__ import annotations

import csv
import warnings

from hf_posbias.evaluation.reports.report import (
    AUDIT_SECTIONS,
    AuditContext,
    ReportSection,
    plot_position_curves,
    png_bytes_ok,
    register_audit_section,
    write_audit_report,
    write_summary_tables,
)
from hf_posbias.evaluation.runs.reversal import ReversalResult
from hf_posbias.evaluation.summary import EvaluationSummary

BUCKETS = ["begin", "middle", "end"]


def _summary(model: str, scores: dict, task: str = "T") -> EvaluationSummary:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return EvaluationSummary.from_scores(
            model,
            task,
            BUCKETS,
            scores,
            n_queries={b: 0 if scores[b] is None else 10 for b in BUCKETS},
        )


def test_tables(tmp_path):
    a = _summary("model-a", {"begin": 0.8, "middle": 0.6, "end": 0.4})
    b = _summary("model-b", {"begin": 0.5, "middle": None, "end": 0.5})
    md_path, csv_path = write_summary_tables([a, b], tmp_path)
    md = md_path.read_text()
    assert "| model-a | T | 0.6000 | 0.5000 |" in md  # mean 0.6, PSI 1 - 0.4/0.8
    assert "empty" in md and "middle (n=0)" in md
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 6
    assert [r["bucket"] for r in rows[:3]] == BUCKETS
    assert rows[4]["ndcg_at_10"] == "" and rows[4]["n_queries"] == "0"


def test_plot_is_a_png(tmp_path):
    a = _summary("model-a", {"begin": 0.8, "middle": 0.6, "end": 0.4})
    b = _summary("model-b", {"begin": 0.5, "middle": None, "end": 0.5})
    path = plot_position_curves([a, b], tmp_path / "plots" / "t.png")
    assert png_bytes_ok(path) and path.stat().st_size > 2000


def test_audit_report_embeds_plots_and_takes_extra_sections(tmp_path):
    summaries = [_summary("m", {"begin": 0.8, "middle": 0.6, "end": 0.4})]
    reversal = ReversalResult.from_scores(
        "T", "m", {"front": 0.9, "back": 0.6}, {"front": 0.5, "back": 0.8}, n_front=4, n_back=3
    )
    ctx = AuditContext(
        model="m",
        out_dir=tmp_path,
        summaries=summaries,
        reversals=[reversal],
        reversal_skipped={"FineWeb-PosQ": "no spans"},
    )

    def extra(context: AuditContext) -> list[ReportSection]:
        return [ReportSection("Evidence moving", paragraphs=[f"model {context.model}"])]

    register_audit_section(extra)
    try:
        md_path, html_path = write_audit_report(ctx)
    finally:
        AUDIT_SECTIONS.remove(extra)
    md, page = md_path.read_text(), html_path.read_text()
    for text in (
        "Per-position nDCG@10 — T",
        "Position Sensitivity Index",
        "Mirror reversal",
        "Evidence moving",
        "FineWeb-PosQ: not run — no spans",
    ):
        assert text in md and text in page
    assert "![T](plots/T.png)" in md
    assert page.count("data:image/png;base64,") == 2  # the curve and the reversal bars
    assert 'src="plots/' not in page  # self-contained
    assert png_bytes_ok(tmp_path / "plots" / "reversal.png")


def test_tables_and_plots_carry_the_intervals(tmp_path):
    intervals = {
        "buckets": {
            b: {"estimate": v, "low": v - 0.05, "high": v + 0.05}
            for b, v in {"begin": 0.8, "middle": 0.6, "end": 0.4}.items()
        },
        "mean": {"estimate": 0.6, "low": 0.55, "high": 0.65},
        "psi": {"estimate": 0.5, "low": 0.4, "high": 0.6},
        "confidence": 0.95,
        "n_resamples": 100,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = EvaluationSummary.from_scores(
            "m", "T", BUCKETS, {"begin": 0.8, "middle": 0.6, "end": 0.4},
            n_queries={b: 10 for b in BUCKETS}, intervals=intervals,
        )  # fmt: skip
    md_path, csv_path = write_summary_tables([s], tmp_path)
    md = md_path.read_text()
    assert "0.8000 [0.750, 0.850]" in md and "0.5000 [0.400, 0.600]" in md  # bucket and PSI
    rows = list(csv.DictReader(csv_path.open()))
    assert float(rows[0]["ci_low"]) == 0.75 and float(rows[0]["psi_ci_high"]) == 0.6
    png = plot_position_curves([s], tmp_path / "ci.png")
    assert png_bytes_ok(png)
