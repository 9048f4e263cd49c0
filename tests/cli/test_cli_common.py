"""The parser of ``posbias`` and its verbs: a typo gets the verb's usage and the closest name."""

from __future__ import annotations

import pytest

from hf_posbias.cli import build_parser


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[str, str]:
    """(usage line, error line) of a refused command line."""
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    return err[0], err[-1]


def test_unknown_flag_suggests_the_verbs_closest_flag(capsys: pytest.CaptureFixture[str]) -> None:
    usage, line = _error(capsys, ["evaluate", "--tasks", "X"])
    assert usage.startswith("usage: posbias evaluate")
    assert line.startswith("posbias evaluate: error: unrecognized arguments: --tasks")
    assert "(did you mean '--task'?)" in line


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["evaluate", "--modle", "bm25"], "--model"),  # two letters swapped, not --mode
        (["train", "--modle", "x"], "--model"),
        (["listwise", "test", "--modle", "x"], "--mode"),  # the verb typed has no --model
        (["evaluate", "--seeds", "1"], "--seed"),
    ],
)
def test_a_misspelt_flag_suggests_the_flag_of_that_verb_most_likely_meant(
    capsys: pytest.CaptureFixture[str], argv: list[str], hint: str
) -> None:
    _, line = _error(capsys, argv)
    assert f"(did you mean {hint!r}?)" in line


def test_unknown_flag_after_positionals_shows_that_verbs_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    usage, line = _error(capsys, ["compare", "A", "B", "--test", "randomization"])
    assert usage.startswith("usage: posbias compare")
    assert line == "posbias compare: error: unrecognized arguments: --test randomization"


def test_nested_verb_refuses_its_own_unknown_flag(capsys: pytest.CaptureFixture[str]) -> None:
    usage, line = _error(capsys, ["study", "run", "s.yaml", "--dryrun"])
    assert usage.startswith("usage: posbias study run")
    assert line.endswith("(did you mean '--dry-run'?)")


def test_positional_given_as_a_flag_is_explained(capsys: pytest.CaptureFixture[str]) -> None:
    _, line = _error(capsys, ["analyze", "audit", "--model", "m", "--task", "t", "--out", "o"])
    assert "(model is given without a flag: posbias analyze audit model)" in line


@pytest.mark.parametrize(
    ("argv", "prog", "hint"),
    [
        (["evalute"], "posbias", "evaluate"),
        (["listwise", "tset"], "posbias listwise", "test"),
        (["compare", "A", "B", "--method", "bootstrapp"], "posbias compare", "bootstrap"),
    ],
)
def test_unknown_verb_or_choice_suggests_the_closest(
    capsys: pytest.CaptureFixture[str], argv: list[str], prog: str, hint: str
) -> None:
    usage, line = _error(capsys, argv)
    assert usage.startswith(f"usage: {prog} ")
    assert line.startswith(f"{prog}: error: ")
    assert line.endswith(f"(did you mean {hint!r}?)")


def test_known_flags_abbreviations_and_negative_numbers_pass() -> None:
    args = build_parser().parse_args(
        ["evaluate", "--model", "bm25", "--task", "t", "--out", "o", "--top", "20", "--seed", "-1"]
    )
    assert (args.top_k, args.seed) == (20, -1)
