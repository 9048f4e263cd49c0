"""The verify stage end to end: a tiny cross-encoder + BM25 panel, resume, refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from verification_rows import row

from hf_posbias.errors import InputError
from hf_posbias.positions import POSITIONS
from hf_posbias.verification.members import BM25Member, CrossEncoderMember
from hf_posbias.verification.panel import RerankerPanel, parse_panel
from hf_posbias.verification.stage import run_verification


def test_tiny_cross_encoder_panel_end_to_end_with_resume(
    tiny_cross_encoder, tmp_path, monkeypatch
) -> None:
    from sentence_transformers import CrossEncoder

    segs = [
        ["Owls nest in old trees at night.", "Fish swim in the river.", "Lions hunt at dusk."],
        ["The model encodes a query.", "Documents are long texts.", "The end reveals answers."],
    ]
    rows = [
        row(f"d{d}::{p}", p, s, f"question {d} {p}", "256-512")
        for d, s in enumerate(segs)
        for p in POSITIONS
    ]
    # Same query and segments as d0::end, in the same shard: its 3 pairs are scored once.
    rows.insert(3, row("d9::end", "end", segs[0], "question 0 end", "512-1024"))
    panel = parse_panel(f"bm25,{tiny_cross_encoder}", batch_size=4)
    out = tmp_path / "verify"
    pool, report = run_verification(rows, panel, out, delta=0.05, shard_size=4, progress=False)

    assert [r["candidate_id"] for r in pool] == [r["candidate_id"] for r in rows]
    for r in pool:
        assert set(rows[0]) <= set(r)
        assert np.array(r["panel_scores"]).shape == (2, 3)
        assert r["margin"] == pytest.approx(min(r["member_margins"]))
        assert r["retained"] == (r["margin"] >= 0.05)
    # The cross-encoder's normalised scores are the sigmoid of its logits — the same numbers as
    # CrossEncoder.predict's default activation for a one-label model.
    expected = CrossEncoder(tiny_cross_encoder).predict(
        [(rows[0]["query"], s) for s in rows[0]["segments"]]
    )
    assert pool[0]["panel_scores"][1] == pytest.approx(expected.tolist(), abs=1e-5)
    assert report.pairs_total == 21 and report.pairs_scored == 18
    assert pool[3]["panel_scores"] == pool[2]["panel_scores"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [m["name"] for m in manifest["params"]["panel"]] == ["bm25", tiny_cross_encoder]
    assert [m["normalization"] for m in manifest["params"]["panel"]] == ["share", "sigmoid"]
    assert manifest["params"]["delta"] == 0.05
    assert json.loads((out / "report.json").read_text())["retained"] == report.retained

    # Resume: every shard is done, so nothing is fitted or scored again.
    def boom(*args, **kwargs):
        raise AssertionError("scored again on resume")

    monkeypatch.setattr(CrossEncoderMember, "score_pairs", boom)
    monkeypatch.setattr(BM25Member, "score_pairs", boom)
    monkeypatch.setattr(BM25Member, "fit", boom)
    again, report2 = run_verification(rows, panel, out, delta=0.05, shard_size=4, progress=False)
    assert again == pool and report2.retained == report.retained
    # Another δ re-filters the stored margins: nothing is fitted or scored again.
    third, report3 = run_verification(rows, panel, out, delta=0.3, shard_size=4, progress=False)
    assert [r["margin"] for r in third] == [r["margin"] for r in pool]
    assert [r["retained"] for r in third] == [r["margin"] >= 0.3 for r in pool]
    assert json.loads((out / "manifest.json").read_text())["params"]["delta"] == 0.3


def test_run_verification_rejects_bad_candidates(tmp_path) -> None:
    panel = RerankerPanel([BM25Member()])
    good = row("d::begin", "begin", ["a b", "c d", "e f"], "a")
    with pytest.raises(InputError, match="segments"):
        run_verification([dict(good, segments=["a", "b"])], panel, tmp_path / "1")
    with pytest.raises(InputError, match="target_position"):
        run_verification([dict(good, target_position="top")], panel, tmp_path / "2")
    with pytest.raises(InputError, match="more than once"):
        run_verification([good, good], panel, tmp_path / "3")
    with pytest.raises(InputError, match="delta"):
        run_verification([good], panel, tmp_path / "4", delta=-0.1)
    with pytest.raises(InputError, match="no candidates"):
        run_verification([], panel, tmp_path / "5")
