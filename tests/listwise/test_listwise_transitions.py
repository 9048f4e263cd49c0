"""Q26 Fig. 3: the training-data transition heatmap (input position × target rank)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hf_posbias.cli import main
from hf_posbias.listwise.training.trainset import write_train_set
from hf_posbias.listwise.training.transitions import target_transition_counts, transitions


def _rows(n: int = 6, k: int = 4) -> list[dict]:
    """Rows whose input order is the target order: every passage on the diagonal."""
    rows = []
    for q in range(n):
        ids = [f"q{q}d{i}" for i in range(k)]
        rows.append(
            {"query_id": f"q{q}", "query": "?", "doc_ids": ids, "passages": ids, "target": ids}
        )
    return rows


def test_counts_are_input_position_by_target_rank():
    rows = _rows(3)
    rows[0] = dict(rows[0], target=list(reversed(rows[0]["doc_ids"])))
    counts = target_transition_counts(rows)
    expected = 2 * np.eye(4, dtype=int) + np.fliplr(np.eye(4, dtype=int))
    assert counts.tolist() == expected.tolist()


def test_pos_aug_flattens_a_diagonal_training_set():
    payload = transitions(_rows(), augmentation="pos-aug", groups=4, seed=0)
    assert payload["original"]["diagonal_mass"] == 1.0
    assert payload["original"]["tv_from_uniform"] == pytest.approx(0.75)
    augmented = np.array(payload["augmented"]["counts"])
    # Pos-Aug with k groups puts every passage in every slot once per source row.
    assert (augmented == 6).all() and payload["augmented"]["tv_from_uniform"] == 0.0
    assert payload["augmented"]["rows"] == 24


def test_the_cli_writes_json_and_figure_and_refuses_mixed_windows(tmp_path, capsys):
    write_train_set(tmp_path / "train", _rows(), {"source": "test"})
    out = tmp_path / "fig3"
    argv = ["listwise", "transitions", "--data", str(tmp_path / "train"), "--out", str(out)]
    assert main([*argv, "--groups", "2"]) == 0
    text = capsys.readouterr().out
    assert "original: 6 rows" in text and "augmented: 12 rows" in text
    payload = json.loads((out / "transitions.json").read_text())
    assert payload["augmentation"] == "pos-aug" and payload["groups"] == 2
    assert (out / "transitions.png").stat().st_size > 0
    mixed = _rows()
    mixed[1] = dict(mixed[1], doc_ids=mixed[1]["doc_ids"][:2], passages=mixed[1]["doc_ids"][:2],
                    target=mixed[1]["doc_ids"][:2])  # fmt: skip
    write_train_set(tmp_path / "mixed", mixed, {"source": "test"})
    argv = ["listwise", "transitions", "--data", str(tmp_path / "mixed")]
    code = main([*argv, "--out", str(tmp_path / "fig3-mixed")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "needs one window size" in err and "\n" not in err
