"""What every ``posbias`` verb shares: flags from one settings dataclass, checked settings in.

A verb is a settings dataclass and a handler. :func:`add_verb` adds the verb's parser with one
flag per settings field (:func:`hf_posbias.settings.add_settings_arguments`); when the verb runs,
the settings are built from the parsed flags — every check runs then, so a mistake is one
``error:`` line before anything is read or written — and the handler gets them. A handler returns
the exit status (``None`` counts as 0, see :func:`hf_posbias.cli.main`). :func:`add_group` adds a
verb with verbs of its own (``posbias listwise …``) that prints its help when called bare.

Example:
    >>> import argparse
    >>> from dataclasses import dataclass
    >>> from hf_posbias.settings import setting
    >>> @dataclass(kw_only=True)
    ... class Hello:
    ...     name: str = setting("who to greet", default="world")
    >>> parser = argparse.ArgumentParser(prog="demo")
    >>> verbs = parser.add_subparsers()
    >>> _ = add_verb(verbs, "hello", Hello, lambda s: print(f"hello {s.name}"), help="greet")
    >>> args = parser.parse_args(["hello", "--name", "you"])
    >>> args.func(args)
    hello you
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

from hf_posbias.settings import add_settings_arguments, settings_from_args

Handler = Callable[..., "int | None"]
"""``handler(settings)``; with ``with_args``, ``handler(settings, args)``."""


def echo(line: str) -> None:
    """Print a line at once (a long run's lines reach a log file as they happen)."""
    print(line, flush=True)


def _run(settings_cls: type, handler: Handler, with_args: bool, args: argparse.Namespace) -> Any:
    settings = settings_from_args(settings_cls, args)
    return handler(settings, args) if with_args else handler(settings)


def add_verb(
    subparsers: argparse._SubParsersAction,
    name: str,
    settings_cls: type,
    handler: Handler,
    *,
    help: str,
    description: str | None = None,
    with_args: bool = False,
) -> argparse.ArgumentParser:
    """Add the verb ``name``: flags from ``settings_cls``, run by ``handler(settings)``.

    ``with_args``: the handler also gets the parsed arguments (``handler(settings, args)``), for
    what is no setting of the verb (``-v``, a spec file's overrides). Returns the verb's parser.
    """
    parser = subparsers.add_parser(name, help=help, description=description)
    add_settings_arguments(parser, settings_cls)
    parser.set_defaults(func=functools.partial(_run, settings_cls, handler, with_args))
    return parser


def _print_help(parser: argparse.ArgumentParser, _args: argparse.Namespace) -> int:
    parser.print_help()
    return 1


def add_group(
    subparsers: argparse._SubParsersAction,
    name: str,
    *,
    help: str,
    description: str | None = None,
    dest: str | None = None,
    metavar: str = "VERB",
    required: bool = False,
) -> argparse._SubParsersAction:
    """Add the verb ``name`` with verbs of its own, stored in ``args.<dest>`` (default
    ``<name>_command``). Called without one, it prints its help (exit status 1), or with
    ``required`` argparse says one is missing (exit status 2). Returns the subparsers to add its
    verbs to."""
    parser = subparsers.add_parser(name, help=help, description=description)
    if not required:
        parser.set_defaults(func=functools.partial(_print_help, parser))
    return parser.add_subparsers(dest=dest or f"{name}_command", metavar=metavar, required=required)
