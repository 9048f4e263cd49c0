"""The Space stands on the library's public paths (issue 40): few hf_posbias modules, every name it
takes from :mod:`hf_posbias.apps` is one that module serves, and a layout a reader can follow."""

from __future__ import annotations

import ast
from pathlib import Path

from hf_posbias import apps

APP = Path(__file__).resolve().parents[2] / "spaces" / "evidence-moving" / "app.py"


def _imports() -> list[tuple[str, list[str]]]:
    found = []
    for node in ast.walk(ast.parse(APP.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hf_posbias"):
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("hf_posbias")]
    return found


def test_the_space_imports_at_most_three_package_modules() -> None:
    modules = {module for module, _ in _imports()}
    assert len(modules) <= 3, modules
    taken = {name for module, names in _imports() if module == "hf_posbias.apps" for name in names}
    assert taken and taken <= set(apps.__all__)


def test_build_demo_is_three_tabs_of_named_functions() -> None:
    tree = ast.parse(APP.read_text())
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    build = functions["build_demo"]
    assert build.end_lineno - build.lineno < 20
    called = {
        n.func.id for n in ast.walk(build) if isinstance(n, ast.Call) and hasattr(n.func, "id")
    }
    assert {"evidence_tab", "listwise_tab", "leaderboard_tab"} <= called
