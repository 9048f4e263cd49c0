"""``hf_posbias.output_folders``: the one claim of an output folder, case by case (the verbs go
through it in tests/cli/test_writing_verbs.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hf_posbias.errors import InputError
from hf_posbias.output_folders import (
    REPLACED,
    RUN_RECORD,
    Claim,
    claim_output_folder,
    finish_current_run,
    kept_line,
    parameter_changes,
    read_run_record,
    run_parameters,
    stop_note,
)
from hf_posbias.settings import setting

COMMAND = "posbias evaluate"
PLOT = "posbias benchmark plot-evidence"


def _claim(
    out: Path, params: dict, body: Callable[[], object] = lambda: None, **kwargs: object
) -> Claim:
    """One run: claim ``out`` (as ``posbias evaluate`` unless ``command=``), run ``body``."""
    kwargs.setdefault("command", COMMAND)
    with claim_output_folder(out, params, **kwargs) as claim:  # type: ignore[arg-type]
        if claim.state != "finished":
            body()
    return claim


def _write(path: Path, text: str) -> Callable[[], object]:
    return lambda: path.write_text(text)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_folder_of_another_verb_is_refused_and_replaced_only_with_overwrite(tmp_path):
    out = tmp_path / "runs" / "x"
    _claim(out, {"task": "a"}, _write(out / "summary.json", "a"))
    with pytest.raises(InputError, match=r"x holds a run with other parameters \(posbias evaluate"):
        _claim(out, {"task": "a"}, command="posbias compare")
    _claim(
        out, {"k": 1}, _write(out / "compare.md", "b"), command="posbias compare", overwrite=True
    )
    assert _names(out) == [RUN_RECORD, "compare.md"]
    assert read_run_record(out)["command"] == "posbias compare"


def test_files_of_no_run_are_refused_even_with_overwrite(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.md").write_text("keep me")
    (out / ".DS_Store").write_text("")  # hidden: no content of the folder
    for overwrite in (False, True):
        with pytest.raises(InputError, match=r"mine holds files of no posbias run \(notes.md\)"):
            _claim(out, {}, overwrite=overwrite)
    assert (out / "notes.md").read_text() == "keep me"


def test_a_failed_replacement_brings_the_old_run_back(tmp_path):
    out = tmp_path / "x"
    _claim(out, {"task": "a"}, _write(out / "summary.json", "run a"))

    def half_of_b() -> None:
        (out / "summary.json").write_text("half of b")
        (out / "extra.json").write_text("b only")
        raise RuntimeError("the model broke")

    with pytest.raises(RuntimeError) as raised:
        _claim(out, {"task": "b"}, half_of_b, overwrite=True)
    assert stop_note(raised.value).text == f"{out} holds its previous run again"
    assert _names(out) == [RUN_RECORD, "summary.json"]
    assert (out / "summary.json").read_text() == "run a"
    assert read_run_record(out)["params"] == {"task": "a"}


def test_a_replacement_killed_midway_is_undone_by_the_next_claim(tmp_path):
    """``kill -9`` leaves the set-aside old run and the new run's first files: the next claim
    puts the old run back before it decides anything."""
    out = tmp_path / "x"
    _claim(out, {"task": "a"}, _write(out / "summary.json", "run a"))
    aside = out / REPLACED
    aside.mkdir()
    for name in ("summary.json", RUN_RECORD):
        (out / name).rename(aside / name)
    (out / RUN_RECORD).write_text(json.dumps({"command": COMMAND, "params": {"task": "b"}}))
    (out / "half.json").write_text("b")
    assert _claim(out, {"task": "a"}).state == "finished"
    assert _names(out) == [RUN_RECORD, "summary.json"]


def _interrupt() -> None:
    raise KeyboardInterrupt


def test_a_failed_run_leaves_nothing_or_its_resumable_state(tmp_path):
    made = tmp_path / "new"
    with pytest.raises(KeyboardInterrupt) as raised:
        _claim(made, {}, lambda: ((made / "mteb-results").mkdir(), _interrupt()))
    assert not made.exists()
    assert stop_note(raised.value).text == f"nothing was kept in {made}"
    assert stop_note(raised.value).kept is False

    kept = tmp_path / "kept"
    keeps = "its finished shards"
    with pytest.raises(KeyboardInterrupt) as raised:
        _claim(kept, {}, lambda: ((kept / "shards").mkdir(), _interrupt()), keeps=keeps)
    assert stop_note(raised.value).text == kept_line(kept, keeps)
    assert kept_line(kept, keeps) == f"{kept} keeps {keeps}; the same command resumes from there"
    assert read_run_record(kept)["finished"] is False
    resumed = _claim(kept, {}, lambda: (kept / "shards").rmdir(), keeps=keeps)
    assert resumed.state == "resumed" and read_run_record(kept)["finished"] is True


def test_an_unfinished_run_of_a_verb_that_keeps_nothing_starts_again(tmp_path):
    """What a killed run left (no resumable state) goes before the same run starts again."""
    out = tmp_path / "x"
    _claim(out, {"task": "a"}, _write(out / "summary.json", "run a"))
    (out / RUN_RECORD).write_text(json.dumps({**read_run_record(out), "finished": False}))
    (out / "half.parquet").write_bytes(b"cut")
    seen: list[list[str]] = []
    claim = _claim(out, {"task": "a"}, lambda: seen.append(_names(out)))
    assert seen == [[RUN_RECORD, ".posbias.lock"]]  # the record of this run, the lock: no more
    assert claim.state == "resumed" and read_run_record(out)["finished"] is True


def test_a_verb_marks_its_output_finished_before_a_later_step_fails(tmp_path):
    """train saves the checkpoint, then uploads it: an upload that fails keeps the checkpoint."""
    out = tmp_path / "ckpt"

    def save_then_fail_to_upload() -> None:
        (out / "model.safetensors").write_bytes(b"weights")
        finish_current_run()
        raise InputError("the Hub refused the upload")

    with pytest.raises(InputError) as raised:
        _claim(out, {"config": "begin"}, save_then_fail_to_upload, command="posbias train")
    assert (out / "model.safetensors").read_bytes() == b"weights"
    assert stop_note(raised.value).text == f"{out} holds the run's finished output"


def test_a_file_output_keeps_its_record_beside_it(tmp_path):
    png = tmp_path / "figs" / "evidence.png"
    _claim(png, {"bins": 20}, lambda: png.write_bytes(b"png a"), command=PLOT, file=True)
    (tmp_path / "figs" / "other.png").write_bytes(b"not ours")
    with pytest.raises(InputError, match="evidence.png holds a run with other parameters"):
        _claim(png, {"bins": 10}, command=PLOT, file=True)
    body = lambda: png.write_bytes(b"png b")  # noqa: E731
    _claim(png, {"bins": 10}, body, command=PLOT, file=True, overwrite=True)
    assert _names(png.parent) == [f".evidence.png{RUN_RECORD}", "evidence.png", "other.png"]
    assert png.read_bytes() == b"png b"


@dataclass
class _Settings:
    task: str = setting("task folder")
    out: str = setting("output folder")
    progress: bool = setting("bars", default=True)
    batch_size: int = setting("inputs per pass", default=32)
    seed: int = setting("seed", default=0)


def test_parameters_are_the_settings_less_run_controls_plus_input_digests(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "queries.parquet").write_bytes(b"q1")
    params = run_parameters(_Settings(task=f"{task}/", out=str(tmp_path / "out")))
    assert set(params) == {"task", "seed", "inputs"}  # no --progress, --batch-size, --out
    assert params["task"] == str(task.resolve())  # `task/` and `./task` are one input
    assert run_parameters(_Settings(task=str(task), out="elsewhere", batch_size=8)) == params
    (task / "queries.parquet").write_bytes(b"q2")
    changed = run_parameters(_Settings(task=str(task), out=str(tmp_path / "out")))
    assert parameter_changes(params, changed) == [
        f"{task.resolve()}: its content changed since that run"
    ]
    with pytest.raises(InputError, match=r"--task .* lies inside --out"):
        run_parameters(_Settings(task=str(task), out=str(tmp_path)))
