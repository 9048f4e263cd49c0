"""Nothing rots: every benchmark script has its test, and nothing the project ships names a path
outside the repository (a developer's data folder, home, or scratch space)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

OUTSIDE = re.compile(r"\.\./shared|/work/|/tmp/w\b|/home/|/Users/|/root/|\bC:\\\\Users")
"""Paths of one machine: the real-data folder next to a checkout, a workspace, a home folder."""


def _docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every docstring of a Python file (module, classes, functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree, *ast.walk(tree)]
    found = []
    for node in nodes:
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


def _shipped_texts() -> list[tuple[str, str]]:
    """(where, text) of what a user reads: docs, README, Makefile, cards, and the docstrings
    of the package, the benchmarks and the scripts."""
    texts = []
    for pattern in ("docs/**/*.md", "*.md", "Makefile", "dataset_cards/**/*", "model_cards/**/*"):
        for path in sorted(REPO.glob(pattern)):
            if path.is_file():
                texts.append((str(path.relative_to(REPO)), path.read_text(encoding="utf-8")))
    for folder in ("hf_posbias", "benchmarks", "scripts"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for line, doc in _docstrings(path):
                texts.append((f"{path.relative_to(REPO)}:{line}", doc))
    return texts


def test_nothing_shipped_names_a_path_outside_the_repository():
    texts = _shipped_texts()
    assert any(where == "Makefile" for where, _ in texts) and len(texts) > 100
    found = [
        f"{where}: {match.group(0)!r}" for where, text in texts for match in OUTSIDE.finditer(text)
    ]
    assert not found, "\n".join(found)


def test_the_outside_path_check_can_fail():
    assert OUTSIDE.search("real Wikipedia passages from ../shared/data")
    assert OUTSIDE.search("pip install --target /home/me/sg xgrammar")
    assert not OUTSIDE.search("the real-data folder ``$POSBIAS_SHARED_DATA``; ~/.cache/hf_posbias")


def test_every_benchmark_has_a_test():
    scripts = {p.stem for p in (REPO / "benchmarks").glob("*.py")}
    tested = {
        p.stem.removeprefix("test_") for p in (REPO / "tests" / "benchmarks").glob("test_*.py")
    }
    assert scripts and scripts <= tested, f"benchmarks without a test: {sorted(scripts - tested)}"
