"""Assemble the Space as it is deployed: this folder plus a copy of the ``hf_posbias`` source.

hf-posbias is not on a package index, so a Space cannot ``pip install`` it; the deploy folder
carries the package next to ``app.py`` (Python finds it there, as ``python app.py`` puts the
app's folder first on ``sys.path``) and ``requirements.txt`` names only the package's
dependencies, all on PyPI.

Usage (from anywhere)::

    python spaces/evidence-moving/build.py dist/space
    hf upload <org>/<space> dist/space . --repo-type space
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

SPACE = Path(__file__).resolve().parent
PACKAGE = SPACE.parents[1] / "hf_posbias"
FILES = ("app.py", "README.md", "requirements.txt")


def build(out: str | Path) -> Path:
    """Write the deployable Space folder into ``out`` (replaced if it exists) and return it."""
    out = Path(out).resolve()
    if out == SPACE or out in SPACE.parents:
        raise SystemExit(f"error: build into a new folder, not {out} (it holds the sources)")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in FILES:
        shutil.copy2(SPACE / name, out / name)
    shutil.copytree(
        PACKAGE, out / "hf_posbias", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python spaces/evidence-moving/build.py OUT")
    print(f"wrote {build(sys.argv[1])}")
