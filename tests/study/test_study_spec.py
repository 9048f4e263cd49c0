"""The study spec: files, flag overrides, the paper's spec, and one-line errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.study.spec import StudySpec, load_spec

REPO = Path(__file__).resolve().parents[2]


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


def _spec_file(tmp_path: Path, **changes) -> str:
    spec = {"bases": ["bert-base"], "data": "org/train", "tasks": ["SciFact-Evidence"]}
    spec.update(changes)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return str(path)


def test_yaml_and_json_read_the_same_and_flags_override(tmp_path):
    yaml_path = tmp_path / "s.yaml"
    yaml_path.write_text(
        "bases: [bert-base]\ndata: org/train\ntasks: [SciFact-Evidence]\n"
        "training:\n  max_steps: 3\n  global_batch: 8\n"
    )
    json_path = _spec_file(tmp_path, training={"max_steps": 3, "global_batch": 8})
    assert load_spec(yaml_path) == load_spec(json_path)
    spec = load_spec(yaml_path, {"configs": ["uniform"], "seed": 7, "bases": None})
    assert spec.configs == ["uniform"] and spec.seed == 7 and spec.bases == ["bert-base"]
    assert spec.training == {"max_steps": 3, "global_batch": 8}


@pytest.fixture
def fresh_checkout(monkeypatch, tmp_path):
    """This machine as a fresh checkout sees it: offline, empty HF caches, no built tasks."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets-cache"))
    monkeypatch.delenv("POSBIAS_TASKS_DIR", raising=False)


def test_paper_spec_dry_run_prints_32_runs_and_what_a_fresh_checkout_lacks(capsys, fresh_checkout):
    # Offline, with nothing built or cached, the real run could not start: the dry run still
    # shows the plan, lists every input it lacks (bases, tasks, training data, the MS MARCO
    # pairs of evidence moving) and exits 2 with the real run's error (issue 49; it exited 0).
    assert main(["study", "run", "--dry-run", str(REPO / "studies" / "yhp26.yaml")]) == 2
    out, err = capsys.readouterr()
    assert "planning" not in err and " eta " not in err  # a plan made in seconds: no bar, no ETA
    error = err.strip().splitlines()
    assert len(error) == 1
    assert error[0].startswith("error: the study cannot start here: 21 inputs are missing: ")
    missing = [line for line in out.splitlines() if line.startswith("missing: ")]
    assert len(missing) == 21 and all(m.removeprefix("missing: ") in error[0] for m in missing)
    assert missing[0] == (
        "missing: bases: bert-base: the Hub model google-bert/bert-base-uncased is not in the "
        "local HF cache, and the Hub is offline (HF_HUB_OFFLINE is set)"
    )
    assert (
        "missing: tasks: SQuAD-PosQ (not built under $POSBIAS_TASKS_DIR): the Hub dataset "
        "hf-posbias/SQuAD-PosQ is not in the local HF cache" in out
    )
    assert "missing: data: training data 'your-org/posbias-train' is not a local folder" in out
    assert "missing: analysis_pairs msmarco: the Hub dataset microsoft/ms_marco is not" in out
    assert sum(line.startswith("run ") for line in out.splitlines()) == 32
    assert "accelerate launch -m hf_posbias.training.train --model qwen3-0.6b" in out
    assert "# 32 runs to train, 8 untrained base model(s)" in out
    assert out.count("global batch 256") == 32  # each run's settings after the memory plan
    # YHP26 App. D: 4e-5 under 400M parameters, 2e-5 for the four larger bases; query prefixes.
    plans = [line for line in out.splitlines() if line.startswith("  # ")]
    assert sum("lr 4e-05, query prefix 'query: '" in p for p in plans) == 12  # BERT, Longf., MB-b
    assert sum("lr 2e-05, query prefix 'query: '" in p for p in plans) == 4  # ModernBERT-large
    assert sum("lr 4e-05, query prefix 'Retrieve a relevant passage: '" in p for p in plans) == 4
    assert sum("lr 2e-05, query prefix 'Retrieve a relevant passage: '" in p for p in plans) == 12


def test_a_plan_for_another_gpu_does_not_check_this_machines_inputs(capsys, fresh_checkout):
    spec = str(REPO / "studies" / "yhp26.yaml")
    assert main(["study", "run", spec, "--dry-run", "--plan-for", "h100"]) == 0
    out = capsys.readouterr().out
    assert "# inputs not checked here: the plan is for h100" in out and "missing: " not in out


def test_paper_spec_dry_run_lists_its_tasks_and_yhp26s_four_beir_sets(capsys, fresh_checkout):
    # YHP26 §4.3 names the four BEIR sets of Table 4/14 (000:150, 210-216): SciFact, HotpotQA,
    # FEVER and Climate-FEVER, in Table 4's order; the split (BEIR's test) is the project's.
    text = (REPO / "studies" / "yhp26.yaml").read_text()
    spec = load_spec(REPO / "studies" / "yhp26.yaml")
    beir = ["scifact", "hotpotqa", "fever", "climate-fever"]
    assert spec.standard == [f"tasks/beir/{name}" for name in beir]
    comment = text.split("\nstandard:")[0].rsplit("\n\n", 1)[1]
    assert "YHP26 §4.3 names" in comment and "Table 4/14" in comment
    assert "BEIR's `test` split of each" in comment and "is the project's choice" in comment
    assert main(["study", "run", "--dry-run", str(REPO / "studies" / "yhp26.yaml")]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "tasks (7):" and out[1] == "  SQuAD-PosQ"
    assert "  FineWeb-PosQ (on 3 bases: modernbert-base, modernbert-large, qwen3-0.6b)" in out
    head = out.index("standard (4; YHP26 Table 4/14: nDCG@10 on every model):")
    assert out[head + 1 : head + 5] == [
        f"  tasks/beir/{name} (not built yet: a run refuses it)" for name in beir
    ]
    assert "390 evaluations (40 models × 11 tasks;" in "\n".join(out)  # 7 tasks + 4 standard


def test_a_folder_not_built_is_marked_in_the_plan_and_refused_by_both_runs(
    study_inputs, tmp_path, capsys
):
    # The dry run and the real run call one check (preflight.input_problems) and stop with the
    # same error; the dry run first prints its plan, the missing folder marked (issue 49: it
    # exited 0 and the real run failed).
    from hf_posbias.study.preflight import StudyInputError, check_inputs

    missing = str(tmp_path / "beir" / "nfcorpus")
    path = _spec_file(tmp_path, bases=[study_inputs["tiny"]], data=study_inputs["data"],
                      tasks=[study_inputs["task"]], standard=[missing])  # fmt: skip
    assert main(["study", "run", path, "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert f"  {missing} (not built yet: a run refuses it)" in out.splitlines()
    assert f"missing: tasks: task folder {missing} does not exist" in out
    assert main(["study", "run", path, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == err  # the same error, word for word
    assert err.startswith(f"error: the study cannot start here: tasks: task folder {missing} ")
    assert not (tmp_path / "out").exists()
    typo = StudySpec(bases=[study_inputs["tiny"]], data=study_inputs["data"],
                     tasks=["SciFact-Evidense"])  # fmt: skip
    with pytest.raises(StudyInputError, match="unknown task 'SciFact-Evidense'"):
        check_inputs(typo, None)


def test_an_evaluation_only_base_that_resolves_nowhere_stops_the_dry_run(
    study_inputs, tmp_path, capsys
):
    # Issue 49: `bases: [all-MiniLM-L6-v3]` with `train: false` was planned (exit 0) and the
    # real run failed 4.5 s later, leaving study.json and a failed unit.
    path = _spec_file(tmp_path, bases=["all-MiniLM-L6-v3"], train=False,
                      tasks=[study_inputs["task"]])  # fmt: skip
    assert main(["study", "run", path, "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert "missing: bases: unknown model 'all-MiniLM-L6-v3'" in out
    assert "(did you mean 'all-MiniLM-L6-v2'" in err and len(err.strip().splitlines()) == 1
    assert main(["study", "run", path, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == err
    assert not (tmp_path / "out").exists()


def test_the_hub_source_of_evidence_moving_is_checked_before_anything_trains(
    study_inputs, tmp_path, capsys, fresh_checkout
):
    # Issue 49: analyses: [evidence-moving] with the default pairs (MS MARCO on the Hub) ran
    # 20 minutes offline before failing on them.
    spec = {"bases": [study_inputs["tiny"]], "data": study_inputs["data"],
            "tasks": [study_inputs["task"]], "configs": ["uniform"],
            "analyses": ["evidence-moving"]}  # fmt: skip
    path = _spec_file(tmp_path, **spec)
    out = tmp_path / "out"
    assert main(["study", "run", path, "--out", str(out), "--in-process"]) == 2
    assert _one_error(capsys) == (
        "error: the study cannot start here: analysis_pairs msmarco: the Hub dataset "
        "microsoft/ms_marco is not in the local HF cache, and the Hub is offline "
        "(HF_HUB_OFFLINE is set)"
    )
    assert not out.exists()
    pairs = tmp_path / "pairs.jsonl"
    path = _spec_file(tmp_path, **spec, analysis_pairs=str(pairs))
    assert main(["study", "run", path, "--dry-run"]) == 2
    assert f"missing: analysis_pairs: pair source not found: {pairs}" in capsys.readouterr().out
    pairs.write_text("")
    assert main(["study", "run", path, "--dry-run"]) == 0  # every input here: the run starts


def test_dry_run_lists_remedy_rows_without_training_them(capsys, fresh_checkout):
    spec = str(REPO / "studies" / "yhp26.yaml")
    assert main(["study", "run", "--dry-run", spec, "--remedies", "maxp", "segment-balanced",
                 "--passage-tokens", "96", "--stride", "48"]) == 2  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    remedies = [line for line in out if line.startswith("remedy ")]
    assert len(remedies) == 16  # 8 bases × 2 remedies, each evaluated with no training
    assert remedies[0].startswith("remedy 1/16: posbias-bert-base-base-maxp: ")
    assert "under maxp/96/48" in remedies[0] and "under segment-balanced/4" in remedies[1]
    assert sum(line.startswith("run ") for line in out) == 32
    summary = [line for line in out if line.startswith("# 32 runs to train")]
    assert summary[0].startswith("# 32 runs to train, 8 untrained base model(s), 16 remedy row(s)")


def test_dry_run_lines_take_the_keywords_the_verbs_settings_give():
    from hf_posbias.study.run import StudyRunSettings, dry_run_lines

    spec = load_spec(REPO / "studies" / "yhp26.yaml")
    lines = dry_run_lines(spec, shard="1/4", check=False)  # the plan of a machine with the data
    assert sum(line.startswith("run ") for line in lines) == 8  # 32 runs, 4 nodes
    assert lines.projected_seconds is None  # no throughput figures: no projected time
    assert lines[-1].startswith("# pass --throughput FILE") and lines.problems == []
    settings = StudyRunSettings(spec="yhp26.yaml", dry_run=True, shard="1/4")
    given = dry_run_lines(spec, **settings.dry_run_kwargs())
    assert [line for line in given if "missing: " not in line] == lines


def test_each_run_is_a_settings_object_and_its_printed_command_reads_back_to_it():
    # The study builds every run's TrainingSettings from the spec and hands it on; the dry
    # run's command line is rendered from that object, and the trainer's parser reads it back
    # to the very same settings (what `accelerate launch` gives the run).
    import shlex

    from hf_posbias.study.layout import run_settings, study_models
    from hf_posbias.study.run import dry_run_lines
    from hf_posbias.training.training_settings import parse_settings

    spec = load_spec(REPO / "studies" / "yhp26-pooling.yaml")
    trained = [m for m in study_models(spec, "study") if m.trained]
    commands = [line.strip() for line in dry_run_lines(spec, check=False)
                if line.startswith("  accelerate launch")]  # fmt: skip
    assert len(commands) == len(trained) == 16
    for model, command in zip(trained, commands):
        settings = run_settings(spec, model)
        assert parse_settings(shlex.split(command)[4:]) == settings
        assert (settings.pooling, settings.seed, settings.precision) == (model.pooling, 42, "bf16")
    assert not run_settings(spec, trained[0], progress=False).progress


def test_remedies_extend_a_study_without_changing_its_identity(tmp_path):
    from hf_posbias.study.spec import check_out_folder, save_spec

    spec = StudySpec(bases=["bert-base"], data="d", tasks=["t"])
    save_spec(spec, tmp_path)
    more = StudySpec(bases=["bert-base"], data="d", tasks=["t"], remedies=["maxp"], stride=8)
    check_out_folder(more, tmp_path)  # adding a remedy: the same study, extended
    assert more.identity() == spec.identity()
    assert more.remedy_settings("maxp").key == "maxp/128/8"


def test_pooling_ablation_is_a_study_with_a_pooling_axis(capsys):
    from hf_posbias.study.layout import study_models
    from hf_posbias.study.spec import load_spec

    spec = load_spec(REPO / "studies" / "yhp26-pooling.yaml")
    models = study_models(spec, "out")
    assert [m.name for m in models if not m.trained] == [
        f"posbias-modernbert-base-base-{p}" for p in ("cls", "mean", "max", "lasttoken")
    ]
    assert len([m for m in models if m.trained]) == 16
    assert {m.pooling for m in models} == {"cls", "mean", "max", "lasttoken"}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"bases": ["bert-bose"]}, "unknown model 'bert-bose'"),
        ({"tasks": ["SQuAD-PosX"]}, "unknown task 'SQuAD-PosX'"),
        ({"configs": ["begin", "sideways"]}, "unknown configuration 'sideways'"),
        ({"training": {"max_stepz": 3}}, "unknown training setting 'max_stepz'"),
        ({"training": {"model": "x"}}, "'model' is set by the study per run"),
        ({"colour": "red"}, "colour: unknown key (known: bases"),
        ({"remedies": ["maxp", "maxq"]}, "remedies[1]: must be one of maxp, firstp, sump"),
        ({"remedies": ["none"]}, "remedies[0]: must be one of maxp"),
        ({"remedies": ["sump", "sump"]}, "remedies[1]: a remedy is named twice"),
        ({"remedies": ["maxp"], "passage_tokens": 16, "stride": 17}, "--stride must be at most"),
        (
            {"tasks": [{"task": "SciFact-Evidence", "bases": ["gpt2-medium"]}]},
            "tasks: SciFact-Evidence: base 'gpt2-medium' is not one of the study's bases",
        ),
        (
            {"tasks": [{"task": "SciFact-Evidence", "scoring": "ndcg42"}]},
            "tasks: SciFact-Evidence: unknown scoring 'ndcg42'",
        ),
        (
            {"tasks": [{"task": "SciFact-Evidence", "scoring": "zeng2025", "buckets": "task"}]},
            "zeng2025 scoring with task buckets is not a protocol",
        ),
        ({"tasks": [{"task": "SciFact-Evidence", "colour": 1}]}, "unknown key(s) colour"),
    ],
)
def test_bad_spec_is_one_line_before_anything_runs(tmp_path, capsys, changes, message):
    path = _spec_file(tmp_path, **changes)
    assert main(["study", "run", path, "--out", str(tmp_path / "out")]) == 2
    assert message in _one_error(capsys)
    assert not (tmp_path / "out").exists()


def test_data_lacking_a_config_hub_org_without_token_and_foreign_out(
    study_inputs, tmp_path, capsys, monkeypatch
):
    data = study_inputs["data"]
    path = _spec_file(tmp_path, data=data, configs=["begin", "60:20:20"])
    assert main(["study", "run", path, "--out", str(tmp_path / "a")]) == 2
    assert "config '60:20:20' is not in" in _one_error(capsys)

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    path = _spec_file(tmp_path, data=data, hub_org="my-org")
    assert main(["study", "run", path, "--out", str(tmp_path / "b")]) == 2
    assert "no Hub token" in _one_error(capsys)

    tiny = study_inputs["tiny"]
    spec = StudySpec(bases=[tiny], data=data, tasks=[study_inputs["task"]])
    from hf_posbias.study.spec import check_out_folder, save_spec

    save_spec(spec, tmp_path / "c")
    other = StudySpec(**{**spec.__dict__, "seed": 1})
    # The refusal of every output folder (hf_posbias.output_folders; `posbias study run` claims
    # its folder first and refuses the same way).
    with pytest.raises(InputError, match=r"holds a run with other parameters \(seed: 42 → 1\)"):
        check_out_folder(other, tmp_path / "c")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty and holds no study"):
        check_out_folder(spec, tmp_path / "d")
    # bootstrap and hub_org may change on a rerun: same study.
    check_out_folder(StudySpec(**{**spec.__dict__, "bootstrap": 10}), tmp_path / "c")


def test_study_eta_comes_from_measured_durations_of_each_kind():
    from hf_posbias.executors.units import ProgressLines, Unit

    def units(kind: str, n: int) -> list[Unit]:
        return [Unit(f"{kind}/{i}", kind, print) for i in range(n)]

    clock = ProgressLines(total=10)
    assert clock.eta([]) == "0 s"
    clock.line(units("train", 1)[0], 100.0, [])
    assert clock.eta(units("train", 3)) == "5.0 min"
    assert clock.eta(units("train", 3) + units("eval", 1)).startswith("n/a")  # no guess
    clock.line(units("eval", 1)[0], 10.0, [])
    clock.line(units("eval", 1)[0], 20.0, [])
    assert clock.eta(units("train", 1) + units("eval", 2)) == "2.2 min"  # 100 + 2 × 15 s
    assert clock.eta(units("report", 1)) == "0 s"  # the report is not counted
