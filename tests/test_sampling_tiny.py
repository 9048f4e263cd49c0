"""A training set that comes out tiny says so: rows against the budget, in the sample report."""

from __future__ import annotations

from hf_posbias.sampling.draw import TINY_TRAINING_SET, sample_training_set


def _pool(per_cell: int) -> list[dict]:
    return [
        {
            "candidate_id": f"{pos}-{i}::{pos}",
            "doc_id": f"{pos}-{i}",
            "title": "t",
            "query": f"query {pos} {i}",
            "positive": "text",
            "segments": ["a", "b", "c"],
            "length_bin": "256-512",
            "target_position": pos,
            "margin": 0.5,
            "retained": True,
        }
        for pos in ("begin", "middle", "end")
        for i in range(per_cell)
    ]


def test_a_tiny_set_is_reported_with_its_rows_and_budget():
    rows, report = sample_training_set(_pool(2), "begin")
    assert len(rows) == 2 and report.budget == 2
    [note] = [n for n in report.notes if n.startswith("tiny training set")]
    assert note.startswith("tiny training set: 2 rows (budget 2 per bin x 1 bin(s)), under 100")
    assert f"  WARNING {note}" in report.summary_lines()


def test_a_set_of_the_threshold_says_nothing():
    rows, report = sample_training_set(_pool(TINY_TRAINING_SET), "end")
    assert len(rows) == TINY_TRAINING_SET
    assert not any(n.startswith("tiny training set") for n in report.notes)
