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
    assert "    posbias listwise train " in results  # the commands, to reproduce it
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


def test_every_step_runs_the_settings_its_printed_command_parses_to():
    from hf_posbias.cli import build_parser
    from hf_posbias.listwise.demo import ListwiseDemoSettings, demo_commands, demo_settings
    from hf_posbias.settings import settings_from_args

    for progress in (True, False):
        s = ListwiseDemoSettings(task="v", train_task="t", out="o", steps=3, progress=progress)
        commands = dict(demo_commands(s))
        steps = demo_settings(s)
        assert [step for step, _, _ in steps] == list(commands)
        for step, verb, settings in steps:
            assert commands[step][:2] == ["listwise", verb]
            parsed = settings_from_args(type(settings), build_parser().parse_args(commands[step]))
            assert parsed == settings, step
