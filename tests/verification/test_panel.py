"""The reranker panel: consensus margins, each unique pair scored once, specs, the δ check."""

from __future__ import annotations

import re

import numpy as np
import pytest
from verification_rows import TableMember, row

from hf_posbias.errors import InputError, ModelLoadError, PosbiasError
from hf_posbias.verification.members import BM25Member
from hf_posbias.verification.panel import (
    PAPER_PANEL,
    RerankerPanel,
    check_delta,
    consensus_margin,
    margin_ceiling,
    parse_panel,
)


def test_consensus_margin_hand_computed() -> None:
    scores = np.array([[0.9, 0.2, 0.5], [0.7, 0.6, 0.1]])
    margins, m = consensus_margin(scores, 0)
    assert margins == pytest.approx([0.4, 0.1]) and m == pytest.approx(0.1)
    margins, m = consensus_margin(scores, 2)  # end is not top for either member
    assert margins == pytest.approx([-0.4, -0.6]) and m == pytest.approx(-0.6)
    margins, m = consensus_margin(scores, 1)
    assert margins == pytest.approx([-0.7, -0.1]) and m == pytest.approx(-0.7)


def test_panel_margins_through_normalisation() -> None:
    seg = ["alpha", "beta", "gamma"]
    a = TableMember("a", {"alpha": 2.0, "beta": 0.0, "gamma": -1.0}, "sigmoid")
    b = TableMember("b", {"alpha": 1.0, "beta": 3.0, "gamma": 0.0}, "none")
    panel = RerankerPanel([a, b])
    result = panel.score([row("d::begin", "begin", seg), row("d::middle", "middle", seg)], False)
    sig = 1 / (1 + np.exp(-np.array([2.0, 0.0, -1.0])))
    assert result.normalized[0, 0] == pytest.approx(sig)
    assert result.normalized[0, 1] == pytest.approx([1.0, 3.0, 0.0])
    # begin: a: σ(2) − σ(0); b: 1 − 3 = −2 → consensus −2.
    assert result.member_margins[0] == pytest.approx([sig[0] - sig[1], -2.0])
    assert result.margin[0] == pytest.approx(-2.0)
    # middle: a: σ(0) − σ(2) < 0; b: 3 − 1 = 2 → consensus is a's margin.
    assert result.margin[1] == pytest.approx(sig[1] - sig[0])


def test_each_unique_pair_is_scored_once() -> None:
    shared = ["s-begin", "s-middle", "s-end"]
    table = {s: float(i) for i, s in enumerate([*shared, "other-1", "other-2"])}
    member = TableMember("count", table)
    rows = [
        row("d1::begin", "begin", shared, "q1"),
        row("d1::middle", "middle", shared, "q2"),
        row("d1::end", "end", shared, "q1"),  # same query as d1::begin → same three pairs
        row("d2::begin", "begin", ["other-1", "s-middle", "other-2"], "q2"),  # one pair repeats
    ]
    result = RerankerPanel([member]).score(rows, progress=False)
    assert result.pairs_total == 12
    assert len(member.calls) == len(set(member.calls)) == result.pairs_scored == 8
    # Every cell still gets its own pair's score.
    assert result.raw[:, 0, :].tolist() == [[0, 1, 2], [0, 1, 2], [0, 1, 2], [3, 1, 4]]
    # Pairs reach the member longest first (length-sorted batches).
    lengths = [len(q) + len(p) for q, p in member.calls]
    assert lengths == sorted(lengths, reverse=True)


def test_parse_panel_specs(tiny_cross_encoder) -> None:
    panel = parse_panel("paper", load=False, trust_remote_code=True)
    assert panel.names == list(PAPER_PANEL)
    assert {m["normalization"] for m in panel.describe()} == {"sigmoid"}
    panel = parse_panel(f"bm25@softmax, {tiny_cross_encoder}@none")
    assert [(m.name, m.normalization) for m in panel.members] == [
        ("bm25", "softmax"),
        (tiny_cross_encoder, "none"),
    ]
    # A panel-wide normalisation applies where it is valid for the member kind.
    panel = parse_panel(f"bm25,{tiny_cross_encoder}", normalization="softmax")
    assert [m.normalization for m in panel.members] == ["softmax", "softmax"]
    panel = parse_panel(f"bm25,{tiny_cross_encoder}", normalization="saturate")
    assert [m.normalization for m in panel.members] == ["saturate", "sigmoid"]


@pytest.mark.parametrize(
    "spec",
    ["", "  ", "bm25,,bm25", "bm25,bm25", "bm25@sigmoid", "bm25@", "@share", "/no/such/reranker"],
)
def test_bad_panel_specs_raise_one_line_errors(spec: str) -> None:
    with pytest.raises(PosbiasError) as info:
        parse_panel(spec)
    assert "\n" not in str(info.value)
    if spec.startswith("/"):
        assert isinstance(info.value, ModelLoadError)


def test_panel_wide_normalisation_must_apply_somewhere() -> None:
    with pytest.raises(InputError, match="applies to no member"):
        parse_panel("bm25", normalization="sigmoid")


def test_delta_must_be_reachable_on_the_panels_score_scale() -> None:
    """Regression: `--delta 5` was accepted and every candidate was dropped after scoring."""
    bounded = parse_panel("bm25", load=False)
    assert margin_ceiling(bounded) == 1.0
    assert check_delta(0.3, bounded) == 0.3 and check_delta(1, bounded) == 1.0
    with pytest.raises(InputError, match=r"delta 5 is above .* choose a delta in \[0, 1\]"):
        check_delta(5, bounded)
    # The range --delta declares (>= 0; nan and inf lie outside it), then the type; a Python
    # caller reads the keyword (the command line: the flag).
    refused = {
        -0.1: "must be >= 0, got -0.1",
        float("nan"): "must be a finite number >= 0, got nan",
        float("inf"): "must be a finite number >= 0, got inf",
        "0.3": "must be a number, got '0.3'",
        True: "must be a number, got True",
    }
    for bad, message in refused.items():
        with pytest.raises(InputError, match=f"^delta {re.escape(message)}$"):
            check_delta(bad, bounded)
    # Raw scores (normalisation none) are unbounded: any δ >= 0 can be met.
    assert check_delta(5, parse_panel("bm25@none", load=False)) == 5.0
    # The consensus is the minimum over members: the tightest member decides.
    mixed = RerankerPanel([TableMember("raw", {}, "none"), BM25Member()])
    assert margin_ceiling(mixed) == 1.0
