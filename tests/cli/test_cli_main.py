"""`posbias` turns disk errors (read-only or foreign folder, full disk) into one line naming the
path."""

from __future__ import annotations

import errno
import os

import pytest

from hf_posbias.cli import main


def _argv(out) -> list[str]:
    return ["evaluate", "--model", "bm25", "--task", "SciFact-Evidence", "--out", str(out)]


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS])
def test_an_unwritable_output_folder_is_one_line(tmp_path, capsys, monkeypatch, code) -> None:
    """We run as root (chmod does not stop root): the refusal is raised at the write itself."""
    real_open = os.open

    def refuse(path, flags, *args):
        if flags & os.O_CREAT:
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr("hf_posbias.locks.os.open", refuse)
    assert main(_argv(tmp_path / "out")) == 2
    line = _one_line(capsys)
    assert line == (
        f"error: cannot write {tmp_path / 'out' / '.posbias.lock'}: {os.strerror(code)} "
        "(make the folder writable or choose another --out)"
    )


def test_a_full_disk_is_one_line_naming_the_output_folder(tmp_path, capsys, monkeypatch) -> None:
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # file.write names no file

    monkeypatch.setattr("hf_posbias.evaluation.runs.runner.evaluate_model", full)
    assert main(_argv(tmp_path / "out")) == 2
    assert _one_line(capsys) == (
        f"error: cannot write in {tmp_path / 'out'}: {os.strerror(errno.ENOSPC)} "
        "(free space; a rerun resumes)"
    )


def test_other_os_errors_stay_tracebacks(tmp_path, monkeypatch) -> None:
    """A programming error (here ENOENT from a bug) is not disguised as a user's disk problem."""

    def bug(*args, **kwargs):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "internal.tmp")

    monkeypatch.setattr("hf_posbias.evaluation.runs.runner.evaluate_model", bug)
    with pytest.raises(FileNotFoundError):
        main(_argv(tmp_path / "out"))
