"""hf_posbias.settings: one dataclass field = one flag, its help, choices and check."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Literal

import pytest

from hf_posbias.errors import InputError
from hf_posbias.setting_values import at_least
from hf_posbias.settings import (
    Settings,
    add_settings_arguments,
    check_choices,
    parse_settings_args,
    setting,
    settings_from_args,
    settings_to_argv,
)


@dataclass(kw_only=True)
class Example(Settings):
    model: str = setting("the model", positional=True)
    task: list[str] = setting("task folders")
    out: str = setting("output folder")
    global_batch: int = setting("rows per step", default=256, range=at_least(1))
    scoring: Literal["default", "posir"] = setting("protocol", default="default")
    level: str = setting("a level", default="a", choices=lambda: ("a", "b"))
    progress: bool = setting("progress lines", default=True)
    names: tuple[str, ...] = setting("names", default=("x",))
    internal: int = setting("not a flag", default=0, cli=False)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="example", exit_on_error=False)
    add_settings_arguments(parser, Example)
    return parser


def test_fields_become_dashed_flags_with_types_choices_and_defaults() -> None:
    args = _parser().parse_args(["m", "--task", "a", "b", "--out", "o", "--no-progress"])
    s = settings_from_args(Example, args)
    assert s == Example(model="m", task=["a", "b"], out="o", progress=False)
    usage = _parser().format_help()
    assert "--global-batch" in usage and "--global_batch" not in usage
    assert "(default: 256)" in usage
    assert "--internal" not in usage


def test_literal_and_callable_choices_are_enforced() -> None:
    with pytest.raises(InputError, match="invalid choice"):
        parse_settings_args(Example, ["m", "--task", "t", "--out", "o", "--scoring", "x"])
    with pytest.raises(InputError, match="invalid choice"):
        parse_settings_args(Example, ["m", "--task", "t", "--out", "o", "--level", "c"])


def test_check_choices_reads_the_choices_a_field_declares() -> None:
    """One spelling of the choices: the parser's and the library's check read the same field."""
    check_choices(Example(model="m", task=[], out="o", level="b"), "level")  # a callable's
    with pytest.raises(InputError, match="^level must be one of a, b, got 'c'"):
        check_choices(Example(model="m", task=[], out="o", level="c"), "level")
    with pytest.raises(TypeError, match="Example.model declares no choices"):
        check_choices(Example(model="m", task=[], out="o"), "model")


def test_the_library_refuses_a_choice_the_command_line_refuses() -> None:
    from hf_posbias.evaluation.evaluation_settings import CompareSettings, RemediesSettings
    from hf_posbias.listwise.experiments.experiment_settings import ShuffleTableSettings
    from hf_posbias.listwise.training.finetune_settings import TransitionsSettings
    from hf_posbias.pipeline.stage_settings import GeneratorSettings

    with pytest.raises(InputError, match="^method must be one of bootstrap, "):
        CompareSettings(run_a="a", run_b="b", method="wilcoxon")
    with pytest.raises(InputError, match="^method must be one of bootstrap, "):
        ShuffleTableSettings(runs=["a"], out="o", method="wilcoxon")
    with pytest.raises(InputError, match="^augmentation must be one of pos-aug, rand-aug, none"):
        TransitionsSettings(data="d", out="o", augmentation="mixup")
    with pytest.raises(InputError, match="^generator must be one of ict, "):
        GeneratorSettings(generator="gpt")
    with pytest.raises(InputError, match="^remedies must be one of maxp, "):
        RemediesSettings(model="m", task=("t",), out="o", remedies=("maxp", "meanp"))


def test_post_init_checks_run_from_the_command_line() -> None:
    with pytest.raises(InputError, match="--global-batch must be >= 1, got 0"):
        parse_settings_args(Example, ["m", "--task", "t", "--out", "o", "--global-batch", "0"])


def test_a_field_has_one_spelling_and_no_other_parses() -> None:
    """0.2.0: no former flag spellings; a field is its one flag (``flag=`` or its name)."""
    with pytest.raises(InputError, match="unknown flag"):
        parse_settings_args(Example, ["m", "--task", "t", "--out", "o", "--batch-size", "8"])
    with pytest.raises(TypeError, match="aliases"):
        setting("rows per step", default=256, aliases=("--batch-size",))  # type: ignore[call-arg]


def test_a_given_list_replaces_the_default_and_tuples_stay_tuples() -> None:
    s = parse_settings_args(Example, ["m", "--task", "t", "--out", "o", "--names", "y", "z"])
    assert s.names == ("y", "z")


def test_argv_round_trip() -> None:
    s = Example(model="m", task=["t"], out="o", global_batch=8, progress=False)
    assert parse_settings_args(Example, settings_to_argv(s)) == s


def test_missing_required_flag_is_one_line() -> None:
    with pytest.raises(InputError, match="--out"):
        parse_settings_args(Example, ["m", "--task", "t"])


def test_an_error_names_the_flag_help_shows_not_a_former_spelling():
    # A field renamed on the command line (min_words → --min-passage-words, tiny_size →
    # --per-position) is refused under the spelling --help shows, not the hidden former one.
    from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings

    flags = ["--corpus", "demo", "--out", "t"]
    with pytest.raises(InputError, match=r"^--min-passage-words \(2000\) is above --max-words"):
        parse_settings_args(BenchmarkBuildSettings, [*flags, "--min-passage-words", "2000"])
    # A Python caller reads the keyword it passed.
    with pytest.raises(InputError, match=r"^min_words \(2000\) is above max_words"):
        BenchmarkBuildSettings(corpus="demo", out="t", min_words=2000)
    with pytest.raises(InputError, match=r"^--per-position must be >= 1, got 0$"):
        parse_settings_args(
            BenchmarkBuildSettings, ["--corpus", "demo", "--out", "t", "--per-position", "0"]
        )
