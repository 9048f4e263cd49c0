"""The evidence-location plot (YHP26 Fig. 9) and its CLI verb."""

from __future__ import annotations

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.evaluation.reports.evidence_plot import plot_evidence_distribution
from hf_posbias.tasks.builders.fineweb import build_fineweb_posq
from hf_posbias.tasks.builders.jsonl import build_from_records


def test_plot_evidence_cli_writes_a_png(tmp_path, capsys):
    doc = "z" * 100
    one = build_from_records(
        [{"query": f"q{s}", "document": doc, "evidence_start": s} for s in (0, 5, 55, 95)],
        name="One",
    ).save(tmp_path / "one")
    two = build_from_records(
        [{"query": "q", "document": doc, "evidence_start": 40}], name="Two"
    ).save(tmp_path / "two")
    labels_only = build_fineweb_posq(
        rows=[{"question": "q?", "content": "p " * 30, "span_class": ["after"]}]
    ).save(tmp_path / "fw")
    out = tmp_path / "figs" / "evidence.png"
    code = main(["benchmark", "plot-evidence", "--task", str(one), "--task", str(two),
                 "--task", str(labels_only), "--out", str(out), "--bins", "10"])  # fmt: skip
    assert code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    stdout = capsys.readouterr().out
    assert "One: 4 queries" in stdout and "FineWeb-PosQ: skipped" in stdout
    summary = plot_evidence_distribution([one, two], tmp_path / "b.png", bins=10)
    assert summary.counts["One"] == [2, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    assert summary.counts["Two"][4] == 1
    # YHP26 Fig. 9's dashed line per subset: the mean relative start (0, .05, .55, .95 of 100).
    assert summary.means == pytest.approx({"One": 0.3875, "Two": 0.4})
    assert "One: 4 queries with evidence offsets, mean start 0.388 of the document" in stdout


def test_character_scale_is_zeng_fig_2(tmp_path, capsys):
    """Zeng et al. Fig. 2: the answer's character start itself, bins from 0 to the largest."""
    task = build_from_records(
        [{"query": f"q{s}", "document": "z" * 400, "evidence_start": s} for s in (0, 10, 390)],
        name="Starts",
    ).save(tmp_path / "starts")
    out = tmp_path / "fig2.png"
    argv = ["benchmark", "plot-evidence", "--task", str(task), "--out", str(out)]
    assert main([*argv, "--bins", "3", "--scale", "characters"]) == 0
    assert "mean start 133 characters" in capsys.readouterr().out
    summary = plot_evidence_distribution([task], out, bins=3, scale="characters")
    assert summary.counts["Starts"] == [2, 0, 1] and summary.means["Starts"] == 400 / 3


def test_plot_needs_offsets(tmp_path):
    fw = build_fineweb_posq(
        rows=[{"question": "q?", "content": "p " * 30, "span_class": ["after"]}]
    ).save(tmp_path / "fw")
    with pytest.raises(InputError, match="no task has evidence offsets"):
        plot_evidence_distribution([fw], tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
