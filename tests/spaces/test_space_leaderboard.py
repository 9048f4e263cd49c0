"""The Space's leaderboard tab, through its callback functions, on the shipped leaderboard."""

from __future__ import annotations

import json

import pytest

from hf_posbias.errors import PosbiasError


def test_shipped_leaderboard_sorts_filters_and_plots(space_app, monkeypatch):
    monkeypatch.delenv(space_app.LEADERBOARD_ENV, raising=False)
    rows = space_app.leaderboard_rows()
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    assert {"SciFact-Evidence", "ClimateFEVER-Evidence"} <= set(tasks)
    for task in tasks:
        table = space_app.leaderboard_table(rows, task)
        means = [float(r[2].split()[0]) for r in table]
        assert means == sorted(means, reverse=True)
        by_psi = space_app.leaderboard_table(rows, task, "PSI")
        psis = [float(r[3].split()[0]) for r in by_psi]
        assert psis == sorted(psis)
    task = next(r["task"] for r in rows if "MiniLM" in r["model"])
    # the off-the-shelf model only (trained MiniLM checkpoints may share the board)
    [only] = space_app.leaderboard_table(rows, task, search="sentence-transformers/all-minilm")
    assert "MiniLM" in only[1]
    fig = space_app.leaderboard_curve(rows, task, only[1])
    row = next(r for r in rows if r["model"] == only[1] and r["task"] == task)
    curve = json.loads(row["curve"])
    line = fig.axes[0].lines[0]  # the curve; the error bars add cap lines
    assert list(line.get_ydata()) == pytest.approx([c["ndcg_at_10"] for c in curve])
    with pytest.raises(PosbiasError, match="no model"):
        space_app.leaderboard_curve(rows, tasks[0], "nobody")


def test_leaderboard_source_from_the_environment(space_app, monkeypatch, tmp_path):
    monkeypatch.setenv(space_app.LEADERBOARD_ENV, str(tmp_path))
    with pytest.raises(PosbiasError, match="holds no leaderboard"):
        space_app.leaderboard_rows()
