"""Every docstring example in ``hf_posbias`` runs and prints what it says (CONTRIBUTING: public
functions carry a runnable ``Example:``).

One test per module, so a failure names the module and ``pytest -n`` spreads the work. A module
is skipped only when importing it needs an optional dependency that is not installed.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil
from pathlib import Path

import pytest

import hf_posbias

PACKAGE_ROOT = Path(hf_posbias.__file__).parent


def _module_names() -> list[str]:
    """Every ``.py`` file of the package as a module name, including folders without an
    ``__init__.py`` (the ``evaluate`` metric folder, imported as a namespace package).
    ``__main__`` modules are scripts (importing one runs the CLI), not library code."""
    names = set()
    for path in PACKAGE_ROOT.rglob("*.py"):
        parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


MODULES = _module_names()


def test_the_module_list_covers_what_pkgutil_finds() -> None:
    found = {i.name for i in pkgutil.walk_packages(hf_posbias.__path__, prefix="hf_posbias.")}
    missing = {n for n in found if not n.endswith(".__main__")} - set(MODULES)
    assert not missing and "hf_posbias.statistics.metrics.psi.psi" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and not err.name.startswith("hf_posbias"):
            pytest.skip(
                f"{name} needs the optional dependency {err.name} (pip install 'hf-posbias[all]')"
            )
        raise
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    if not tests:
        pytest.skip(f"{name} has no docstring examples")
    # Examples that write relative paths write them here, not into the checkout.
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    for test in sorted(tests, key=lambda t: t.name):
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, report.getvalue()
    assert result.attempted > 0
