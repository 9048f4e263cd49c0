"""Smoke test of benchmarks/train_throughput.py (tiny shapes on CPU) and the matrix projection.

Structure only: the figures of a tiny model on a shared CPU say nothing about a GPU.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BINS = ["256-512", "512-1024", "1024-2048", "2048-4096", "4096-8192"]


def _benchmark_module():
    spec = importlib.util.spec_from_file_location(
        "train_throughput", REPO / "benchmarks" / "train_throughput.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def benchmark_run(tmp_path_factory, minilm_path):
    out = tmp_path_factory.mktemp("throughput")
    bench = _benchmark_module()
    argv = ["--models", "qwen3-0.6b", "--tiny", "--batch", "4", "--json", str(out / "t.json")]
    argv += ["--work", str(out / "work")]
    return bench, argv, out


def test_benchmark_measures_every_bin_for_both_settings(benchmark_run, capsys):
    bench, argv, out = benchmark_run
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    data = json.loads((out / "t.json").read_text())
    assert data["format"] == "hf-posbias/train-throughput/v1" and data["tiny"] is True
    assert data["batch"] == 4
    assert [(e["model"], e["settings"]) for e in data["results"]] == [
        ("qwen3-0.6b", "fp32"),
        ("qwen3-0.6b", "auto"),
    ]
    from hf_posbias.devices import device_info, resolve_precision

    device = device_info()
    for entry in data["results"]:
        assert "error" not in entry, entry.get("error")
        assert list(entry["bins"]) == BINS  # one step per length bin, all five bins
        for cell in entry["bins"].values():
            assert cell["s_per_step"] > 0 and cell["tokens"] > 0 and cell["flops"] > 0
            if device.kind == "cpu":  # against the CPU matmul peak measured in the run
                assert 0 < cell["mfu"] < 1
            else:  # a GPU's data-sheet peak, when the benchmark knows the GPU
                assert cell["mfu"] is None or 0 < cell["mfu"] < 1
                assert cell["peak_gib"] > 0
        if device.kind == "cpu":
            assert entry["peak_label"] == "measured matmul peak"
        expected = "fp32" if entry["settings"] == "fp32" else resolve_precision("auto", device)
        assert entry["precision"] == expected and "mini-batches of" in entry["memory"]
    # longer bins carry more tokens per step
    tokens = [data["results"][1]["bins"][b]["tokens"] for b in BINS]
    assert tokens[0] < tokens[-1]
    for needle in (
        "| model | settings | s/step 256-512 |",
        "| qwen3-0.6b | fp32 |",
        "| qwen3-0.6b | auto |",
        "speed-up auto vs fp32",
        "projected wall time of the 32-run matrix",
        "not a projection of the real matrix",
    ):
        assert needle in printed, needle


def test_matrix_dry_run_projects_from_the_benchmark(benchmark_run, capsys):
    from hf_posbias.training.matrix import matrix_main

    _, _, out = benchmark_run
    if not (out / "t.json").is_file():
        pytest.skip("the benchmark test did not run")
    argv = ["--data", "d", "--out", "c", "--dry-run", "--models", "qwen3-0.6b", "bert-base"]
    argv += ["--configs", "uniform", "--plan-for", "h100", "--throughput", str(out / "t.json")]
    assert matrix_main([*argv, "--global-batch", "4"], "run_matrix.py", "", []) == 0
    lines = capsys.readouterr().out.splitlines()
    qwen, bert = lines[1], lines[3]
    assert "projected" in qwen and "TINY shapes" in qwen and "bf16" in qwen
    assert "no benchmark figures for bert-base" in bert
    assert lines[-1] == "# 2 runs: no projected total (runs without figures are marked above)"
    # the benchmark ran batch 4: a batch-256 plan does not borrow its seconds
    assert matrix_main(argv, "run_matrix.py", "", []) == 0
    assert "benchmark ran batch 4, not 256" in capsys.readouterr().out


def test_matrix_checks_every_flag_before_launching(monkeypatch, capsys):
    import subprocess

    from hf_posbias.training.matrix import matrix_main

    launched = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, check=False: launched.append(cmd))
    argv = ["--data", "d", "--out", "c", "--models", "bert-base", "--precision", "fp8"]
    assert matrix_main(argv, "run_matrix.py", "", []) == 2
    err = capsys.readouterr().err
    assert "error: argument --precision: invalid choice: 'fp8'" in err and not launched


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (["--shard", "4/4"], "error: --shard must be i/n with 0 <= i < n, got '4/4'"),
        (["--num-processes", "0"], "error: --num-processes must be >= 1, got 0"),
    ],
)
def test_matrix_launch_flags_are_one_error_line(flag, message, capsys):
    # The launch flags (training.matrix.LaunchSettings) are checked when the settings are made.
    from hf_posbias.training.matrix import matrix_main

    argv = ["--data", "d", "--out", "c", "--models", "bert-base", "--dry-run", *flag]
    assert matrix_main(argv, "run_matrix.py", "", []) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [message]
