"""Every flag of every ``posbias`` verb accepted on 51de525 (before the rooms-by-job layout) is
still accepted: a renamed spelling stays as a deprecated alias (issue 29)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hf_posbias.cli import build_parser

RECORDED = Path(__file__).parent / "data" / "flags_51de525.json"
"""verb path → option strings, recorded from 51de525's parser by walking its subparsers."""


def option_strings(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict:
    """Every verb path of ``parser`` with the option strings it accepts."""
    found: dict[str, list[str]] = {}
    options: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(option_strings(sub, (*path, name)))
        else:
            options.extend(action.option_strings)
    found[" ".join(path)] = sorted(options)
    return found


def test_every_verb_and_flag_of_51de525_is_still_accepted() -> None:
    recorded = json.loads(RECORDED.read_text())
    now = option_strings(build_parser())
    gone = {
        verb: [flag for flag in flags if flag not in now.get(verb, [])]
        for verb, flags in recorded.items()
    }
    gone = {verb: flags for verb, flags in gone.items() if flags or verb not in now}
    assert not gone, f"verbs or flags no longer accepted: {gone}"
    assert sum(map(len, recorded.values())) > 600  # the recording is the whole CLI
