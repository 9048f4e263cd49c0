"""The study report's numbers against a hand recomputation from synthetic per-query tables."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hf_posbias.evaluation.runs.exports import write_per_query
from hf_posbias.evaluation.summary import EvaluationSummary
from hf_posbias.study.report import write_report
from hf_posbias.study.report_sources import Source

BUCKETS = ["begin", "middle", "end"]
# Per configuration: the mean nDCG@10 the queries of each bucket are drawn around.
PROFILES = {
    "base": (0.8, 0.5, 0.6),
    "begin": (0.9, 0.4, 0.5),
    "middle": (0.6, 0.7, 0.5),
    "end": (0.5, 0.45, 0.8),
    "uniform": (0.75, 0.65, 0.7),
}


def _sources(tmp_path, pooling=None, model="m"):
    rng = np.random.default_rng(0)
    sources = []
    for config, means in PROFILES.items():
        rows = [
            {"query_id": f"{b}{q}", "bucket": b,
             "ndcg_at_10": float(np.clip(rng.normal(mean, 0.15), 0, 1))}
            for b, mean in zip(BUCKETS, means)
            for q in range(40)
        ]  # fmt: skip
        path = write_per_query(rows, tmp_path / f"{model}-{config}-{pooling}.parquet")
        summary = EvaluationSummary.from_scores(
            model, "T", BUCKETS, dict(zip(BUCKETS, means)), n_queries={b: 40 for b in BUCKETS}
        )
        sources.append(Source("T", model, config, pooling, summary, str(path)))
    return sources


def test_cells_reductions_and_direction_recompute(tmp_path):
    import pyarrow.parquet as pq

    sources = _sources(tmp_path)
    target = write_report(sources, tmp_path / "r", n_resamples=200, seed=1)
    report = json.loads(target.read_text())
    psi = {}
    for cell in report["cells"]:
        rows = pq.read_table(cell["per_query"]).to_pylist()
        means = {b: np.mean([r["ndcg_at_10"] for r in rows if r["bucket"] == b]) for b in BUCKETS}
        assert cell["per_position"] == pytest.approx(means)
        assert cell["mean"] == pytest.approx(np.mean(list(means.values())))
        assert cell["psi"] == pytest.approx(1 - min(means.values()) / max(means.values()))
        assert cell["ndcg_at_10_all"] == pytest.approx(np.mean([r["ndcg_at_10"] for r in rows]))
        low, high = cell["ci"]["psi"]
        assert low <= cell["psi"] <= high
        psi[cell["config"]] = cell["psi"]
    [reduction] = report["psi_reductions"]
    worst = max(("begin", "middle", "end"), key=psi.get)
    assert reduction["worst"] == worst
    assert reduction["psi_reduction"] == pytest.approx(1 - psi["uniform"] / psi[worst])
    assert reduction["ci"][0] <= reduction["psi_reduction"] <= reduction["ci"][1]
    assert reduction["p_value"] < 0.05  # uniform's profile is much flatter than the skewed ones
    direction = {r["config"]: r for r in report["direction"]}
    assert direction["begin"]["raised"] and direction["end"]["raised"]
    assert direction["middle"]["raised"]  # 0.7 against the base's 0.5 at middle
    assert direction["begin"]["delta"] == pytest.approx(
        report["cells"][1]["per_position"]["begin"] - report["cells"][0]["per_position"]["begin"]
    )
    text = (tmp_path / "r" / "report.md").read_text()
    assert "| m |" in text and "PSI reduction" in text
    csv_lines = (tmp_path / "r" / "report.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + len(PROFILES) * len(BUCKETS)


def test_pooling_axis_rows(tmp_path):
    sources = _sources(tmp_path, "cls") + _sources(tmp_path, "mean")
    report = json.loads(write_report(sources, tmp_path / "r", n_resamples=50, seed=1).read_text())
    assert {(c["pooling"], c["config"]) for c in report["cells"]} == {
        (p, c) for p in ("cls", "mean") for c in PROFILES
    }
    assert len(report["psi_reductions"]) == 2
    psi_table = (tmp_path / "r" / "report.md").read_text().split("PSI:")[1]
    assert "| m · cls |" in psi_table and "| m · mean |" in psi_table


def test_standard_task_is_reported_in_the_plain_retrieval_table_only(tmp_path):
    """A plain BEIR task (one bucket ``all``): no PSI table, no curves, no reduction; its
    nDCG@10 sits in the plain-retrieval table with ``average_standard`` over standard tasks."""
    rng = np.random.default_rng(1)
    sources = _sources(tmp_path)
    standard = {}
    for config in PROFILES:
        rows = [
            {"query_id": f"s{q}", "bucket": "all", "ndcg_at_10": float(rng.uniform(0.3, 0.9))}
            for q in range(30)
        ]
        standard[config] = np.mean([r["ndcg_at_10"] for r in rows])
        path = write_per_query(rows, tmp_path / f"std-{config}.parquet")
        summary = EvaluationSummary.from_scores(
            "m", "S", ["all"], {"all": standard[config]}, n_queries={"all": 30}
        )
        sources.append(Source("S", "m", config, None, summary, str(path)))
    report = json.loads(write_report(sources, tmp_path / "r", n_resamples=50, seed=1).read_text())
    assert {c["task"] for c in report["cells"] if c["standard"]} == {"S"}
    assert [r["task"] for r in report["psi_reductions"]] == ["T"]
    assert {r["task"] for r in report["direction"]} == {"T"}
    for row in report["averages"]:
        assert row["S"] == pytest.approx(standard[row["config"]])
        assert row["average_standard"] == pytest.approx(standard[row["config"]])
        assert row["average"] == pytest.approx((row["S"] + row["T"]) / 2)
    text = (tmp_path / "r" / "report.md").read_text()
    assert "## S" not in text and "## T" in text and "average_standard" in text
    assert not (tmp_path / "r" / "curves-S.png").exists()
    assert (tmp_path / "r" / "curves-T.png").exists()


def test_remedy_rows_follow_the_base_and_leave_reductions_alone(tmp_path):
    """A ``base +maxp`` row: a cell like any other, placed after the base, with a paired Δ
    against the base; the PSI reduction and the direction check are those without it."""
    plain = _sources(tmp_path)
    without = json.loads(write_report(plain, tmp_path / "a", n_resamples=100, seed=1).read_text())
    rows = [
        {"query_id": f"{b}{q}", "bucket": b, "ndcg_at_10": 0.7 + 0.001 * q}
        for b in BUCKETS
        for q in range(40)
    ]  # flat: every position 0.7195
    path = write_per_query(rows, tmp_path / "m-base-maxp.parquet")
    summary = EvaluationSummary.from_scores(
        "m", "T", BUCKETS, dict.fromkeys(BUCKETS, 0.7195), n_queries={b: 40 for b in BUCKETS}
    )
    remedied = [*plain, Source("T", "m", "base +maxp", None, summary, str(path))]
    target = write_report(remedied, tmp_path / "b", n_resamples=100, seed=1)
    report = json.loads(target.read_text())
    assert report["psi_reductions"] == without["psi_reductions"]
    assert report["direction"] == without["direction"]
    cells = {c["config"]: c for c in report["cells"]}
    assert cells["base +maxp"]["psi"] == pytest.approx(0.0)
    [delta] = report["remedies"]
    assert (delta["config"], delta["remedy"]) == ("base +maxp", "maxp")
    assert delta["delta_mean"] == pytest.approx(cells["base +maxp"]["mean"] - cells["base"]["mean"])
    assert delta["delta_psi"] == pytest.approx(-cells["base"]["psi"])
    assert delta["psi_ci"][1] < 0 and delta["psi_p_value"] < 0.05  # the base's PSI is ~0.38
    text = (tmp_path / "b" / "report.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| model |"))
    assert header.index("| base |") < header.index("| base +maxp |")
    assert "## Inference-time remedies" in text
    assert "base +maxp" in (tmp_path / "b" / "report.csv").read_text()


def test_table_4_and_table_14_in_yhp26s_layout():
    """Table 4: a row per BEIR set and their average, each cell averaged over the bases;
    Table 14: a block per base whose average row is the mean over the sets (YHP26 000:210-216,
    547-596)."""
    from hf_posbias.study.standard import standard_markdown, standard_view

    scores = {
        ("SciFact", "a"): 0.2,
        ("SciFact", "b"): 0.4,
        ("FEVER", "a"): 0.6,
        ("FEVER", "b"): 1.0,
    }
    per_query = {
        (task, model, None): {"begin": {"all": {"q1": value, "q2": value}}}
        for (task, model), value in scores.items()
    }
    view = standard_view(per_query, n_resamples=20, seed=0)
    over_tasks = {a["model"]: a["ndcg_at_10"] for a in view["average_over_tasks"]}
    assert over_tasks == pytest.approx({"a": 0.4, "b": 0.7})
    over_bases = {a["task"]: a["ndcg_at_10"] for a in view["average_over_bases"]}
    assert over_bases == pytest.approx({"SciFact": 0.3, "FEVER": 0.8, "average": 0.55})
    lines = standard_markdown(view, ["begin"]).splitlines()
    table4 = lines[lines.index("| standard task | begin |") :][2:5]
    assert [line.split(" | ")[0] for line in table4] == ["| SciFact", "| FEVER", "| average"]
    assert table4[2].startswith("| average | 0.5500")
    block = lines[lines.index("### b") :]
    assert block[5].startswith("| FEVER | 1.0000") and block[6] == "| average | 0.7000 |"
