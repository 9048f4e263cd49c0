"""The verification report: YHP26 Table 6, disjoint strata, retained per bin × position."""

from __future__ import annotations

import json

import pytest

from hf_posbias.positions import POSITIONS
from hf_posbias.verification.report import VerificationReport, margin_stratum, stratum_labels


def test_report_tables_are_consistent() -> None:
    margins = {
        "begin": [-0.5, 0.0, 0.05, 0.12, 0.26, 0.4, 0.9],
        "middle": [-0.2, -0.01, 0.1, 0.21, 0.25],
        "end": [0.19, 0.3, 0.31],
    }
    rows = [
        {"margin": m, "target_position": p, "length_bin": "512-1024" if i % 2 else "256-512"}
        for p, ms in margins.items()
        for i, m in enumerate(ms)
    ]
    rep = VerificationReport.from_rows(rows, delta=0.25)
    assert [c["threshold"] for c in rep.cumulative] == [0.0, 0.1, 0.2, 0.25]
    assert stratum_labels(0.25) == ["failed", "[0,0.1)", "[0.1,0.2)", "[0.2,0.25)", ">=0.25"]
    # Hand counts: failed −0.5, −0.2, −0.01; m ≥ 0.2 adds 0.21 to the six with m ≥ 0.25
    # (0.26 0.4 0.9 0.25 0.3 0.31); [0.1,0.2) holds 0.12, 0.1 and 0.19.
    assert rep.failed["count"] == 3 and rep.failed["pct"] == pytest.approx(20.0)
    assert [c["count"] for c in rep.cumulative] == [12, 10, 7, 6]
    assert [s["count"] for s in rep.strata] == [3, 2, 3, 1, 6]
    assert rep.cumulative[-1]["end"] == 2 and rep.cumulative[-1]["begin"] == 3
    assert rep.retained == 6
    # Consistency: cumulative monotone, failed + m≥0 = all, strata partition every position.
    counts = [c["count"] for c in rep.cumulative]
    assert counts == sorted(counts, reverse=True)
    assert rep.failed["count"] + rep.cumulative[0]["count"] == rep.generated == 15
    assert sum(s["count"] for s in rep.strata) == rep.generated
    for pos in POSITIONS:
        assert sum(s[pos] for s in rep.strata) == rep.generated_per_position[pos]
        assert rep.strata[-1][pos] == rep.cumulative[-1][pos]
    assert sum(sum(c.values()) for c in rep.retained_per_bin.values()) == rep.retained
    assert list(rep.retained_per_bin) == ["256-512", "512-1024"]
    md = rep.to_markdown()
    assert "| m ≥ 0.25 | 6 | 40.0 | 3 | 1 | 2 |" in md
    assert "| fails top-rank check (m < 0, removed) | 3 | 20.0 |" in md
    assert "| [0.1,0.2) | 3 |" in md and "| 512-1024 |" in md
    assert any("m >= 0.25: 6" in line for line in rep.summary_lines())
    assert json.loads(json.dumps(rep.to_dict()))["strata"][0]["stratum"] == "failed"
    assert margin_stratum(0.25, 0.25) == ">=0.25" and margin_stratum(0.2499, 0.25) == "[0.2,0.25)"


def test_the_report_counts_a_stream_of_rows_in_one_pass() -> None:
    """The build counts its report from a pool read lazily: an iterator (read once) gives the
    report the list gives, unscored rows included."""
    rows = [
        {"margin": m, "target_position": POSITIONS[i % 3], "length_bin": f"{256 * (1 + i % 2)}"}
        for i, m in enumerate([-0.3, 0.0, 0.1, 0.29, 0.3, 0.7, float("nan"), None, 0.5])
    ]
    listed = VerificationReport.from_rows(rows, delta=0.3)
    assert VerificationReport.from_rows(iter(rows), delta=0.3) == listed
    assert listed.unscored == 2 and listed.retained == 3 and listed.generated == 9
