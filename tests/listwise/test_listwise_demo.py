"""``posbias listwise demo``: the six verbs chained on a tiny model, resumable."""

from __future__ import annotations

import json

from hf_posbias.cli import main

TINY = ["--k", "4", "--queries", "2", "--positions", "1,4", "--propensity-queries", "2"]
TINY += ["--shuffles", "1", "--train-queries", "2", "--pos-aug", "2", "--steps", "2"]
TINY += ["--global-batch", "1", "--passage-tokens", "8", "--n-resamples", "50", "--no-progress"]


def test_demo_runs_every_step_and_resumes(shared_beir_task, tiny_llm, tmp_path, capsys):
    out = tmp_path / "demo"
    args = ["listwise", "demo", "--task", str(shared_beir_task), "--train-task"]
    args += [str(shared_beir_task), "--model", tiny_llm, "--out", str(out), *TINY]
    assert main(args) == 0
    printed = capsys.readouterr().out
    for step in ("before", "propensity", "build-train", "train", "after", "compare"):
        assert f"[{step}] posbias listwise" in printed
    results = (out / "results.md").read_text()
    assert "| input position | base | DebiasFirst | Δ (DebiasFirst − base) | p |" in results
    assert "| 4 |" in results and "| PSI |" in results
    assert "posbias listwise train --model" in results  # the commands, to reproduce it
    card = json.loads((out / "checkpoint" / "posbias_listwise_training.json").read_text())
    assert card["pos_aug"] == 2 and card["propensity"]["smoothing"] == 0.5 and card["steps"] == 2
    after = json.loads((out / "after" / "positions.json").read_text())
    assert after["reranker"] == str(out / "checkpoint")

    trained_at = (out / "checkpoint" / "model.safetensors").stat().st_mtime_ns
    assert main(args) == 0  # a rerun: nothing is recomputed, the table is the same
    printed = capsys.readouterr().out
    assert "[train] done before, skipped" in printed and "[build-train] done before" in printed
    assert (out / "checkpoint" / "model.safetensors").stat().st_mtime_ns == trained_at
    assert (out / "results.md").read_text().split("Wall time")[0] == results.split("Wall time")[0]


def test_the_training_step_runs_the_settings_its_printed_command_parses_to():
    from hf_posbias.cli import build_parser
    from hf_posbias.listwise.demo import ListwiseDemoSettings, demo_commands, train_settings
    from hf_posbias.listwise.settings import ListwiseTrainingSettings
    from hf_posbias.training.settings import settings_from_namespace

    s = ListwiseDemoSettings(task="val", train_task="tr", out="o", steps=3, lr=1e-5, progress=False)
    argv = dict(demo_commands(s))["train"]
    parsed = settings_from_namespace(ListwiseTrainingSettings, build_parser().parse_args(argv))
    assert parsed == train_settings(s)
