"""The one declaration of the training settings: flags, parsing, hardware resolution."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import pytest

from hf_posbias.cli import build_parser
from hf_posbias.devices import DeviceInfo, described_device
from hf_posbias.errors import InputError
from hf_posbias.settings import setting, settings_parser, settings_record
from hf_posbias.trainer_base.compute import ComputeSettings
from hf_posbias.training.training_settings import TrainingSettings, parse_settings

REQUIRED = ["--model", "m", "--config", "uniform", "--data", "d", "--out", "o"]
CPU = DeviceInfo(kind="cpu", name="cpu", bf16=True)


def _flags(parser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


def test_every_field_is_a_flag_of_every_entry_point():
    fields = [f.name for f in dataclasses.fields(TrainingSettings)]
    module_flags = _flags(settings_parser(TrainingSettings))
    cli = build_parser()
    # the posbias verb gets its flags from the same generic builder
    args = cli.parse_args(["train", *REQUIRED, "--global-batch", "8"])
    train_parser = cli._subparsers._group_actions[0].choices["train"]
    # ... and the one flag of every writing verb that replaces what its output folder holds
    # (the command line claims the folder: hf_posbias.output_folders)
    replace = {"--overwrite", "--no-overwrite"}
    assert _flags(train_parser) - {"-h", "--help"} - replace == module_flags - {"-h", "--help"}
    assert replace <= _flags(train_parser)
    for name in fields:
        assert f"--{name.replace('_', '-')}" in module_flags, name
    assert "--no-card" in module_flags  # bool fields get their negation
    assert args.global_batch == 8 and args.precision == "auto"


def test_parse_into_the_dataclass_and_normalise():
    s = parse_settings(
        [
            *REQUIRED,
            "--precision",
            "bf16",
            "--gradient-checkpointing",
            "on",
            "--mini-batch-size",
            "16",
            "--mini-batch-tokens",
            "4096",
            "--no-card",
            "--pooling",
            "mean",
        ]
    )
    assert (s.precision, s.gradient_checkpointing, s.mini_batch_rows) == ("bf16", "on", 16)
    assert s.mini_batch_tokens == 4096 and s.card is False and s.pooling == "mean"
    assert s.checkpointing_request is True and not s.memory_is_auto
    auto = parse_settings(REQUIRED)
    assert auto.mini_batch_size == "auto" and auto.mini_batch_rows is None and auto.memory_is_auto
    # programmatic use takes ints for the N|auto field
    assert (
        TrainingSettings(
            model="m", config="c", data="d", out="o", mini_batch_size=4
        ).mini_batch_rows
        == 4
    )


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--precision", "fp8"], "invalid choice: 'fp8'"),
        (["--mini-batch-size", "many"], "--mini-batch-size must be a positive integer or auto"),
        (["--mini-batch-tokens", "0"], "--mini-batch-tokens must be >= 1"),
        (["--global-batch", "0"], "--global-batch must be >= 1"),
        (["--gradient-checkpointing", "sometimes"], "invalid choice: 'sometimes'"),
        (["--frobnicate", "1"], "unknown flag(s): --frobnicate 1"),
    ],
)
def test_bad_values_are_one_line_input_errors(argv, needle):
    with pytest.raises(InputError) as err:
        parse_settings([*REQUIRED, *argv])
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_resolve_against_hardware_and_processes():
    s = TrainingSettings(model="m", config="c", data="d", out="o", global_batch=256)
    r = s.resolve(described_device("h100"), 8)
    assert (r.precision, r.per_device_batch, r.gather_across_devices) == ("bf16", 32, True)
    assert r.training_arguments() == {"bf16": True, "fp16": False, "use_cpu": False}
    single = s.resolve(CPU, 1)
    assert single.precision == "fp32" and not single.gather_across_devices
    assert single.training_arguments()["use_cpu"] is True
    with pytest.raises(InputError) as err:
        s.resolve(CPU, 3)
    assert "global_batch 256 is not divisible by the 3 processes" in str(err.value)
    with pytest.raises(InputError, match="no bf16 support"):
        dataclasses.replace(s, precision="bf16").resolve(described_device("v100-32gb"), 1)


def test_another_trainer_inherits_the_compute_settings_without_copying():
    @dataclass(kw_only=True)
    class ListwiseLike(ComputeSettings):
        model: str = setting("causal LM")
        lam: float = setting("weight of the ranking loss", default=0.1)

    parsed = parse_settings(
        ["--model", "lm", "--precision", "bf16", "--global-batch", "8", "--lam", "0.5"],
        ListwiseLike,
    )
    assert (parsed.model, parsed.precision, parsed.global_batch, parsed.lam) == (
        "lm",
        "bf16",
        8,
        0.5,
    )
    assert parsed.resolve(CPU, 2).per_device_batch == 4
    assert "--gradient-checkpointing" in _flags(settings_parser(ListwiseLike))


def test_train_usage_shows_dashed_flags_and_one_batch_flag():
    cli = build_parser()
    train_parser = cli._subparsers._group_actions[0].choices["train"]
    usage = train_parser.format_usage()
    assert "--global-batch" in usage and "--batch-size" not in usage
    assert not re.search(r"--[a-z-]+_", train_parser.format_help())
    assert parse_settings([*REQUIRED, "--global-batch", "64"]).global_batch == 64
    with pytest.raises(InputError, match="--batch-size"):  # the former spelling, gone in 0.2.0
        parse_settings([*REQUIRED, "--batch-size", "64"])


def test_record_hides_the_hub_token():
    s = TrainingSettings(model="m", config="c", data="d", out="o", hub_token="hf_secret")
    record = settings_record(s)
    assert record["hub_token"] is None and record["global_batch"] == 256
    assert s.hub_token == "hf_secret"
