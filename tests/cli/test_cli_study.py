"""`posbias study run` on a bad spec: every mistake on one line under its key path, nothing
written, and the corrected spec accepted in the same folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_posbias.cli import main
from hf_posbias.study.spec import load_spec

GOOD = "bases: [bert-base]\ndata: org/train\ntasks: [SciFact-Evidence]\n"


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


def _run(tmp_path: Path, text: str, *flags: str, name: str = "spec.yaml") -> int:
    spec = tmp_path / name
    spec.write_text(text)
    return main(["study", "run", str(spec), "--out", str(tmp_path / "out"), *flags])


def test_yaml_syntax_error_names_file_line_and_column(tmp_path, capsys) -> None:
    assert _run(tmp_path, "bases: [bert-base]\ntasks: [a\nconfigs: [x]\n") == 2
    line = _error(capsys)
    assert f"{tmp_path / 'spec.yaml'}:3:8: not valid YAML" in line, line
    assert _run(tmp_path, '{"bases": ["a"],\n "data": }', name="spec.json") == 2
    assert f"{tmp_path / 'spec.json'}:2:10: not valid JSON" in _error(capsys)


def test_every_error_is_reported_at_once_under_its_key_path(tmp_path, capsys) -> None:
    text = (
        GOOD + "configs: [begin, uniforn]\nbootstrap: many\nseed: [1, 2]\n"
        "training: {max_step: 3, max_steps: -4}\ncolor: red\n"
    )
    assert _run(tmp_path, text) == 2
    line = _error(capsys)
    assert "colour" not in line and "color: unknown key" in line
    # Unknown keys first (the rest is checked once the keys are right).
    assert _run(tmp_path, text.replace("color: red\n", "")) == 2
    line = _error(capsys)
    assert line.startswith(f"error: {tmp_path / 'spec.yaml'}: 5 errors: "), line
    for part in (
        "configs[1]: unknown configuration 'uniforn' (did you mean 'uniform'?)",
        "bootstrap: expected a whole number, got 'many'",
        "seed: expected a whole number, got [1, 2]",
        "training.max_step: unknown training setting 'max_step' (did you mean 'max_steps'?)",
        "training.max_steps: must be >= 1, got -4",
    ):
        assert part in line, part
    assert "--" not in line  # no flag names for what the file says
    assert not (tmp_path / "out").exists()


def test_tasks_written_as_a_string_names_the_key_and_the_form(tmp_path, capsys) -> None:
    assert _run(tmp_path, GOOD.replace("[SciFact-Evidence]", "SciFact-Evidence")) == 2
    assert (
        "tasks: expected a list (e.g. [x, y]) of strings or mappings (key: value lines), "
        "got 'SciFact-Evidence' (write " in (_error(capsys))
    )


def test_a_flag_override_is_named_as_the_flag(tmp_path, capsys) -> None:
    assert _run(tmp_path, GOOD, "--configs", "begin", "uniforn") == 2
    assert "--configs: unknown configuration 'uniforn' (did you mean 'uniform'?)" in (
        _error(capsys)
    )


def test_a_typo_leaves_no_file_and_the_corrected_spec_fits_the_folder(tmp_path, capsys) -> None:
    for typo in ("training: {max_steps: -4}\n", "seed: [1, 2]\n", "training: {seed: [1, 2]}\n"):
        assert _run(tmp_path, GOOD + typo) == 2
        assert "error: " in _error(capsys)
        assert not (tmp_path / "out").exists()
    from hf_posbias.study.spec import check_out_folder

    (tmp_path / "spec.yaml").write_text(GOOD + "training: {max_steps: 4}\n")
    check_out_folder(load_spec(tmp_path / "spec.yaml"), tmp_path / "out")
