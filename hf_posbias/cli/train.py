"""``posbias train``: fine-tune one bi-encoder on one position configuration.

Same flags as ``python -m hf_posbias.training.train`` (and ``accelerate launch -m …``); both call
:func:`hf_posbias.training.train.train_model`. sentence-transformers is imported only when the
command runs, so ``posbias --help`` stays instant.

Example:
    >>> import argparse
    >>> from hf_posbias.cli.train import register
    >>> sub = argparse.ArgumentParser().add_subparsers()
    >>> register(sub).prog.endswith("train")
    True
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``train`` verb."""
    from hf_posbias.training.train import add_train_arguments

    parser = subparsers.add_parser(
        "train",
        help="train a bi-encoder on a position configuration (begin/middle/end/uniform/b:m:e/ips)",
        description="Fine-tune a base model with InfoNCE on single-length-bin batches "
        "(YHP26 protocol). Multi-GPU: accelerate launch -m hf_posbias.training.train …",
    )
    add_train_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Handler: train, print the one-line summary, return 0."""
    from hf_posbias.training.train import config_from_args, report, train_model

    result = train_model(config_from_args(args))
    print(report(result))
    return 0
