"""The Space stands on the library's public names (issue 40): each name it imports is a public
name of the module that defines it (never the command line's internals nor the test helpers),
and a layout a reader can follow."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "spaces" / "evidence-moving" / "app.py"


def _imports() -> list[tuple[str, list[str]]]:
    found = []
    for node in ast.walk(ast.parse(APP.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hf_posbias"):
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("hf_posbias")]
    return found


def test_the_space_takes_public_names_from_the_modules_that_define_them() -> None:
    taken = [(module, name) for module, names in _imports() for name in names]
    assert taken, "the Space imports nothing from hf_posbias"
    private = [f"{m}.{n}" for m, n in taken if n.startswith("_") or "._" in m]
    assert private == []
    internal = sorted(
        {m for m, _ in taken if m.startswith(("hf_posbias.cli", "hf_posbias.testing"))}
    )
    assert internal == []
    for module, name in taken:
        value = getattr(importlib.import_module(module), name)
        # a function or class is defined where the Space imports it from, not passed through
        owner = getattr(value, "__module__", module)
        assert owner == module or not callable(value), f"{module}.{name} is defined in {owner}"


def test_build_demo_is_three_tabs_of_named_functions() -> None:
    tree = ast.parse(APP.read_text())
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    build = functions["build_demo"]
    assert build.end_lineno - build.lineno < 20
    called = {
        n.func.id for n in ast.walk(build) if isinstance(n, ast.Call) and hasattr(n.func, "id")
    }
    assert {"evidence_tab", "listwise_tab", "leaderboard_tab"} <= called
