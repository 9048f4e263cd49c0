"""A δ change re-filters the scored pool from its stored margins, without scoring again, and
gives the files a fresh run at that δ gives."""

from __future__ import annotations

import json

import pytest

from hf_posbias.errors import InputError
from hf_posbias.verification.panel import parse_panel
from hf_posbias.verification.stage import run_verification

ROWS = [
    {
        "candidate_id": f"d{i}::end",
        "doc_id": f"d{i}",
        "length_bin": "256-512",
        "target_position": "end",
        "query": query,
        "segments": segments,
    }
    for i, (query, segments) in enumerate(
        [
            ("where do owls nest", ["lions hunt", "fish swim", "owls nest in old trees"]),
            ("owls and lions", ["lions hunt owls", "fish swim", "owls nest in old trees"]),
            ("fish", ["fish hunt", "fish swim", "owls nest"]),
        ]
    )
]


class CountingPanel:
    """The BM25 panel, counting the candidates it scores."""

    def __init__(self) -> None:
        self.panel = parse_panel("bm25")
        self.scored = 0

    def __getattr__(self, name):
        return getattr(self.panel, name)

    def score(self, shard, progress=True):
        self.scored += len(shard)
        return self.panel.score(shard, progress=progress)


def test_a_delta_change_refilters_without_scoring(tmp_path):
    out = tmp_path / "scored"
    first, report = run_verification(ROWS, parse_panel("bm25"), out, delta=0.9, progress=False)
    margins = [r["margin"] for r in first]
    assert len(set(r["retained"] for r in first)) == 2  # δ = 0.9 keeps some, drops some
    panel = CountingPanel()
    again, report = run_verification(ROWS, panel, out, delta=0.0, progress=False)
    assert panel.scored == 0  # nothing scored again
    assert [r["margin"] for r in again] == margins
    assert [r["retained"] for r in again] == [m >= 0.0 for m in margins]
    assert report.retained == sum(m >= 0.0 for m in margins)
    fresh = tmp_path / "fresh"
    run_verification(ROWS, parse_panel("bm25"), fresh, delta=0.0, progress=False)
    for name in ("manifest.json", "shards/shard-00000.parquet"):
        assert (out / name).read_bytes() == (fresh / name).read_bytes(), name
    # the report alike but for the pairs this call scored (none: a re-filter scores nothing)
    unscored = ("pairs_total", "pairs_scored")
    refiltered, made = (json.loads((d / "report.json").read_text()) for d in (out, fresh))
    assert {k: v for k, v in refiltered.items() if k not in unscored} == {
        k: v for k, v in made.items() if k not in unscored
    }
    assert refiltered["pairs_scored"] == 0


def test_other_changes_are_still_refused(tmp_path):
    out = tmp_path / "scored"
    run_verification(ROWS, parse_panel("bm25"), out, delta=0.3, progress=False)
    with pytest.raises(InputError, match="holds a run with other parameters"):
        run_verification(ROWS[:2], parse_panel("bm25"), out, delta=0.1, progress=False)
