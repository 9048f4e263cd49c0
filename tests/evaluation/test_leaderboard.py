"""posbias leaderboard: sorting, ties from the paired test, outputs, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hf_posbias.cli import main
from hf_posbias.evaluation.reports.leaderboard import (
    LeaderboardSettings,
    build_leaderboard,
    display_name,
    read_board_labels,
    read_leaderboard,
    write_leaderboard,
)
from hf_posbias.evaluation.runs.exports import write_per_query
from hf_posbias.evaluation.runs.runner import _intervals
from hf_posbias.evaluation.summary import EvaluationSummary, write_summary_json
from hf_posbias.statistics.levels import position_trend
from hf_posbias.statistics.psi import harmonic_mean

BUCKETS = ["begin", "middle", "end"]


def _run(folder, model, scores, task="Toy"):
    """A run folder as `posbias evaluate` writes it, from per-query scores per bucket."""
    rows = []
    for b_index, bucket in enumerate(BUCKETS):
        for q, value in enumerate(scores[bucket]):
            rel = (b_index + (q + 0.5) / len(scores[bucket])) / 3
            rows.append(
                {
                    "query_id": f"{bucket}{q}",
                    "bucket": bucket,
                    "ndcg_at_10": float(value),
                    "relative_position": rel,
                    "doc_length": 100 + q,
                }
            )
    path = write_per_query(rows, folder / "per_query" / f"{task}.parquet")
    means = {b: float(np.mean(scores[b])) for b in BUCKETS}
    summary = EvaluationSummary.from_scores(
        model,
        task,
        BUCKETS,
        means,
        n_queries={b: len(scores[b]) for b in BUCKETS},
        model_name=model,
        intervals=_intervals(rows, 300, 0),
        per_query_path=str(path),
        harmonic_mean=harmonic_mean(list(means.values())),
        trend=position_trend(
            [r["relative_position"] for r in rows], [r["ndcg_at_10"] for r in rows]
        ),
    )
    write_summary_json([summary], folder)
    return folder


@pytest.fixture
def runs(tmp_path):
    rng = np.random.default_rng(0)
    base = {b: np.clip(rng.normal(0.5, 0.2, 40), 0, 1) for b in BUCKETS}
    strong = {b: np.clip(v + 0.3, 0, 1) for b, v in base.items()}
    twin = {b: np.clip(v + rng.normal(0, 0.01, 40), 0, 1) for b, v in base.items()}
    return [
        _run(tmp_path / "base", "org/base", base),
        _run(tmp_path / "strong", "org/strong", strong),
        _run(tmp_path / "twin", "org/twin", twin),
    ]


def test_sorted_with_ties_and_every_output(runs, tmp_path):
    settings = LeaderboardSettings(
        runs=[str(r) for r in runs], out=str(tmp_path / "lb"), resamples=300
    )
    [(task, rows)] = write_leaderboard(settings).items()
    assert task == "Toy"
    assert rows[0]["model"] == "org/strong" and rows[0]["rank"] == 1 and not rows[0]["tied"]
    assert rows[0]["p_next"] < 0.05
    # base and its near-copy cannot be separated: tied, same rank
    assert {rows[1]["model"], rows[2]["model"]} == {"org/base", "org/twin"}
    assert rows[1]["tied"] and rows[1]["rank"] == rows[2]["rank"] == 2
    assert rows[0]["mean_low"] < rows[0]["mean"] < rows[0]["mean_high"]
    assert rows[0]["slope"] is not None and rows[0]["slope_low"] <= rows[0]["slope_high"]
    curve = json.loads(rows[0]["curve"])
    assert [c["bucket"] for c in curve] == BUCKETS and all(c["low"] <= c["high"] for c in curve)
    out = tmp_path / "lb"
    md = (out / "leaderboard.md").read_text()
    assert "## Toy" in md and "| 2 = |" in md
    assert (out / "leaderboard.csv").read_text().count("\n") == 4
    assert len(read_leaderboard(out)) == 3 and len(read_leaderboard(out / "hub")) == 3
    assert "configs:" in (out / "hub" / "README.md").read_text()


def test_sort_by_psi_puts_the_flattest_first(runs, tmp_path):
    tables = build_leaderboard(
        LeaderboardSettings(
            runs=[str(r) for r in runs], out=str(tmp_path), sort_by="psi", resamples=100
        )
    )
    psis = [r["psi"] for r in tables["Toy"]]
    assert psis == sorted(psis)


def test_runs_of_different_tasks_are_one_line_error(runs, tmp_path, capsys):
    other = _run(tmp_path / "other", "org/other", {b: [0.5] * 5 for b in BUCKETS}, task="Else")
    code = main(["leaderboard", str(runs[0]), str(other), "--out", str(tmp_path / "lb")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: the runs cover different tasks")
    assert err.count("\n") == 1


def test_a_run_may_cover_some_of_the_tasks(runs, tmp_path):
    from hf_posbias.evaluation.summary import read_summaries

    toy = _run(tmp_path / "x-toy", "org/both", {b: [0.9] * 5 for b in BUCKETS})
    other = _run(tmp_path / "x-else", "org/both", {b: [0.4] * 5 for b in BUCKETS}, task="Else")
    both = tmp_path / "both"
    write_summary_json([*read_summaries(toy), *read_summaries(other)], both)
    tables = build_leaderboard(
        LeaderboardSettings(runs=[str(runs[0]), str(both)], out=str(tmp_path / "lb"), resamples=50)
    )
    assert [r["model"] for r in tables["Toy"]] == ["org/both", "org/base"]
    assert [r["model"] for r in tables["Else"]] == ["org/both"]


def test_names_name_every_row_in_the_tables_the_card_and_the_data(runs, tmp_path):
    """`posbias leaderboard --names models.json`: the board reads as the Space shows it."""
    names = tmp_path / "names.json"
    names.write_text(
        json.dumps(
            {
                "_about": "a comment",
                "org/strong": {"name": "Strong (trained on begin)", "made_by": "posbias train"},
            }
        )
    )
    out = tmp_path / "lb"
    argv = ["leaderboard", *map(str, runs), "--out", str(out), "--names", str(names)]
    assert main([*argv, "--n-resamples", "100", "--no-progress"]) == 0
    by_model = {r["model"]: r["name"] for r in read_leaderboard(out)}
    # A labelled id takes its label; the others lose their organisation, as in the Space.
    assert by_model == {"org/strong": "Strong (trained on begin)", "org/base": "org/base",
                        "org/twin": "org/twin"}  # fmt: skip
    assert {r["name"] for r in read_leaderboard(out / "hub")} == set(by_model.values())
    card = (out / "hub" / "README.md").read_text()
    assert "| 1 | Strong (trained on begin) |" in card
    assert "| org/strong |" not in (out / "leaderboard.md").read_text()
    assert json.loads((out / "models.json").read_text()) == json.loads(names.read_text())
    assert display_name("org/strong", read_board_labels(out)) == "Strong (trained on begin)"


def test_a_missing_names_file_is_a_one_line_error(runs, tmp_path, capsys):
    code = main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "lb"),
                 "--names", str(tmp_path / "nope.json")])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err.strip().endswith("no such names file (a models.json)")
