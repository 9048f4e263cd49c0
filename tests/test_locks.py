"""The output-folder lock: a second run is refused, a dead holder's lock is taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from hf_posbias.errors import InputError
from hf_posbias.locks import LOCK_NAME, UNREADABLE_STALE_S, is_stale, output_lock, read_holder


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_second_run_is_refused_naming_the_holder(tmp_path) -> None:
    out = tmp_path / "out"
    with output_lock(out, command="posbias data build") as lock:
        holder = read_holder(lock)
        assert holder is not None
        assert (holder["pid"], holder["host"]) == (os.getpid(), socket.gethostname())
        refused = pytest.raises(
            InputError, match=rf"in use by posbias data build \(pid {os.getpid()} "
        )
        with refused, output_lock(out, command="posbias data build"):
            pass
        (out / "result.json").write_text("{}")
    assert not (out / LOCK_NAME).exists()
    assert (out / "result.json").exists()  # a folder with results stays


def test_a_dead_holders_lock_is_stale_and_taken_over(tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lock = out / LOCK_NAME
    host = socket.gethostname()
    lock.write_text(json.dumps({"pid": _dead_pid(), "host": host, "command": "x"}))
    assert is_stale(lock)
    with output_lock(out, command="posbias evaluate"):
        assert read_holder(lock)["pid"] == os.getpid()
    # Another host's holder cannot be checked from here: not stale.
    lock.write_text(json.dumps({"pid": _dead_pid(), "host": host + "-other", "command": "x"}))
    assert not is_stale(lock)
    with pytest.raises(InputError, match="in use by x"), output_lock(out, command="evaluate"):
        pass
    # A lock left unreadable by a writer that died is stale once old enough.
    lock.write_text("")
    assert not is_stale(lock)
    old = time.time() - UNREADABLE_STALE_S - 1
    os.utime(lock, (old, old))
    assert is_stale(lock)


def test_two_cli_runs_on_one_folder(tmp_path, capsys) -> None:
    """The CLI takes the lock: a second `posbias evaluate` on a held folder is one line."""
    from hf_posbias.cli import main

    out = tmp_path / "out"
    with output_lock(out, command="posbias evaluate"):
        argv = ["evaluate", "--model", "bm25", "--task", "SciFact-Evidence", "--out", str(out)]
        assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is in use by posbias evaluate" in err[0], err


def test_shards_of_one_study_run_side_by_side(tmp_path) -> None:
    """A study's shards share its folder by design: each holds its own lock; a folder holding
    only locks still counts as empty for the study's folder check."""
    from hf_posbias.study.spec import StudySpec, check_out_folder

    out = tmp_path / "study"
    spec = StudySpec(bases=["bert-base"], data="d", tasks=["t"])
    with output_lock(out, command="posbias study run", part="0/2"):
        with output_lock(out, command="posbias study run", part="1/2"):
            check_out_folder(spec, out)
        with pytest.raises(InputError, match="in use"), output_lock(out, command="x", part="0/2"):
            pass
