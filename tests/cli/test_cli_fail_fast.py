"""Mistakes that need no model are refused before any heavy library is imported (in seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "sentence_transformers", "mteb", "datasets")

PROBE = f"""
import contextlib, io, json, sys
HEAVY = {HEAVY!r}
from hf_posbias.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    heavy = [m for m in HEAVY if m in sys.modules]
    out.append(dict(argv=argv, code=code, err=err.getvalue().strip(), heavy=heavy))
print(json.dumps(out))
"""


def test_input_mistakes_fail_before_heavy_imports(tmp_path: Path) -> None:
    bad_spec = tmp_path / "bad.yaml"
    bad_spec.write_text("bases: [all-MiniLM-L6-v2]\nconfigs: [uniforn]\ndata: d\ntasks: [t]\n")
    missing_task = tmp_path / "study.yaml"
    missing_task.write_text(f"bases: [all-MiniLM-L6-v2]\ndata: {tmp_path}\ntasks: [/nonexistent]\n")
    out = str(tmp_path / "out")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"query": "q", "positive": "p"}\n')
    train = ["train", "--model", "bert-base", "--config", "uniform", "--out", out, "--data"]
    cases = [
        ["evaluate", "--model", "all-MiniLM-L6-v2", "--task", "/nonexistent", "--out", out],
        ["evaluate", "--model", "all-MiniLM-L6-v2", "--task", "SQuAD-PosQ-tiyn", "--out", out],
        ["evaluate", "--model", "all-MiniLM-L6-v2", "--task", "t", "--out", out, "--top-k", "0"],
        ["study", "run", str(bad_spec), "--out", out],
        ["study", "run", str(missing_task), "--out", out],
        [*train, str(rows)],
        [*train, str(tmp_path / "missing")],
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(cases)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,  # a guard against a hang, not a speed test
    )
    assert result.returncode == 0, result.stderr
    for case in json.loads(result.stdout):
        assert case["code"] == 2, case
        assert case["err"].startswith("error: ") and "\n" not in case["err"], case
        assert case["heavy"] == [], case
    assert not Path(out).exists()
    by_task = json.loads(result.stdout)
    assert "does not exist" in by_task[0]["err"]
    assert "(did you mean 'SQuAD-PosQ-tiny'?)" in by_task[1]["err"]
    assert f"--data {rows} is a file; it takes a training-set folder" in by_task[5]["err"]
    assert f"--data: folder {tmp_path / 'missing'} does not exist" in by_task[6]["err"]
