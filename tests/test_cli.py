"""The posbias command itself: fast help, one-line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hf_posbias.cli import build_parser, main
from hf_posbias.errors import InputError


def test_help_lists_every_stage() -> None:
    text = build_parser().format_help()
    for verb in ("build", "train", "evaluate", "analyze", "demo"):
        assert verb in text


def test_help_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys; from hf_posbias.cli import build_parser; build_parser().format_help(); "
        "heavy = [m for m in ('torch', 'sentence_transformers', 'mteb', 'transformers') "
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
