"""PSI: the formula module and the ``evaluate`` metric module loaded offline by path."""

from __future__ import annotations

import pytest

from hf_posbias.errors import InputError
from hf_posbias.evaluation.metrics import psi_metric_path
from hf_posbias.evaluation.statistics.psi import psi, summarize_positions, worst_relative_drop


def test_psi_known_values():
    assert psi([0.5, 0.4, 0.25]) == pytest.approx(0.5)
    assert psi({"begin": 0.8, "end": 0.8}) == 0.0
    assert psi([0.0, 0.3]) == 1.0
    assert worst_relative_drop([0.5, 0.6, 0.4]) == pytest.approx(0.2)
    assert worst_relative_drop([0.2, 0.5]) == 0.0


def test_psi_undefined_and_bad_values():
    with pytest.raises(InputError, match="undefined"):
        psi([0.0, 0.0, 0.0])
    for bad in ([], [0.1, float("nan")], [0.2, -0.1], [float("inf")]):
        with pytest.raises(InputError):
            psi(bad)


def test_summary_warns_about_empty_buckets():
    with pytest.warns(UserWarning, match="buckets without queries: middle"):
        s = summarize_positions({"begin": 0.6, "middle": None, "end": 0.3})
    assert s.empty_buckets == ["middle"] and s.mean == pytest.approx(0.45)
    assert s.psi == pytest.approx(0.5)


@pytest.fixture(scope="module")
def metric():
    import evaluate

    return evaluate.load(str(psi_metric_path()))


def test_metric_loads_offline_and_matches_the_formula(metric, monkeypatch):
    import os

    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # conftest: the Hub is never contacted
    scores = [0.61, 0.42, 0.55, 0.3]
    out = metric.compute(scores=scores, positions=["a", "b", "c", "d"])
    direct = summarize_positions(dict(zip("abcd", scores)))
    assert out["psi"] == pytest.approx(direct.psi)
    assert out["mean"] == pytest.approx(sum(scores) / 4)
    assert out["worst_drop"] == pytest.approx(direct.worst_drop)
    assert (out["best_position"], out["worst_position"]) == ("a", "d")
    assert metric.compute(scores=[0.5, 0.25])["worst_position"] == "p2"
    assert "Zeng" in metric.citation and "1 - min(s) / max(s)" in metric.description


def test_metric_errors_and_empty_buckets(metric):
    with pytest.raises(InputError, match="undefined"):
        metric.compute(scores=[0.0, 0.0], positions=["x", "y"])
    with pytest.raises(InputError, match="unique"):
        metric.compute(scores=[0.1, 0.2], positions=["x", "x"])
    with pytest.warns(UserWarning, match="buckets without queries"):
        out = metric.compute(scores=[0.6, None, 0.3], positions=["begin", "middle", "end"])
    assert out["empty_positions"] == ["middle"] and out["psi"] == pytest.approx(0.5)
    metric.add_batch(scores=[0.2, 0.4], positions=["p", "q"])
    assert metric.compute()["psi"] == pytest.approx(0.5)


def test_metric_card_has_the_evaluate_header():
    card = (psi_metric_path() / "README.md").read_text()
    header = card.split("---")[1]
    for key in ("title: PSI", "tags:", "- evaluate", "- metric", "description:"):
        assert key in header
    for section in ("## Metric Description", "### Inputs", "### Output Values", "## Citation"):
        assert section in card
    assert "2505.13950" in card


def test_metric_cites_the_one_z25_entry():
    from hf_posbias.citations import Z25

    assert Z25 in (psi_metric_path() / "README.md").read_text()  # the Hub card: verbatim copy
    assert "_CITATION = citations.Z25" in (psi_metric_path() / "psi.py").read_text()
