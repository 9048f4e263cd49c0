"""``posbias demo``: the main job on the embedded default (see :mod:`hf_posbias.demo`).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(); register(parser.add_subparsers())
    >>> args = parser.parse_args(["demo", "--max-steps", "2", "--no-progress"])
    >>> (args.out, args.base_model, args.max_steps, args.progress)
    ('demo-output', 'all-MiniLM-L6-v2', 2, False)
"""

from __future__ import annotations

import argparse

from hf_posbias.demo import DemoSettings  # light module: defaults live in one place
from hf_posbias.settings import add_settings_arguments, settings_from_args


def _cmd_demo(args: argparse.Namespace) -> int:
    from hf_posbias.demo import run_demo

    run_demo(settings_from_args(DemoSettings, args), echo=lambda line: print(line, flush=True))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias demo``."""
    p = subparsers.add_parser(
        "demo",
        help="the whole job on the embedded default: data, 4 checkpoints, position table",
        description="Build position-controlled data from the packaged Wikipedia lead sections, "
        "train all-MiniLM-L6-v2 once per configuration (begin/middle/end/uniform) and evaluate "
        "every model by evidence position on held-out documents. Offline, CPU, minutes.",
    )
    add_settings_arguments(p, DemoSettings)
    p.set_defaults(func=_cmd_demo)
