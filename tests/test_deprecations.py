"""docs/deprecations.md lists every former name the code keeps, each with its removal release.

The expected names are read from the code itself: the parser's hidden verb aliases and former flag
spellings, :data:`hf_posbias.deprecation.MOVED_MODULES`, every function decorated with
``former_settings_call``, every class alias documented as a "Former name", and every module
``__getattr__`` that serves a moved or former name.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

from hf_posbias import __version__
from hf_posbias.cli import build_parser
from hf_posbias.deprecation import MOVED_MODULES

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "deprecations.md"
RELEASE = re.compile(r"^\d+\.\d+\.\d+$")


def table() -> dict[str, tuple[str, str, str]]:
    """former (the code span of the second column) → (kind, now, removed in)."""
    rows = {}
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`"):
            rows[cells[1].strip("`")] = (cells[0], cells[2], cells[3])
    return rows


def cli_former_names() -> set[str]:
    found: set[str] = set()

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            found.update(getattr(action, "posbias_aliases", ()))
            if isinstance(action, argparse._SubParsersAction):
                found.update(f"{parser.prog} {old}" for old in action.posbias_renamed)
                for sub in {id(p): p for p in action.choices.values()}.values():
                    walk(sub)

    walk(build_parser())
    return found


def python_former_names() -> set[str]:
    """former_settings_call functions, "Former name" class aliases, shim modules."""
    found = set()
    for path in (REPO / "hf_posbias").rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        body = tree.body
        for i, node in enumerate(body):
            if isinstance(node, ast.FunctionDef):
                if any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", "") == "former_settings_call"
                    for d in node.decorator_list
                ):
                    found.add(f"{module}.{node.name}")
                if node.name == "__getattr__":
                    source = ast.get_source_segment(path.read_text(), node) or ""
                    if re.search(r"\b(former|moved)\b", source, re.I):
                        found.add(module)
            nxt = body[i + 1] if i + 1 < len(body) else None
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and str(nxt.value.value).startswith("Former name")
            ):
                found.update(f"{module}.{t.id}" for t in node.targets if isinstance(t, ast.Name))
    return found


def test_every_former_name_is_in_the_table_with_a_later_removal_release() -> None:
    rows = table()
    expected = cli_former_names() | set(MOVED_MODULES) | python_former_names()
    assert sorted(expected - set(rows)) == []
    current = tuple(map(int, __version__.split(".")))
    for former, (_, _, removed) in rows.items():
        assert RELEASE.match(removed), former
        assert tuple(map(int, removed.split("."))) > current, former


def test_the_scan_finds_each_kind() -> None:
    """The walk is not empty for any kind (a broken scan would pass the test above)."""
    cli = cli_former_names()
    assert {"posbias build", "posbias study bases", "--batch-size"} <= cli
    found = python_former_names()
    assert {
        "hf_posbias.evaluation.runs.runner.evaluate_model",
        "hf_posbias.training.settings.TrainConfig",
        "hf_posbias.training.train",
        "hf_posbias.construction.settings",
    } <= found
