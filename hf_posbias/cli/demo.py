"""``posbias demo``: the main job on the embedded default (see :mod:`hf_posbias.study.demo`).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(); register(parser.add_subparsers())
    >>> args = parser.parse_args(["demo", "--max-steps", "2", "--no-progress"])
    >>> (args.out, args.base_model, args.max_steps, args.progress)
    ('demo-output', 'all-MiniLM-L6-v2', 2, False)
"""

from __future__ import annotations

import argparse

from hf_posbias.cli.common import add_verb, echo
from hf_posbias.output_folders import OutputFolder
from hf_posbias.study.demo import DemoSettings  # light module: defaults live in one place


def _cmd_demo(settings: DemoSettings) -> None:
    from hf_posbias.study.demo import run_demo

    run_demo(settings, echo=echo)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias demo``."""
    add_verb(
        subparsers,
        "demo",
        DemoSettings,
        _cmd_demo,
        help="the whole job on the embedded default, offline, in minutes",
        description="Build position-controlled data from the packaged Wikipedia lead sections, "
        "train all-MiniLM-L6-v2 once per configuration (begin/middle/end/uniform) and evaluate "
        "every model by evidence position on held-out documents. Offline, CPU, minutes.",
        output=OutputFolder(keeps="its finished data stages and study units"),
    )
