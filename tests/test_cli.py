"""The posbias command itself: fast help, one-line errors."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hf_posbias.cli import build_parser, main
from hf_posbias.errors import InputError


def test_help_lists_every_stage() -> None:
    text = build_parser().format_help()
    for verb in ("data", "benchmark", "train", "evaluate", "analyze", "study", "demo"):
        assert verb in text


def test_help_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys; from hf_posbias.cli import build_parser; build_parser().format_help(); "
        "heavy = [m for m in ('torch', 'sentence_transformers', 'mteb', 'transformers', "
        "'numpy', 'pandas', 'pyarrow') "
        "if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_user_errors_become_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    args = parser.parse_args([])

    def boom(_args: object) -> int:
        raise InputError("corpus.jsonl:3: malformed JSON")

    args.func = boom
    parser.parse_args = lambda argv=None: args  # type: ignore[method-assign]
    import hf_posbias.cli as cli

    original = cli.build_parser
    cli.build_parser = lambda: parser  # type: ignore[assignment]
    try:
        assert main([]) == 2
    finally:
        cli.build_parser = original
    err = capsys.readouterr().err
    assert err == "error: corpus.jsonl:3: malformed JSON\n"


def _verb_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every leaf verb's parser by its command path (``"listwise test"``; a verb that takes a
    source, once per source: ``"benchmark build fever"``)."""
    from hf_posbias.cli.common import walk_commands

    found: dict[str, argparse.ArgumentParser] = {}
    for command in walk_commands(build_parser()):
        found[" ".join(command.path)] = command.parser
        for name, parser in command.sources.items():
            found[" ".join((*command.path, name))] = parser
    return found


LONG_VERBS = (
    "data build",
    "data corpus",
    "data generate",
    "data verify",
    "evaluate",
    "analyze audit",
    "analyze evidence-moving",
    "analyze segment-profile",
    "analyze pooling",
    "demo",
    "listwise test",
    "listwise reranker-remedies",
    "listwise shuffle-eval",
    "listwise propensity",
    "listwise build-train",
    "listwise train",
    "listwise demo",
)


def test_every_long_verb_has_progress_on_by_default_and_both_spellings() -> None:
    parsers = _verb_parsers()
    for verb in LONG_VERBS:
        flags = {o for a in parsers[verb]._actions for o in a.option_strings}
        assert {"--progress", "--no-progress"} <= flags, verb
        progress = next(a for a in parsers[verb]._actions if "--progress" in a.option_strings)
        assert progress.default is True, verb
    base = ["evaluate", "--model", "bm25", "--task", "t", "--out", "o"]
    assert build_parser().parse_args(base).progress is True
    assert build_parser().parse_args([*base, "--progress"]).progress is True  # former opt-in
    assert build_parser().parse_args([*base, "--no-progress"]).progress is False


def test_no_verb_declares_a_flag_by_hand() -> None:
    """Flags come from settings dataclasses; only the top-level --version/-v and the source
    argument of a verb that takes one (``cli.common.add_source_verb``) are hand-written."""
    import hf_posbias.cli as cli_package

    folder = Path(cli_package.__file__).parent
    by_hand = {"__init__.py": 2, "common.py": 1}
    for path in folder.glob("*.py"):
        calls = path.read_text().count(".add_argument(")
        assert calls == by_hand.get(path.name, 0), path.name
    usage = " ".join(p.format_help() for p in _verb_parsers().values())
    assert not re.search(r"--[a-z0-9-]+_[a-z]", usage)  # dashed spellings only


def test_the_listwise_window_lives_in_one_settings_object() -> None:
    from hf_posbias.listwise.experiments.experiment_settings import ListwiseTestSettings
    from hf_posbias.rerankers.options import RerankerOptions
    from hf_posbias.settings import settings_from_args

    owners = [
        c for c in ListwiseTestSettings.__mro__ if "window" in vars(c).get("__annotations__", {})
    ]
    assert owners == [RerankerOptions]
    args = build_parser().parse_args(
        [
            "listwise",
            "test",
            "--reranker",
            "bm25",
            "--task",
            "t",
            "--out",
            "o",
            "--window",
            "6",
            "--step",
            "3",
        ]
    )
    s = settings_from_args(ListwiseTestSettings, args)
    assert (s.window, s.step) == (6, 3)
    with pytest.raises(InputError, match="--step must lie in 1..--window"):
        settings_from_args(ListwiseTestSettings, args, step=7)


def test_a_log_file_gets_no_library_bars_or_debug_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import logging
    import os

    from hf_posbias.cli import _quiet_libraries

    for name in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal: a log file
    for name in ("bm25s", "huggingface_hub", "urllib3"):
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    _quiet_libraries()
    assert os.environ["TQDM_DISABLE"] == "1" and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert not logging.getLogger("bm25s").isEnabledFor(logging.DEBUG)
    assert not logging.getLogger("huggingface_hub").isEnabledFor(logging.INFO)


def test_hub_warnings_are_printed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    from huggingface_hub.utils import logging as hub_logging

    hub_logging.get_logger("huggingface_hub")  # the library logger with its own handler
    monkeypatch.setattr(logging.getLogger("huggingface_hub"), "propagate", True)
    monkeypatch.setattr(sys, "argv", ["posbias"])
    main([])  # no verb: prints help, after configuring logging
    hub = logging.getLogger("huggingface_hub")
    assert hub.handlers and not hub.propagate, "its own handler prints; the root must not again"
