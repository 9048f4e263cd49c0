"""The size of the ``posbias`` command line a user sees, measured by walking its parser.

Counts what ``--help`` shows: top-level verbs, leaf commands (verbs without verbs of their own),
flag slots (the flags of each visible leaf, ``--help`` left out) and distinct flag names; and what
runs but ``--help`` does not show: ``runnable`` counts every command name that runs
(:func:`hf_posbias.cli.common.walk_commands`), ``hidden`` those no group's help lists,
``shared_parsers`` the names that run a command another name runs too (a former name kept as an
alias), ``unshown_flags`` the flag spellings a command takes that its own ``--help`` never
writes (a former spelling kept as an alias).

    python scripts/cli_surface.py          # one JSON line
    python scripts/cli_surface.py --leaves # and every visible leaf with its flags
    python scripts/cli_surface.py --hidden # and every command and flag spelling --help hides
    python scripts/cli_surface.py --helps  # and every flag with more than one help text
                                           # ((default: …) folded: another default, same meaning)
    python scripts/cli_surface.py --problems  # and every help that contradicts itself
                                              # (help_problems)

The counts also hold what ``--help`` says wrong (:func:`help_problems`): ``two_defaults`` (a flag
whose help names its default twice, or a default other than the setting's), ``foreign_metavars``
(a metavar that names another flag) and ``undescribed`` (a command whose help has no
description).
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from hf_posbias.cli import build_parser
from hf_posbias.cli.common import Command, is_listed, verbs_of, walk_commands


def visible_verbs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The verbs of ``parser`` that its help lists (:func:`hf_posbias.cli.common.is_listed`)."""
    verbs = verbs_of(parser)
    choices = verbs.choices.items() if verbs is not None else ()
    return {name: sub for name, sub in choices if is_listed(parser, name)}


def visible_flags(parser: argparse.ArgumentParser) -> list[str]:
    """The first (shown) spelling of every flag the verb's help lists, ``--help`` left out."""
    return [
        action.option_strings[0]
        for action in parser._actions
        if action.option_strings
        and action.help is not argparse.SUPPRESS
        and not isinstance(action, argparse._HelpAction)
    ]


def flag_helps(
    parser: argparse.ArgumentParser, *, fold_defaults: bool = False
) -> dict[str, set[str]]:
    """Every flag of the visible leaves (of each source, for a verb that takes one) → the
    distinct help texts it has there (whitespace folded, as ``--help`` shows it).
    ``fold_defaults``: without the ``(default: …)`` the settings append from the flag's default
    value, so two verbs that mean the same with another default count once (a default written
    into the help text itself is kept: it may say what the flag means)."""
    helps: dict[str, set[str]] = {}
    for command in walk_commands(parser):
        if not command.listed:
            continue
        for sub in command.flag_parsers:
            formatter = sub._get_formatter()
            for action in sub._actions:
                if not action.option_strings or action.help is argparse.SUPPRESS:
                    continue
                if isinstance(action, argparse._HelpAction):
                    continue
                text = " ".join(formatter._expand_help(action).split()) if action.help else ""
                if fold_defaults:
                    # Only the note the settings appended (hf_posbias.settings), not a default a
                    # help text spells out itself ("(default: <name>-sample)"): that one says
                    # what the flag means.
                    note = " ".join(getattr(action, "posbias_default_note", "").split())
                    text = text.removesuffix(f" {note}") if note else text
                helps.setdefault(action.option_strings[0], set()).add(text)
    return helps


def leaves(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Every visible leaf command (its path) → its visible flags (for a verb that takes a
    source, every source's, each once)."""
    return {
        " ".join(command.path): list(
            dict.fromkeys(flag for sub in command.flag_parsers for flag in visible_flags(sub))
        )
        for command in walk_commands(parser)
        if command.listed
    }


def unshown_flags(command: Command) -> list[str]:
    """The flag spellings ``command`` (each of its sources) takes that its ``--help`` does not
    write."""
    text = command.parser.format_help()
    return [
        option
        for sub in command.flag_parsers
        for action in sub._actions
        for option in action.option_strings
        if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text)
    ]


def hidden(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """What runs but ``--help`` hides: ``commands`` (names no group's help lists), ``aliases``
    (names that run a command another name runs too) and ``flags`` (``command flag``)."""
    commands = walk_commands(parser)
    first: dict[int, str] = {}
    aliases = []
    for command in commands:
        if first.setdefault(id(command.parser), command.name) != command.name:
            aliases.append(f"{command.name} (runs {first[id(command.parser)]})")
    return {
        "commands": [c.name for c in commands if not c.listed],
        "aliases": aliases,
        "flags": [f"{c.name} {flag}" for c in commands for flag in unshown_flags(c)],
    }


DEFAULT_PHRASE = re.compile(r"\(default\b|\bdefault[:=]|[;,] default\b|\bunset\b")
"""How a help text names a default: ``(default: x)``, ``default: x``, ``; default x``,
``unset = x``, ``(unset: x)`` (a choice named ``default`` is none of these)."""


def flag_actions(parser: argparse.ArgumentParser) -> list[tuple[Command, argparse.Action]]:
    """Every flag of every command (each source's, for a verb that takes one), ``--help``
    left out."""
    return [
        (command, action)
        for command in walk_commands(parser)
        for sub in command.flag_parsers
        for action in sub._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    ]


def _metavar(action: argparse.Action) -> str | None:
    """The word ``--help`` shows after a flag (``None``: none, or a list of choices)."""
    if action.nargs == 0 or (action.choices is not None and action.metavar is None):
        return None
    metavar = action.metavar if action.metavar is not None else action.dest.upper()
    return metavar if isinstance(metavar, str) else None


def help_problems(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """What ``--help`` says wrong, walking every command: ``two_defaults`` (a help that names a
    default twice: its text and the settings' appended note, or two phrases of its own; or a
    default the text spells that the setting does not have), ``foreign_metavars`` (a metavar that
    names a flag other than its own, as ``--per-position TINY_SIZE`` did) and ``undescribed``
    (a command, or a source of one, whose help has no description)."""
    actions = flag_actions(parser)
    flag_words = {option[2:] for _, action in actions for option in action.option_strings}
    found: dict[str, list[str]] = {"two_defaults": [], "foreign_metavars": [], "undescribed": []}
    for command, action in actions:
        flag = action.option_strings[0]
        where = f"{command.name} {flag}"
        text = " ".join((action.help or "").replace("%%", "%").split())
        note = " ".join(getattr(action, "posbias_default_note", "").split())
        own = text.removesuffix(note).strip() if note else text
        phrases = len(DEFAULT_PHRASE.findall(own)) + bool(note)
        shown = re.search(r"\(default:? ([^;)]*)", own)
        contradicts = (
            shown is not None
            and not note
            and action.default not in (None, False)
            and str(action.default) not in shown[1]
        )
        if phrases > 1 or contradicts:
            found["two_defaults"].append(f"{where}: {text}")
        metavar = _metavar(action)
        word = metavar.lower().replace("_", "-") if metavar else None
        if word is not None and word != flag[2:] and (word in flag_words or word == action.dest):
            found["foreign_metavars"].append(f"{where} {metavar}")
    for command in walk_commands(parser):
        subs = [("", command.parser), *((f" {s}", p) for s, p in command.sources.items())]
        for source, sub in subs:
            if not (sub.description or "").strip():
                found["undescribed"].append(f"{command.name}{source}")
    return found


def surface(parser: argparse.ArgumentParser | None = None) -> dict[str, int]:
    """The counts: top-level verbs, leaf commands, flag slots, distinct flag names, the flags
    whose help text differs between the visible leaves, and what runs though ``--help`` hides
    it (:func:`hidden`)."""
    parser = parser or build_parser()
    found = leaves(parser)
    unlisted = hidden(parser)
    wrong = help_problems(parser)
    return {
        "runnable": len(walk_commands(parser)),
        "hidden": len(unlisted["commands"]),
        "shared_parsers": len(unlisted["aliases"]),
        "unshown_flags": len(unlisted["flags"]),
        "verbs": len(visible_verbs(parser)),
        "leaves": len(found),
        "flag_slots": sum(map(len, found.values())),
        "flag_names": len({flag for flags in found.values() for flag in flags}),
        "flags_with_several_helps": sum(len(t) > 1 for t in flag_helps(parser).values()),
        "flags_with_several_meanings": sum(
            len(t) > 1 for t in flag_helps(parser, fold_defaults=True).values()
        ),
        **{name: len(items) for name, items in wrong.items()},
    }


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    parser = build_parser()
    print(json.dumps(surface(parser)))
    if "--leaves" in args:
        for path, flags in leaves(parser).items():
            print(f"{path}: {' '.join(flags)}")
    if "--hidden" in args:
        for kind, names in hidden(parser).items():
            print(f"{kind}: {len(names)}")
            print("".join(f"    {name}\n" for name in names), end="")
    if "--helps" in args:
        meanings = flag_helps(parser, fold_defaults=True)
        for flag, texts in sorted(meanings.items(), key=lambda kv: -len(kv[1])):
            if len(texts) > 1:
                print(f"{flag} ({len(texts)}):")
                print("".join(f"    {text}\n" for text in sorted(texts)), end="")
    if "--problems" in args:
        for kind, items in help_problems(parser).items():
            print(f"{kind}: {len(items)}")
            print("".join(f"    {item}\n" for item in items), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
