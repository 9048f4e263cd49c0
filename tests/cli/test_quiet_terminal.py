"""The terminal speaks plainly: no library debug line or notice without ``-v``, this package's
warnings on one line without a file path."""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings

import pytest
from task_fixtures import wiki_task

from hf_posbias.cli import PACKAGE_DIR, main


def test_a_bm25_evaluation_prints_its_own_lines_only(shared_data, tmp_path):
    """A subprocess: the process's own stderr, logging configured as the command line does."""
    task = wiki_task(shared_data, tmp_path / "task", n_docs=9)
    argv = ["evaluate", "--model", "bm25", "--task", str(task), "--out", str(tmp_path / "o")]
    done = subprocess.run(
        [sys.executable, "-m", "hf_posbias.cli", *argv], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert not [line for line in lines if "bm25s:" in line or ".py:" in line], lines
    assert lines[0].startswith("INFO hf_posbias.evaluation.runs.runner: evaluating")
    assert ": done in " in lines[-1]
    assert len(lines) == 2, lines


@pytest.mark.parametrize("verbose", [False, True])
def test_library_debug_lines_only_with_v(verbose, caplog, capsys):
    """bm25s sets its logger to DEBUG when imported: the command line's handlers filter it."""
    argv = ["-v"] * verbose + ["list", "benchmarks"]
    library = logging.getLogger("bm25s")
    level = library.level
    with caplog.at_level(logging.DEBUG):
        assert main(argv) == 0
        library.setLevel(logging.DEBUG)  # as bm25s does when a run imports it
        try:
            library.debug("Building index from IDs objects")
        finally:
            library.setLevel(level)
        logging.getLogger("hf_posbias.bm25").debug("ours")
    names = [r.name for r in caplog.records]
    assert ("bm25s" in names) is verbose and "hf_posbias.bm25" in names


@pytest.mark.parametrize("verbose", [False, True])
def test_warnings_one_line_ours_and_libraries_only_with_v(verbose, monkeypatch):
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # restored after
    assert main(["-v"] * verbose + ["list", "benchmarks"]) == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn_explicit("window 25 is larger", UserWarning, f"{PACKAGE_DIR}/w.py", 3)
        warnings.warn_explicit("a library's notice", UserWarning, "/site-packages/lib/x.py", 7)
    # What Python writes on stderr for each: the format the command line set.
    err = "".join(
        warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught
    )
    assert err.startswith("warning: window 25 is larger\n")
    assert ("a library's notice" in err) is verbose
    assert f"{PACKAGE_DIR}/w.py" not in err


def test_the_libraries_notices_go_and_this_packages_deprecations_stay(capsys):
    # Without -v the command line drops the libraries' FutureWarnings (mteb's renamed methods),
    # never this package's own: from 0.2.0 on a deprecated name warns, as one line.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["list", "bases"]) == 0
        for module in ("hf_posbias.x", "mteb.models"):
            warnings.warn_explicit("renamed", FutureWarning, f"{module}.py", 1, module=module)
    assert [w.filename for w in caught] == ["hf_posbias.x.py"]
