"""``posbias demo``: the main job on the embedded default (see :mod:`hf_posbias.demo`)."""

from __future__ import annotations

import argparse
from pathlib import Path


def _cmd_demo(args: argparse.Namespace) -> int:
    from hf_posbias.demo import DemoSettings, run_demo

    run_demo(
        DemoSettings(
            out=Path(args.out),
            corpus=args.corpus,
            base_model=args.model,
            limit=args.limit,
            max_steps=args.max_steps,
            batch_size=args.batch_size,
            seed=args.seed,
            progress=not args.no_progress,
        ),
        echo=lambda line: print(line, flush=True),
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias demo``."""
    from hf_posbias.demo import DemoSettings  # light module: defaults live in one place

    defaults = DemoSettings(out=Path("demo-output"))
    p = subparsers.add_parser(
        "demo",
        help="the whole job on the embedded default: data, 4 checkpoints, position table",
        description="Build position-controlled data from the packaged Wikipedia lead sections, "
        "train all-MiniLM-L6-v2 once per configuration (begin/middle/end/uniform) and evaluate "
        "every model by evidence position on held-out documents. Offline, CPU, minutes.",
    )
    p.add_argument("--out", default="demo-output", help="output folder (rerun resumes)")
    p.add_argument("--corpus", default="demo", help="corpus source (default: packaged Wikipedia)")
    p.add_argument("--model", default=defaults.base_model, help="model to fine-tune")
    p.add_argument("--limit", type=int, help="read at most this many corpus records")
    p.add_argument(
        "--max-steps", type=int, default=defaults.max_steps, help="training steps per checkpoint"
    )
    p.add_argument(
        "--batch-size", type=int, default=defaults.batch_size, help="training batch size"
    )
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.set_defaults(func=_cmd_demo)
