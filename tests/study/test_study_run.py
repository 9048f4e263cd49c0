"""`posbias study run` end to end on CPU: 2 bases × 4 configurations, killed and resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from study_fixtures import files_with_mtimes

from hf_posbias.cli import main

pytestmark = pytest.mark.slow  # a 2 × 4 study: trains 8 runs, evaluates 10 models


def test_study_trains_evaluates_every_model_once_and_reports(study, study_inputs, capsys):
    from hf_posbias.study.layout import EVAL_MARKER, study_models
    from hf_posbias.study.spec import spec_from_folder

    spec = spec_from_folder(study)
    models = study_models(spec, study)
    assert len(models) == 10  # 2 bases × (untrained + 4 configurations)
    assert sum(m.trained for m in models) == 8
    markers = sorted(study.glob(f"eval/*/*/{EVAL_MARKER}"))
    assert len(markers) == 10
    for model in models:
        assert (Path(model.folder) / ("posbias_training.json" if model.trained else
                                      "posbias_study_base.json")).is_file()  # fmt: skip
    # The untrained base has the checkpoints' settings: prefix, length, pooling.
    minilm = [m for m in models if m.base == study_inputs["minilm"]]
    base = json.loads((Path(minilm[0].folder) / "posbias_study_base.json").read_text())
    trained = json.loads((Path(minilm[1].folder) / "posbias_training.json").read_text())
    assert base["query_prefix"] == trained["query_prefix"] == "query: "
    assert base["max_seq_length"] == trained["max_length"]
    assert base["pooling"] == trained["pooling"]
    report = json.loads((study / "report" / "report.json").read_text())
    assert len(report["cells"]) == 10 and len(report["psi_reductions"]) == 2
    assert {c["config"] for c in report["cells"]} == {"base", "begin", "middle", "end", "uniform"}
    assert (study / "report" / "curves-TinyStudyTask.png").read_bytes()[:4] == b"\x89PNG"
    assert "| model |" in (study / "report" / "report.md").read_text()

    # A rerun does nothing and leaves every file as it was.
    before = files_with_mtimes(study)
    capsys.readouterr()
    assert main(["study", "run", study_inputs["spec"], "--out", str(study), "--in-process"]) == 0
    out = capsys.readouterr().out
    assert "0 run(s) trained, 0 evaluation(s) run, 10 skipped" in out
    after = files_with_mtimes(study)
    assert set(after) == set(before)
    # The report (and its unit's record) is written again on every run.
    rewritten = ("report/", "units/report--report.json")
    changed = [p for p in after if after[p] != before[p] and not p.startswith(rewritten)]
    assert changed == ["study.json"] or changed == []


def test_report_cells_recompute_from_per_query_tables(study):
    import pyarrow.parquet as pq

    report = json.loads((study / "report" / "report.json").read_text())
    for cell in report["cells"]:
        rows = pq.read_table(study / cell["per_query"]).to_pylist()
        for bucket, value in cell["per_position"].items():
            scores = [r["ndcg_at_10"] for r in rows if r["bucket"] == bucket]
            assert value == pytest.approx(sum(scores) / len(scores))
            assert cell["n_queries"][bucket] == len(scores)
            low, high = cell["ci"]["per_position"][bucket]
            assert low <= value + 1e-12 and value <= high + 1e-12
        everything = [r["ndcg_at_10"] for r in rows]
        assert cell["ndcg_at_10_all"] == pytest.approx(sum(everything) / len(everything))
        values = list(cell["per_position"].values())
        assert cell["mean"] == pytest.approx(sum(values) / len(values))
        if max(values) > 0:
            assert cell["psi"] == pytest.approx(1 - min(values) / max(values))
    psi = {(c["model"], c["config"]): c["psi"] for c in report["cells"]}
    for row in report["psi_reductions"]:
        worst = max(psi[(row["model"], c)] for c in ("begin", "middle", "end"))
        assert row["psi_reduction"] == pytest.approx(1 - psi[(row["model"], "uniform")] / worst)
        assert 0 < row["p_value"] <= 1
    assert len(report["direction"]) == 6  # 2 bases × begin/middle/end


def test_report_over_run_folders_reads_base_and_config_from_cards(study, tmp_path):
    runs = sorted(str(p.parent) for p in study.glob("eval/*/*/summary.json"))
    assert main(["study", "report", *runs, "--out", str(tmp_path / "r"), "--bootstrap", "50",
                 "--seed", "3"]) == 0  # fmt: skip
    mine = json.loads((tmp_path / "r" / "report.json").read_text())
    theirs = json.loads((study / "report" / "report.json").read_text())
    assert sorted((c["config"], round(c["psi"] or 0, 9)) for c in mine["cells"]) == sorted(
        (c["config"], round(c["psi"] or 0, 9)) for c in theirs["cells"]
    )
    assert {c["model"] for c in mine["cells"]} == {"tiny-bert", "all-MiniLM-L6-v2"}


def test_report_refuses_a_run_of_another_task(study, study_inputs, tmp_path, capsys):
    from study_fixtures import write_task

    from hf_posbias.evaluation.runs.runner import evaluate_model

    other = write_task(tmp_path / "other", n_docs=6, name="OtherTask")
    evaluate_model("bm25", [other], out=tmp_path / "bm25", bootstrap=10)
    run = next(str(p.parent) for p in study.glob("eval/*/*/summary.json"))
    capsys.readouterr()
    assert main(["study", "report", run, str(tmp_path / "bm25"), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "report runs of the same tasks" in err[0]


def test_remedies_extend_a_finished_study_as_rows_without_retraining(
    study, study_inputs, tmp_path, capsys
):
    """Adding ``remedies`` to a finished study evaluates each untrained base once per remedy
    (nothing trains, nothing done is redone); the report gains ``base +firstp`` rows and keeps
    its PSI reductions and direction checks; changed passage settings redo the remedy rows only."""
    import shutil

    from hf_posbias.study.layout import EVAL_MARKER

    out = tmp_path / "s"
    shutil.copytree(study, out)
    before = json.loads((out / "report" / "report.json").read_text())
    argv = ["study", "run", study_inputs["spec"], "--out", str(out), "--in-process",
            "--remedies", "firstp", "--passage-tokens", "32", "--stride", "16"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    assert "0 run(s) trained, 2 evaluation(s) run, 10 skipped" in capsys.readouterr().out
    markers = sorted(out.glob(f"eval/*-base-firstp/*/{EVAL_MARKER}"))
    assert len(markers) == 2
    assert json.loads(markers[0].read_text())["model_fingerprint"].endswith("+firstp/32/16")
    report = json.loads((out / "report" / "report.json").read_text())
    assert len(report["cells"]) == 12
    assert sorted(c["model"] for c in report["cells"] if c["config"] == "base +firstp") == [
        "all-MiniLM-L6-v2", "tiny-bert"]  # fmt: skip
    assert report["psi_reductions"] == before["psi_reductions"]
    assert report["direction"] == before["direction"]
    cells = {(c["model"], c["config"]): c for c in report["cells"]}
    for row in report["remedies"]:
        plain, remedied = cells[(row["model"], "base")], cells[(row["model"], "base +firstp")]
        assert row["delta_mean"] == pytest.approx(remedied["mean"] - plain["mean"])
    assert len(report["remedies"]) == 2
    assert "| base | base +firstp |" in (out / "report" / "report.md").read_text()
    # `posbias study report` over the run folders reads the remedy from each run: the same rows.
    runs = sorted(str(p.parent) for p in out.glob("eval/*/*/summary.json"))
    assert main(["study", "report", *runs, "--out", str(tmp_path / "r"), "--bootstrap", "50"]) == 0
    mine = json.loads((tmp_path / "r" / "report.json").read_text())
    assert sorted((c["model"], c["config"]) for c in mine["cells"]) == sorted(cells)

    # A rerun redoes nothing; other passage settings redo the remedy rows and nothing else.
    first = files_with_mtimes(out)
    assert main(argv) == 0
    assert "0 evaluation(s) run, 12 skipped" in capsys.readouterr().out
    assert all(files_with_mtimes(out)[str(m.relative_to(out))] == first[str(m.relative_to(out))]
               for m in markers)  # fmt: skip
    assert main([*argv, "--passage-tokens", "40"]) == 0
    assert "0 run(s) trained, 2 evaluation(s) run, 10 skipped" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["a", "b"], "error: give one study folder, or run folders with --out"),
        (["a", "--seed", "3"], "error: --bootstrap, --seed and --title are for run folders (with "
         "--out): a study folder's report takes its spec's"),
    ],
)  # fmt: skip
def test_study_report_refuses_what_only_run_folders_take_in_one_line(
    argv, message, tmp_path, capsys
):
    # One verb for a study folder and for run folders: the run folders' options without --out
    # are refused, not ignored, before any folder is read.
    assert main(["study", "report", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == message and "Traceback" not in "\n".join(err)
