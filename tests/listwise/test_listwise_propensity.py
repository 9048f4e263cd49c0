"""Propensities (Eq. 5): counting, normalisation, smoothing, the file, resume, checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.experiment_settings import PropensityConfig
from hf_posbias.listwise.experiments.lists import shuffled
from hf_posbias.listwise.experiments.propensity import (
    check_propensity_support,
    load_propensity,
    omega_from_counts,
    run_propensity,
    transition_counts,
)


def test_counts_follow_the_definition():
    rows = [
        {"input": ["a", "b", "c"], "ranking": ["a", "b", "c"]},
        {"input": ["c", "a", "b"], "ranking": ["a", "b", "c"]},
    ]
    counts = transition_counts(rows, 3)
    assert counts.tolist() == [[1, 0, 1], [1, 1, 0], [0, 1, 1]]
    omega = omega_from_counts(counts)
    assert omega.sum() == pytest.approx(1.0)
    assert omega[0, 0] == pytest.approx(1 / 6)  # # / (|Q| · k · n) with |Q|·n = 2, k = 3
    smooth = omega_from_counts(counts, 1.0)
    assert smooth[0, 1] == pytest.approx(1 / (6 + 9)) and smooth.min() > 0


def test_shuffles_are_seeded_fisher_yates():
    items = [f"d{i}" for i in range(10)]
    assert shuffled(items, 3, "q", 0) == shuffled(items, 3, "q", 0)
    assert shuffled(items, 3, "q", 0) != shuffled(items, 3, "q", 1)
    assert sorted(shuffled(items, 3, "q", 0)) == items


def test_cli_writes_propensity_json_and_heatmap(beir_task, tmp_path, capsys):
    out = tmp_path / "prop"
    code = main(
        [
            "listwise",
            "propensity",
            "--reranker",
            "bm25",
            "--task",
            str(beir_task),
            "--k",
            "5",
            "--shuffles",
            "6",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    data = json.loads((out / "propensity.json").read_text())
    assert (data["k"], data["n"], data["queries"], data["smoothing"]) == (5, 6, 4, 0.0)
    omega = np.array(data["omega"])
    assert omega.shape == (5, 5) and omega.sum() == pytest.approx(1.0)
    assert np.array(data["counts"]).sum() == 4 * 5 * 6
    # A pointwise reranker's output is the same for every shuffle: each input slot's row is
    # spread over the output slots by the shuffles, and each column sums to 1/k.
    assert omega.sum(axis=0) == pytest.approx([0.2] * 5)
    assert data["diagonal_mass"] == pytest.approx(float(np.trace(omega)))
    assert (out / "propensity.png").stat().st_size > 1000
    assert load_propensity(out / "propensity.json", 5).shape == (5, 5)
    assert "diagonal mass" in capsys.readouterr().out


def test_propensity_resumes_and_smoothing_reuses_the_rankings(beir_task, tmp_path):
    from hf_posbias.listwise.experiments.taskio import load_rerank_task
    from hf_posbias.rerankers.loading import load_reranker

    task = load_rerank_task(beir_task)
    bm25 = load_reranker("bm25", corpus_texts=[p.content() for p in task.corpus.values()])
    calls = []

    class Stop:
        name, window_size = bm25.name, bm25.window_size

        def rank_windows(self, windows):
            if len(calls) == 1:
                raise KeyboardInterrupt
            calls.append(1)
            return bm25.rank_windows(windows)

        def describe(self):
            return bm25.describe()

    out = tmp_path / "p"
    with pytest.raises(KeyboardInterrupt):
        run_propensity(Stop(), task, out, PropensityConfig(k=5, shuffles=3), show_progress=False)
    calls.clear()

    class Count(Stop):
        def rank_windows(self, windows):
            calls.append(1)
            return bm25.rank_windows(windows)

    first = run_propensity(
        Count(), task, out, PropensityConfig(k=5, shuffles=3), show_progress=False
    )
    assert len(calls) == 3  # 4 queries, 1 finished before the interruption
    calls.clear()
    smoothed = run_propensity(
        Count(), task, out, PropensityConfig(k=5, shuffles=3, smoothing=0.5), show_progress=False
    )
    assert calls == [] and smoothed["counts"] == first["counts"]
    assert smoothed["empty_cells"] == 0


def test_load_propensity_refuses_bad_matrices(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"omega": [[0.5, 0.5]]}))
    with pytest.raises(InputError, match="square"):
        load_propensity(path)
    path.write_text(json.dumps({"omega": [[0.5, 0.0], [0.0, 0.5]]}))
    with pytest.raises(InputError, match="2×2 but the training windows hold 3"):
        load_propensity(path, 3)
    path.write_text(json.dumps({"omega": [[0.5, 0.5], [0.5, 0.5]]}))
    with pytest.raises(InputError, match="sum to 1"):
        load_propensity(path)
    omega = np.array([[0.5, 0.0], [0.0, 0.5]])
    check_propensity_support(omega, [[0, 1]])  # visits only the diagonal: fine
    with pytest.raises(InputError, match="--smoothing"):
        check_propensity_support(omega, [[0, 1], [1, 0]])


def test_bad_options_fail_before_work(beir_task, tmp_path, capsys):
    for extra, message in (
        (["--smoothing", "-1"], "--smoothing"),
        (["--shuffles", "0"], "--shuffles"),
    ):
        code = main(
            [
                "listwise",
                "propensity",
                "--reranker",
                "bm25",
                "--task",
                str(beir_task),
                "--out",
                str(tmp_path / "o"),
                "--k",
                "5",
                *extra,
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and message in err and not (tmp_path / "o").exists()
