"""benchmarks/gpu_proof.py on the CPU (``--tiny``): the JSON's keys, the markdown table, resuming
and ``--part``. Structure only: tiny shapes on a shared CPU say nothing about a GPU.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_proof.py"
BINS = ["256-512", "512-1024", "1024-2048", "2048-4096", "4096-8192"]
TINY_PARTS = [
    "train-qwen3-0.6b",
    "projection",
    "accelerate",
    "listwise",
    "pytest-cuda",
    "pytest-full",
    "fp32-qwen3-0.6b",
]


def _proof_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_proof", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(out: Path, *flags: str) -> subprocess.CompletedProcess:
    """The script as a user runs it, on this checkout's code."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), "--tiny", *flags],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def tiny_proof(tmp_path_factory: pytest.TempPathFactory, minilm_path: str) -> Path:
    """One whole ``--tiny`` proof, shared by the tests of this module."""
    out = tmp_path_factory.mktemp("gpu-proof")
    proc = _run(out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def _parts(out: Path) -> dict[str, dict]:
    doc = json.loads((out / "gpu_proof.json").read_text())
    return {part["name"]: part for part in doc["parts"]}


@pytest.mark.slow
def test_tiny_proof_writes_every_part(tiny_proof: Path) -> None:
    doc = json.loads((tiny_proof / "gpu_proof.json").read_text())
    assert doc["format"] == "hf-posbias/gpu-proof/v1" and doc["tiny"] is True
    assert set(doc) == {"format", "tiny", "models", "device", "mfu_peak", "parts", "goals"}
    assert doc["mfu_peak"] == {
        "precision": "bf16",
        "tflops": None,
        "source": None,
        "reason": "no CUDA device",
    }
    parts = _parts(tiny_proof)
    assert list(parts) == TINY_PARTS
    assert [p["number"] for p in parts.values()] == list(range(1, len(TINY_PARTS) + 1))
    for part in parts.values():
        assert part["status"] == "done" and part["seconds"] > 0, part["error"]
        assert part["device"] == "cpu (cpu)"

    for name, settings in (("train-qwen3-0.6b", "auto"), ("fp32-qwen3-0.6b", "fp32")):
        entry = parts[name]["result"]
        assert "error" not in entry, entry.get("error")
        assert entry["model"] == "qwen3-0.6b" and entry["settings"] == settings
        assert entry["batch"] == 8 and entry["peak_label"] == "no CUDA device"
        assert list(entry["bins"]) == BINS  # one step in each of the five bins
        assert all(b["steps"] == 1 and b["s_per_step"] > 0 for b in entry["bins"].values())
        assert entry["mfu"] is None and entry["mfu_longest"] is None
        assert entry["memory_plan"]["method"] == "cpu" and entry["precision"] == "fp32"

    projection = parts["projection"]["result"]
    assert projection["runs"] == 4  # the tiny base × 4 configurations of studies/yhp26.yaml
    assert projection["projected_hours"] > 0 and projection["paper_a100_hours"] == 48.0
    assert projection["bases_without_figures"] == []
    assert "TINY shapes" in "\n".join(projection["lines"])

    run = parts["accelerate"]["result"]
    assert run["returncode"] == 0 and run["command"].startswith("accelerate launch -m ")
    assert run["steps"] == run["steps_logged"] == len(run["losses"]) == 5
    assert run["bins"] == BINS and run["card_records_preflight"] is True
    assert isinstance(run["loss_falls"], bool)

    listwise = parts["listwise"]["result"]
    assert listwise["shape"] == "mistral-7b" and listwise["layers"] == 2
    assert [b["batch_size"] for b in listwise["batches"]] == [1, 2, 4]
    for row in listwise["batches"]:
        assert row["windows_per_s"] > 0 and row["mfu"] is None
    for row in listwise["lists"]:  # a list of 100, windows of 20 step 10: 9 windows a query
        assert row["list_size"] == 100 and row["windows"] == 9 * row["queries"]
        assert row["s_per_query"] > 0

    cuda, full = parts["pytest-cuda"]["result"], parts["pytest-full"]["result"]
    for result in (cuda, full):
        assert result["returncode"] == 0 and "tests/test_devices.py" in result["command"]
        assert result["selection"] == "tests/test_devices.py only (--tiny)"
        assert {"reason": "needs a CUDA GPU", "count": 1} in [
            {k: s[k] for k in ("reason", "count")} for s in result["skip_reasons"]
        ]
    assert "-m cuda" in cuda["command"] and cuda["passed"] == 0 and cuda["skipped"] == 1
    assert full["passed"] > 0 and full["failed"] == full["errors"] == 0

    assert len(doc["goals"]) == 6
    assert all(g["met"] is None and "tiny" in g["note"] for g in doc["goals"])


@pytest.mark.slow
def test_markdown_table_lists_parts_and_goals(tiny_proof: Path) -> None:
    text = (tiny_proof / "gpu_proof.md").read_text()
    assert text.startswith("# GPU proof (TINY smoke run on the CPU: no GPU figure)")
    assert "| # | part | status | seconds | device |" in text
    for number, name in enumerate(TINY_PARTS, start=1):
        assert f"| {number} | {name} | done |" in text
    for needle in (
        "MFU against no peak (no CUDA device)",
        "## Goals",
        "## Training throughput",
        "| qwen3-0.6b | auto |",
        "| qwen3-0.6b | fp32 |",
        "speed-up auto vs fp32",
        "## The 32-run projection",
        "## accelerate launch",
        "## Listwise FIRST scoring",
        "| needs a CUDA GPU | 1 |",
    ):
        assert needle in text, needle


@pytest.mark.slow
def test_second_call_skips_finished_parts(tiny_proof: Path) -> None:
    before = json.loads((tiny_proof / "state.json").read_text())["parts"]
    proc = _run(tiny_proof)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for number, name in enumerate(TINY_PARTS, start=1):
        assert f"part {number} {name}: finished before (skipped)" in proc.stdout
    assert json.loads((tiny_proof / "state.json").read_text())["parts"] == before


@pytest.mark.slow
def test_part_runs_only_that_part_and_waits_for_its_inputs(tmp_path: Path, minilm_path: str):
    proc = _run(tmp_path, "--part", "5")  # pytest-cuda
    assert proc.returncode == 0, proc.stderr[-2000:]
    statuses = {name: part["status"] for name, part in _parts(tmp_path).items()}
    assert statuses == {name: "done" if name == "pytest-cuda" else "pending" for name in TINY_PARTS}
    assert "not finished: train-qwen3-0.6b" in proc.stdout

    proc = _run(tmp_path, "--part", "projection")
    assert proc.returncode == 1
    assert "projection: waits for train-qwen3-0.6b" in proc.stdout

    listed = _run(tmp_path, "--list")
    assert listed.returncode == 0 and " 5 pytest-cuda              done" in listed.stdout

    unknown = _run(tmp_path, "--part", "99")
    assert unknown.returncode == 2 and "--part 99: choose 1 to 7 or a name" in unknown.stderr


def test_another_proofs_folder_and_missing_packages_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proof = _proof_module()
    (tmp_path / "state.json").write_text(json.dumps({"tiny": False, "models": ["bert-base"]}))
    assert proof.main(["--out", str(tmp_path), "--tiny", "--list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds a full proof of bert-base: use another --out" in err

    monkeypatch.setitem(proof.REQUIRED, "no_such_module_for_the_proof", "no-such-package")
    assert proof.main(["--out", str(tmp_path), "--tiny"]) == 2
    err = capsys.readouterr().err
    assert err == "error: gpu_proof.py needs no-such-package: install them\n"


def test_docstring_examples() -> None:
    result = doctest.testmod(_proof_module())
    assert result.attempted > 0 and result.failed == 0
