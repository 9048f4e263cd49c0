"""Former module paths keep importing (with a DeprecationWarning) and serve the new modules'
names; the new modules themselves are left as they are."""

from __future__ import annotations

import json
import subprocess
import sys

from hf_posbias.deprecation import MOVED_MODULES

# One fresh process: a path imported earlier in the test session would not warn again.
CHECK = r"""
import importlib, json, sys, warnings
from hf_posbias.deprecation import MOVED_MODULES

report = {}
for old, new in MOVED_MODULES.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        former = importlib.import_module(old)
    current = importlib.import_module(new)
    names = [n for n in getattr(current, "__all__", vars(current)) if not n.startswith("_")]
    report[old] = {
        "warned": any(
            issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught
        ),
        "same_objects": all(getattr(former, n) is getattr(current, n) for n in names),
        "names": len(names),
        "new_spec_intact": current.__spec__.name == new and current.__name__ == new,
    }
print(json.dumps(report))
"""


def test_every_former_path_warns_and_serves_the_new_module():
    out = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, check=True
    ).stdout
    report = json.loads(out)
    assert set(report) == set(MOVED_MODULES)
    bad = {old: r for old, r in report.items() if not (r["warned"] and r["new_spec_intact"])}
    assert bad == {}
    assert all(r["same_objects"] and r["names"] > 0 for r in report.values())


def test_from_import_of_a_former_path(recwarn):
    from hf_posbias.evaluation.data.benchmarks import build_from_records as former

    from hf_posbias.tasks.benchmarks import build_from_records

    assert former is build_from_records


def test_a_path_that_never_existed_still_fails():
    import importlib

    import pytest

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("hf_posbias.evaluation.nothing_here")
