"""The map is true: docs/architecture.md names real modules, and the import rules it states hold.

The rules are read from the page itself (its rooms table: floor, room, rule), and the imports
from the code (every import statement, lazy and ``TYPE_CHECKING`` ones included), so a change
to either that breaks the other fails here.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "hf_posbias"
ARCHITECTURE = REPO / "docs" / "architecture.md"
CONTRIBUTING = REPO / "CONTRIBUTING.md"

MAX_ROOM_SHARE = 0.15
"""No subpackage holds more than this share of the package's lines."""

MAX_TOP_LEVEL_SHARE = 0.10
"""The loose modules at the top level (``hf_posbias/*.py``) hold at most this share together."""

MAX_MODULE_LINES = 800
"""No module is longer than this."""


FILE_SUFFIXES = (".parquet", ".json", ".jsonl", ".md", ".py", ".csv", ".yaml", ".txt")
"""A code span ending so names a file (``corpus.parquet``), not a module."""

CHECKED_TREES = ("hf_posbias", "tests", "scripts", "benchmarks", "spaces")
"""Where every import must name the module that defines the name."""


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def room_of(module: str) -> str:
    """The room of a module: the longest room of the map that holds it (a room may hold rooms of
    its own on lower floors), else its top-level subpackage or module under ``hf_posbias``; the
    package face ``hf_posbias`` is a room of one module."""
    if module == "hf_posbias":
        return module
    mapped = [
        r for r in floors() if r != "hf_posbias" and (module == r or module.startswith(f"{r}."))
    ]
    return max(mapped, key=len) if mapped else ".".join(module.split(".")[:2])


def imported_modules(module: str) -> set[str]:
    """The package modules ``module`` imports, resolved to the most specific existing module."""
    mods = modules()
    path = mods[module]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if path.name == "__init__.py" else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in mods:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


@cache
def module_graph() -> dict[str, set[str]]:
    return {m: imported_modules(m) for m in modules()}


@cache
def room_imports() -> dict[str, dict[str, set[str]]]:
    """room → imported room → the module-level arrows behind it."""
    rooms: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for source, targets in module_graph().items():
        for target in targets:
            a, b = room_of(source), room_of(target)
            if a != b:
                rooms[a][b].add(f"{source} -> {target}")
    return rooms


@cache
def floors() -> dict[str, int]:
    """The rooms table of docs/architecture.md: room → floor."""
    text = ARCHITECTURE.read_text()
    section = text.split("## Rooms", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        for room in re.findall(r"`(hf_posbias(?:\.[a-z0-9_]+)*)`", cells[1]):
            assert room not in table, f"{room} is listed twice in the rooms table"
            table[room] = int(cells[0])
    return table


@cache
def entry_points() -> dict[tuple[str, ...], list[str]]:
    """The rooms table's last column: the rooms of a row → the Python names it lists."""
    section = ARCHITECTURE.read_text().split("## Rooms", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            rooms = tuple(re.findall(r"`(hf_posbias(?:\.[a-z0-9_]+)*)`", cells[1]))
            rows[rooms] = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cells[3])
    return rows


def test_every_entry_point_on_the_map_is_defined_in_its_room():
    missing = [
        f"{name} ({', '.join(rooms)})"
        for rooms, names in entry_points().items()
        for name in names
        if not any(
            _defines(path, name) for module, path in modules().items() if room_of(module) in rooms
        )
    ]
    assert missing == []


def test_every_room_is_on_the_map_and_every_mapped_room_exists():
    rooms = {room_of(m) for m in modules()}
    mapped = set(floors())
    assert sorted(rooms - mapped) == [], "rooms missing from docs/architecture.md's rooms table"
    assert sorted(mapped - rooms) == [], "rooms in docs/architecture.md that do not exist"


def test_no_import_runs_back_up():
    """A room imports only rooms on lower floors (one direction, lazy imports included)."""
    floor = floors()
    upward = [
        arrow
        for source, targets in room_imports().items()
        for target, arrows in targets.items()
        if floor[target] >= floor[source]
        for arrow in sorted(arrows)
    ]
    assert upward == []


def test_statistics_is_a_leaf():
    """hf_posbias.statistics imports no other subpackage (only single-module helpers)."""
    packages = {room_of(m) for m in modules() if modules()[m].name == "__init__.py"}
    leaks = {
        target: sorted(arrows)
        for target, arrows in room_imports()["hf_posbias.statistics"].items()
        if target in packages
    }
    assert leaks == {}


def _rule(pattern: str) -> list[str]:
    """The rooms named in the sentence of docs/architecture.md that ``pattern`` finds."""
    found = re.search(pattern, " ".join(ARCHITECTURE.read_text().split()))
    assert found, f"docs/architecture.md no longer states the rule {pattern!r}"
    return [f"hf_posbias.{room}" for room in re.findall(r"`([a-z_]+)`", found.group(1))]


def listwise_users() -> set[str]:
    """The rooms allowed to import hf_posbias.listwise, as the page says."""
    return {*_rule(r"nothing outside (.*?) imports `hf_posbias\.listwise`")}


def test_only_the_listwise_users_import_listwise():
    users = listwise_users()
    assert {"hf_posbias.listwise", "hf_posbias.study", "hf_posbias.cli"} <= users
    outside = {
        source: sorted(targets["hf_posbias.listwise"])
        for source, targets in room_imports().items()
        if "hf_posbias.listwise" in targets and source not in users
    }
    assert outside == {}


def test_evaluation_imports_neither_analysis_nor_listwise():
    targets = room_imports()["hf_posbias.evaluation"]
    assert "hf_posbias.analysis" not in targets
    assert "hf_posbias.listwise" not in targets


def reexporting_faces() -> set[str]:
    """The modules the page names as the faces that re-export names defined elsewhere."""
    found = re.search(
        r"The faces that re-export are (.*?)\.(?:\s|$)", " ".join(ARCHITECTURE.read_text().split())
    )
    assert found, "docs/architecture.md names the faces that re-export"
    return set(re.findall(r"`(hf_posbias(?:\.[a-z0-9_]+)*)`", found.group(1)))


def _binds(path: Path, name: str) -> bool:
    """Whether the module at ``path`` defines ``name`` itself (a def, a class, an assignment),
    not by importing it from another module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return True
    return False


def test_every_import_names_the_module_that_defines_the_name():
    """One import path per name: ``from hf_posbias.X import name`` finds ``name`` defined in X
    (or X.name is a module), in the package, its tests, scripts, benchmarks and the Space; only
    the faces the page names re-export."""
    mods, faces = modules(), reexporting_faces()
    assert "hf_posbias" in faces and faces <= set(mods)
    passed_through = []
    for tree in CHECKED_TREES:
        for path in sorted((REPO / tree).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ImportFrom) or node.level or node.module not in mods:
                    continue
                if node.module in faces:
                    continue
                passed_through += [
                    f"{path.relative_to(REPO)}:{node.lineno}: {node.module}.{alias.name}"
                    for alias in node.names
                    if f"{node.module}.{alias.name}" not in mods
                    and not _binds(mods[node.module], alias.name)
                ]
    assert passed_through == []


def test_no_import_cycles():
    graph = module_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if v.startswith(w + "."):
                continue  # a module importing its own package's face is not a cycle
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []


def test_no_room_holds_more_than_its_share_of_lines():
    lines: dict[str, int] = defaultdict(int)
    for name, path in modules().items():
        lines[room_of(name)] += len(path.read_text().splitlines())
    total = sum(lines.values())
    big = {room: round(n / total, 3) for room, n in lines.items() if n / total > MAX_ROOM_SHARE}
    assert big == {}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_the_loose_top_level_modules_hold_at_most_their_share():
    """The modules directly under ``hf_posbias/`` count together, like a room (issue 41)."""
    total = sum(_lines(path) for path in modules().values())
    top = sum(_lines(path) for path in modules().values() if path.parent == PACKAGE)
    assert top / total <= MAX_TOP_LEVEL_SHARE, f"top level: {top} of {total} lines"


def test_no_module_is_over_the_line_limit():
    lengths = {name: _lines(path) for name, path in modules().items()}
    assert {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES} == {}


def _defines(path: Path, name: str) -> bool:
    """Whether ``name`` is bound at the top level of the module at ``path`` (or in a class)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (a.asname or a.name.split(".")[0]) == name for a in node.names
        ):
            return True
    # a lazy package face lists what it serves in __all__
    return f'"{name}"' in path.read_text() and "__getattr__" in path.read_text()


def unresolved_names(text: str) -> list[str]:
    """Dotted ``hf_posbias.…`` names and ``hf_posbias/…`` paths in ``text`` that do not exist."""
    mods = modules()
    missing = []
    dotted = set(re.findall(r"\bhf_posbias(?:\.[A-Za-z_][A-Za-z0-9_]*)+", text))
    # short forms in code spans, e.g. `evaluation.runs.runner`, name a module of a room
    rooms = {room_of(m).partition(".")[2] for m in mods} - {""}
    for span in re.findall(r"`([a-z_][A-Za-z0-9_.]*)`", text):
        if span.partition(".")[0] in rooms and "." in span and not span.endswith(FILE_SUFFIXES):
            dotted.add(f"hf_posbias.{span}")
    from hf_posbias.plugins import GROUPS

    dotted -= set(GROUPS.values())  # entry-point groups, not modules (hf_posbias.benchmarks …)
    for name in sorted(dotted):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in mods:
                rest = parts[cut:]
                if rest and not _defines(mods[module], rest[0]):
                    missing.append(name)
                break
        else:
            missing.append(name)
    paths = re.findall(r"\b(?:hf_posbias|tests|docs|benchmarks)/[\w/.-]*\w(?![\w<])", text)
    for path in sorted(set(paths)):
        if not (REPO / path).exists():
            missing.append(path)
    return missing


@pytest.mark.parametrize("page", [ARCHITECTURE, CONTRIBUTING], ids=lambda p: p.name)
def test_every_module_and_path_named_exists(page: Path):
    assert unresolved_names(page.read_text()) == []


def test_contributing_lists_the_registered_cli_modules():
    from hf_posbias.cli import COMMAND_MODULES

    text = CONTRIBUTING.read_text()
    listed = re.search(r"Registered modules[^:]*:(.*?)\.\n", text, re.S)
    assert listed, "CONTRIBUTING.md names the registered CLI modules"
    names = re.findall(r"`([a-z_]+)`", listed.group(1))
    assert names == [m.rpartition(".")[2] for m in COMMAND_MODULES]


def test_the_checks_see_lazy_imports_and_stale_names():
    """The walk sees an import inside a function (what a back-up arrow usually is), and a
    module path that moved away is reported."""
    arrows = room_imports()["hf_posbias.evaluation"]["hf_posbias.rerankers"]
    assert "hf_posbias.evaluation.runs.listwise_stage -> hf_posbias.rerankers.window" in arrows
    assert unresolved_names("`hf_posbias.evaluation.data.tasks` `hf_posbias/tasks.py`") == [
        "hf_posbias.evaluation.data.tasks",
        "hf_posbias/tasks.py",
    ]
