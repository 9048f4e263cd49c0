"""The study's analyses (mirror reversal, evidence moving, segment profile) run on every model,
resume like the evaluations and fill report.json's ``analyses``; the direction check on any
bucket scheme; MS MARCO pairs through the Hub boundary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from study_fixtures import document, files_with_mtimes, write_task

from hf_posbias.cli import main

ANALYSES = ["reversal", "evidence-moving", "segment-profile"]


def _pair_file(path):
    lines = []
    for d in range(40):
        sentences = document(d)
        evidence = sentences[d % 9]
        lines.append(json.dumps({"query": evidence, "document": " ".join(sentences),
                                 "evidence": evidence, "id": f"p{d}"}))  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def analyses_spec(study_inputs, tmp_path_factory):
    """A CPU-sized study with every analysis: the tiny random BERT, begin and uniform."""
    root = tmp_path_factory.mktemp("analyses")
    spec = {
        "bases": [study_inputs["tiny"]],
        "configs": ["begin", "uniform"],
        "data": study_inputs["data"],
        "tasks": [write_task(root / "task", spans=True)],
        "training": {"max_steps": 1, "global_batch": 4},
        "bootstrap": 50,
        "seed": 3,
        "analyses": ANALYSES,
        "analysis_pairs": _pair_file(root / "pairs.jsonl"),
        "analysis_limit": 16,
        "analysis_slots": 5,
    }
    path = root / "spec.yaml"
    path.write_text(json.dumps(spec))
    return str(path)


def test_every_analysis_runs_on_every_model_resumes_and_is_reported(
    analyses_spec, tmp_path, capsys
):
    out = tmp_path / "s"
    argv = ["study", "run", analyses_spec, "--out", str(out), "--in-process"]
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert "2 run(s) trained, 3 evaluation(s) run" in printed.out
    # Each analysis unit counts its work within itself, with an ETA, as evaluation units do
    # (issue 52: a mirror reversal printed nothing for minutes).
    lines = printed.err.splitlines()
    for start, counted in (
        ("mirror reversal of ", "texts encoded: "),
        ("evidence moving [", "/"),
        ("segment profile [", "/"),
    ):
        assert [line for line in lines if line.startswith(start) and counted in line], start
    results = sorted(p.relative_to(out).as_posix() for p in out.glob("analyses/*/*.json"))
    assert len(results) == 3 * 3  # (base, begin, uniform) × 3 analyses
    report = json.loads((out / "report" / "report.json").read_text())
    analyses = report["analyses"]

    # Table 12: every model × configuration on the task, Δrev = B→F − F→B.
    rows = analyses["reversal"]["rows"]
    assert len(rows) == 3 and not analyses["reversal"]["skipped"]
    for r in rows:
        assert r["delta_rev"] == pytest.approx(r["back_after"] - r["front_after"])
        assert r["n_front"] + r["n_back"] > 0
    # Tables 5/13: peak, lowest and Δ×10³ of the mean curve over the pairs all models used.
    moving = analyses["evidence_moving"]["rows"]
    assert [r["config"] for r in moving] == ["base", "begin", "uniform"]
    assert len({r["n_pairs"] for r in moving}) == 1 and moving[0]["n_pairs"] > 0
    for r in moving:
        curve = r["curve"]
        assert len(curve) == 5
        assert r["peak"] == f"p{int(np.argmax(curve)) + 1}"
        assert r["lowest"] == f"p{int(np.argmin(curve)) + 1}"
        assert r["delta_e3"] == pytest.approx((max(curve) - min(curve)) * 1000)
    # Figs. 3/7: the profile, its range and the range against the same model's base.
    profile = {r["config"]: r for r in analyses["segment_profile"]["rows"]}
    for r in profile.values():
        assert r["range"] == pytest.approx(max(r["curve"]) - min(r["curve"]))
        assert r["range_vs_base"] == pytest.approx(r["range"] - profile["base"]["range"])
        # App. C's range: every segment but the last (1–4 of 5 here; 1–9 of YHP26's ten).
        assert r["app_c_segments"] == [1, 4]
        assert r["app_c_range"] == pytest.approx(max(r["curve"][:4]) - min(r["curve"][:4]))
        base_c = profile["base"]["app_c_range"]
        assert r["app_c_range_vs_base"] == pytest.approx(r["app_c_range"] - base_c)
    text = (out / "report" / "report.md").read_text()
    for heading in ("Mirror reversal (YHP26 Table 12)", "Tables 5 and 13", "Figs. 3 and 7",
                    "App. C range (p1–p4)"):  # fmt: skip
        assert heading in text
    for name in ("evidence-moving.png", "evidence-moving-by-base.png", "segment-profile.png",
                 "segment-profile-by-base.png", "curves-TinyStudyTask-by-config.png"):  # fmt: skip
        assert (out / "report" / name).is_file()

    # A rerun redoes nothing; a removed result is redone alone.
    first = files_with_mtimes(out / "analyses")
    assert main(argv) == 0
    assert "0 run(s) trained, 0 evaluation(s) run" in capsys.readouterr().out
    assert files_with_mtimes(out / "analyses") == first
    (out / results[0]).unlink()
    assert main(argv) == 0
    assert "analysis/" in capsys.readouterr().out  # the one analysis unit redone
    again = files_with_mtimes(out / "analyses")
    assert {k for k in first if again[k] != first[k]} == {results[0].removeprefix("analyses/")}


def test_unknown_analysis_is_one_line(study_inputs, tmp_path, capsys):
    spec = json.loads(Path(study_inputs["spec"]).read_text())
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**spec, "analyses": ["reversal", "mirror"]}))
    assert main(["study", "run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "analyses[1]: must be one of reversal" in err[0]
    assert "'mirror'" in err[0]


def test_msmarco_pairs_come_from_the_hub_id_yhp26_names(monkeypatch):
    import datasets

    from hf_posbias.analysis.msmarco_pairs import resolve_pairs

    calls = []
    rows = [
        {"query": f"what is {w}", "query_id": i,
         "passages": {"is_selected": [int(k == i % 3) for k in range(3)],
                      "passage_text": [f"{w} is thing {k}." for k in range(3)]}}
        for i, w in enumerate(["ice", "fire", "dust"])
    ] + [{"query": "none", "query_id": 9,
          "passages": {"is_selected": [0, 0], "passage_text": ["a.", "b."]}}]  # fmt: skip

    def fake_load_dataset(path, name=None, split=None, **kwargs):
        calls.append((path, name, split))
        return rows

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    cases, report = resolve_pairs("msmarco")
    assert calls == [("microsoft/ms_marco", "v1.1", "validation")]
    assert (report.read, report.kept, report.skipped) == (4, 3, {"not_one_selected_passage": 1})
    assert cases[1].evidence == "fire is thing 1." and cases[1].base == (
        "fire is thing 0. fire is thing 2.")  # fmt: skip


def test_direction_check_covers_any_bucket_scheme(tmp_path):
    """Six SQuAD-PosQ-like buckets: each skewed configuration's own region is its third of the
    ordered buckets; the report says whether it gained there and where its curve peaks."""
    from hf_posbias.evaluation.runs.exports import write_per_query
    from hf_posbias.evaluation.summary import EvaluationSummary
    from hf_posbias.study.report import write_report
    from hf_posbias.study.report_sources import Source

    buckets = ["0-100", "100-200", "200-300", "300-400", "400-500", "500-3120"]
    profiles = {
        "base": (0.6,) * 6,
        "begin": (0.9, 0.8, 0.5, 0.5, 0.4, 0.4),
        "middle": (0.6, 0.6, 0.8, 0.7, 0.6, 0.6),
        "end": (0.4, 0.4, 0.5, 0.5, 0.6, 0.6),
    }
    rng = np.random.default_rng(0)
    sources = []
    for config, means in profiles.items():
        rows = [{"query_id": f"{b}-{q}", "bucket": b,
                 "ndcg_at_10": float(np.clip(rng.normal(m, 0.05), 0, 1))}
                for b, m in zip(buckets, means) for q in range(30)]  # fmt: skip
        path = write_per_query(rows, tmp_path / f"{config}.parquet")
        summary = EvaluationSummary.from_scores(
            "m", "T", buckets, dict(zip(buckets, means)), n_queries={b: 30 for b in buckets}
        )
        sources.append(Source("T", "m", config, None, summary, str(path)))
    report = json.loads(write_report(sources, tmp_path / "r", n_resamples=200, seed=1).read_text())
    direction = {r["config"]: r for r in report["direction"]}
    assert direction["begin"]["region"] == ["0-100", "100-200"]
    assert direction["end"]["region"] == ["400-500", "500-3120"]
    assert direction["begin"]["raised"] and direction["middle"]["raised"]
    assert not direction["end"]["raised"]  # 0.6 against the base's 0.6: no gain
    assert (direction["begin"]["peak"], direction["begin"]["peak_region"]) == ("0-100", "begin")
    assert direction["middle"]["peak_region"] == "middle"
    assert "own region" in (tmp_path / "r" / "report.md").read_text()


def test_reversal_runs_on_the_tasks_of_the_models_base_only(monkeypatch, tmp_path):
    """A task entry's ``bases`` (YHP26 §4.3: FineWeb-PosQ and PosIR on three bases) holds for the
    mirror reversal as for the evaluations: a model of another base is not reversed on it, and
    its result's key names only the tasks it ran (issue 43)."""
    from types import SimpleNamespace

    import hf_posbias.evaluation.runs.mteb_models as mteb_models
    import hf_posbias.evaluation.runs.reversal as reversal
    from hf_posbias.study.analyses import (
        AnalysisInputs,
        analysis_file,
        model_analyses_done,
        run_model_analyses,
    )
    from hf_posbias.study.layout import StudyModel, StudyTask
    from hf_posbias.study.spec import StudySpec

    reversed_on, shown = [], []

    def fake_reversal(loaded, folder, out, progress):
        reversed_on.append(folder)
        shown.append(progress)
        return SimpleNamespace(to_dict=lambda: {"task": folder})

    monkeypatch.setattr(reversal, "mirror_reversal", fake_reversal)
    monkeypatch.setattr(
        mteb_models, "load_mteb_model", lambda folder, **settings: SimpleNamespace()
    )
    monkeypatch.setattr("hf_posbias.study.analyses.evaluation_fingerprint", lambda m, s: "fp")
    spec = StudySpec(bases=["a", "b"], data="d", tasks=["t"], analyses=["reversal"])
    tasks = [StudyTask("All", "All", "all-folder", "f1"),
             StudyTask("OnlyB", "OnlyB", "b-folder", "f2", bases=("b",))]  # fmt: skip
    inputs = AnalysisInputs(spec, tasks)
    model_a = StudyModel("a", "base", None, "ma")
    model_b = StudyModel("b", "uniform", None, "mb")

    assert run_model_analyses(model_a, spec, tmp_path, inputs) == (1, 0)
    assert reversed_on == ["all-folder"]
    result = json.loads(analysis_file(tmp_path, model_a.name, "reversal").read_text())
    assert result["marker"]["key"] == "All@f1" and result["results"] == [{"task": "all-folder"}]
    assert model_analyses_done(model_a, spec, tmp_path, tasks)  # its own tasks: done

    reversed_on.clear()
    assert run_model_analyses(model_b, spec, tmp_path, inputs, progress=False) == (1, 0)
    assert shown == [True, False, False]  # --no-progress reaches each analysis
    assert reversed_on == ["all-folder", "b-folder"]
    result = json.loads(analysis_file(tmp_path, model_b.name, "reversal").read_text())
    assert result["marker"]["key"] == "All@f1/OnlyB@f2"
