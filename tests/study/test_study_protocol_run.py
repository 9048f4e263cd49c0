"""A CPU-sized study with the protocol pinned per task: two tiny bases, an evidence task on
both, a zeng2025-scored task on one base only, a standard task (Table 4); rerun redoes nothing."""

from __future__ import annotations

import json

import pytest
from study_fixtures import WORDS, files_with_mtimes, write_task, write_train_data

from hf_posbias.cli import main

pytestmark = pytest.mark.slow  # trains 4 one-step runs of tiny models, evaluates 6 models


@pytest.fixture(scope="module")
def protocol_study(tmp_path_factory):
    from hf_posbias.tasks.beir import write_beir_folder
    from hf_posbias.tasks.builders.standard import build_standard
    from hf_posbias.testing import build_tiny_checkpoint

    root = tmp_path_factory.mktemp("protocol-study")
    text = " ".join(WORDS)
    tiny_a = build_tiny_checkpoint("bert", root / "tiny-a", extra_text=text)
    tiny_b = build_tiny_checkpoint("bert", root / "tiny-b", seed=1, extra_text=text)
    plain = write_beir_folder(
        root / "plain",
        {f"d{i}": ("", f"{WORDS[i]} {WORDS[i + 1]} {WORDS[i + 2]}") for i in range(12)},
        {f"q{i}": WORDS[i + 1] for i in range(12)},
        {f"q{i}": {f"d{i}": 1} for i in range(12)},
    )
    standard = build_standard(str(plain), name="TinyStandard").save(root / "standard")
    spec = {
        "bases": [tiny_a, tiny_b],
        "configs": ["begin", "uniform"],
        "data": write_train_data(root / "train"),
        "tasks": [
            write_task(root / "task"),
            {
                "task": write_task(root / "zeng", name="TinyZeng"),
                "scoring": "zeng2025",
                "bases": [tiny_a],
            },
        ],  # fmt: skip
        "standard": [str(standard)],
        "training": {"max_steps": 1, "global_batch": 4, "max_length": 24},
        "bootstrap": 30,
        "seed": 1,
    }
    path = root / "study.json"
    path.write_text(json.dumps(spec))
    out = root / "s"
    assert main(["study", "run", str(path), "--out", str(out), "--in-process"]) == 0
    return {"out": out, "spec": str(path), "a": tiny_a}


def test_report_holds_table3_table4_and_each_psis_protocol(protocol_study):
    out = protocol_study["out"]
    report = json.loads((out / "report" / "report.json").read_text())
    cells = report["cells"]
    by_task: dict[str, list] = {}
    for cell in cells:
        by_task.setdefault(cell["task"], []).append(cell)
    assert len(by_task["TinyStudyTask"]) == 6  # 2 bases × (base, begin, uniform)
    assert len(by_task["TinyZeng"]) == 3  # one base only
    assert {c["scoring"] for c in by_task["TinyZeng"]} == {"zeng2025"}
    for cell in by_task["TinyStudyTask"] + by_task["TinyZeng"]:
        assert cell["n_buckets"] == 3 and cell["max_seq_length"] == 24
        assert set(cell["truncated"]) == {"begin", "middle", "end"}
    assert all("inclusive" in c["bucket_scheme"] for c in by_task["TinyZeng"])
    assert all("[lo, hi)" in c["bucket_scheme"] for c in by_task["TinyStudyTask"])
    # Documents of ~54 words at 24 tokens: late evidence is cut off, and it is counted.
    assert any(c["truncated"]["end"] > 0 for c in by_task["TinyStudyTask"])
    assert len(report["psi_reductions"]) == 3  # (task, base): 2 + 1

    standard = report["standard"]
    assert {r["task"] for r in standard["rows"]} == {"TinyStandard"}
    assert len(standard["rows"]) == 6
    averages = {a["config"]: a for a in standard["average_over_bases"]}
    assert set(averages) == {"base", "begin", "uniform"}
    for config, average in averages.items():
        rows = [r["ndcg_at_10"] for r in standard["rows"] if r["config"] == config]
        assert average["n_bases"] == 2
        assert average["ndcg_at_10"] == pytest.approx(sum(rows) / 2)
    assert len(standard["vs_base"]) == 4  # 2 bases × (begin, uniform)

    md = (out / "report" / "report.md").read_text()
    assert "## Table 4: standard retrieval, nDCG@10 averaged over the 2 base(s)" in md
    assert "## Table 14: standard retrieval, nDCG@10 per base" in md
    assert md.count("Protocol: ") == 2 and "zeng2025 scoring" in md


def test_rerun_redoes_nothing(protocol_study, capsys):
    out = protocol_study["out"]
    before = files_with_mtimes(out)
    capsys.readouterr()
    argv = ["study", "run", protocol_study["spec"], "--out", str(out), "--in-process"]
    assert main(argv) == 0
    assert "0 run(s) trained, 0 evaluation(s) run, 15 skipped" in capsys.readouterr().out
    after = files_with_mtimes(out)
    rewritten = ("report/", "units/report--report.json")  # the report unit runs every time
    changed = [p for p in after if after[p] != before[p] and not p.startswith(rewritten)]
    assert changed in ([], ["study.json"])
