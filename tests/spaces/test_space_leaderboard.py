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
    assert only[1] == "all-MiniLM-L6-v2"  # named as a user names it, not by its Hub org
    fig = space_app.leaderboard_curve(rows, task, only[1])
    row = next(r for r in rows if r["name"] == only[1] and r["task"] == task)
    curve = json.loads(row["curve"])
    line = fig.axes[0].lines[0]  # the curve; the error bars add cap lines
    assert list(line.get_ydata()) == pytest.approx([c["ndcg_at_10"] for c in curve])
    with pytest.raises(PosbiasError, match="no model"):
        space_app.leaderboard_curve(rows, tasks[0], "nobody")


def test_leaderboard_source_from_the_environment(space_app, monkeypatch, tmp_path):
    monkeypatch.setenv(space_app.LEADERBOARD_ENV, str(tmp_path))
    with pytest.raises(PosbiasError, match="holds no leaderboard"):
        space_app.leaderboard_rows()


def test_shipped_rows_are_named_as_a_user_names_them_and_say_how_they_were_made(
    space_app, monkeypatch
):
    monkeypatch.delenv(space_app.LEADERBOARD_ENV, raising=False)
    rows = space_app.leaderboard_rows()
    names = {r["name"] for r in rows}
    assert {"BM25", "all-MiniLM-L6-v2"} <= names
    # No internal folder (bases/…, models/…) nor a raw pipeline id is shown.
    assert not any(name.startswith(("bases/", "models/", "mteb/")) for name in names)
    for row in rows:
        # Every row names the command that made it; the study's rows name the study.
        assert row["made_by"].startswith(("posbias evaluate", "make demo, then posbias study"))
    study_rows = [r for r in rows if r["model"].startswith(("bases/", "models/"))]
    assert study_rows and all("docs/study.md" in r["made_by"] for r in study_rows)
    note = space_app.made_by_note(rows, "SciFact-Evidence")
    assert "all-MiniLM-L6-v2 trained on begin (60 steps)" in note
    # A board without models.json still gets readable names.
    assert space_app.board_name("models/posbias-e5-small-uniform") == "posbias-e5-small-uniform"


def test_the_shipped_board_names_each_model_as_the_space_does(space_app, monkeypatch):
    """One function names a row (leaderboard.display_name): the board's own data and Hub
    card carry the name the Space shows, never an internal folder."""
    from hf_posbias.evaluation.reports.leaderboard import read_leaderboard

    monkeypatch.delenv(space_app.LEADERBOARD_ENV, raising=False)
    shown = {(r["task"], r["model"]): r["name"] for r in space_app.leaderboard_rows()}
    board = space_app.SHIPPED_LEADERBOARD
    for folder in (board, board / "hub"):
        stored = {(r["task"], r["model"]): r["name"] for r in read_leaderboard(folder)}
        assert stored == shown
    begin = ("SciFact-Evidence", "models/posbias-all-minilm-l6-v2-begin")
    assert shown[begin] == "all-MiniLM-L6-v2 trained on begin (60 steps)"
    card = (board / "hub" / "README.md").read_text()
    assert "| all-MiniLM-L6-v2 trained on begin (60 steps) |" in card
    assert "models/posbias" not in card and "bases/posbias" not in card
    assert space_app.board_name is space_app.display_name


def test_a_hub_benchmark_board_is_built_from_its_eval_results(space_app, monkeypatch):
    """``hub-benchmark:<repo>``: the rows ``posbias leaderboard --from-hub`` builds (here two
    models whose repos hold no per-query table: no interval, no tie test)."""
    from hf_posbias.evaluation.reports import leaderboard

    asked = []

    def board(task_repo, model_repos=()):
        asked.append(task_repo)
        row = {"task": "ToyPos", "model": "me/a", "name": "me/a", "rank": 1, "tied": None,
               "mean": 0.5, "psi": 0.2, "harmonic_mean": 0.48, "slope": None, "n_queries": None,
               "curve": "[]"}  # fmt: skip
        return [row, {**row, "model": "me/b", "name": "me/b", "rank": 2, "mean": 0.4}]

    monkeypatch.setattr(leaderboard, "hub_board_rows", board)
    monkeypatch.setenv(space_app.LEADERBOARD_ENV, "hub-benchmark:posbias-test/ToyPos")
    rows = space_app.leaderboard_rows()
    assert asked == ["posbias-test/ToyPos"] and all(r["made_by"] == "" for r in rows)
    table = space_app.leaderboard_table(rows, "ToyPos")
    assert [r[:4] for r in table] == [
        ["1", "me/a", "0.500", "0.200"],
        ["2", "me/b", "0.400", "0.200"],
    ]
