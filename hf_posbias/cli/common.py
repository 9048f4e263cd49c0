"""What every ``posbias`` verb shares: flags from one settings dataclass, checked settings in.

A verb is a settings dataclass and a handler. :func:`add_verb` adds the verb's parser with one
flag per settings field (:func:`hf_posbias.settings.add_settings_arguments`); when the verb runs,
the settings are built from the parsed flags — every check runs then, so a mistake is one
``error:`` line before anything is read or written — and the handler gets them. A handler returns
the exit status (``None`` counts as 0, see :func:`hf_posbias.cli.main`). :func:`add_group` adds a
verb with verbs of its own (``posbias listwise …``) that prints its help when called bare.
:class:`VerbParser`, the parser of ``posbias`` and of each of its verbs, answers a mistyped flag,
verb or choice with the verb's own usage and the closest known name.

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
import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from hf_posbias.setting_values import value_form
from hf_posbias.settings import add_settings_arguments, settings_from_args, shared_setting
from hf_posbias.suggestions import suggest

if TYPE_CHECKING:
    from hf_posbias.output_folders import OutputFolder

Handler = Callable[..., "int | None"]
"""``handler(settings)``; with ``with_args``, ``handler(settings, args)``."""


_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_BAD_NUMBER = re.compile(
    r"^argument (?P<flag>\S+): invalid (?P<type>int|float) value: (?P<value>.*)$"
)
_INVALID_CHOICE = re.compile(r"invalid choice: '?(?P<name>[^' ]*)'? \(choose from (?P<known>.*)\)$")


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps a description to the terminal, but keeps a text of several lines as written (the
    verb list of a group, under its headings: :func:`list_verbs`)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class VerbParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose mistakes point at the fix.

    A flag the verb does not take is refused by the verb itself (its usage, not the top-level
    one), with the closest flag of that verb; an unknown verb or choice gets the closest name.
    Sub-commands added under it use the same class.

    Example:
        >>> import contextlib, io
        >>> from dataclasses import dataclass
        >>> from hf_posbias.settings import setting
        >>> @dataclass
        ... class Evaluate:
        ...     task: str = setting("the task")
        >>> parser = VerbParser(prog="posbias")
        >>> verbs = parser.add_subparsers(dest="command")
        >>> _ = add_verb(verbs, "evaluate", Evaluate, print, help="evaluate")
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        ...     parser.parse_args(["evaluate", "--task", "T", "--tsak", "3"])
        >>> print(err.getvalue().splitlines()[-1])
        posbias evaluate: error: unrecognized arguments: --tsak 3 (did you mean '--task'?)
        >>> with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        ...     parser.parse_args(["evalute"])
        >>> print(err.getvalue().splitlines()[-1])  # doctest: +ELLIPSIS
        posbias: error: argument command: invalid choice: 'evalute' ... (did you mean 'evaluate'?)
    """

    _posbias_argv: list[str] | None = None
    posbias_sources: dict[str, VerbParser] | None = None
    """A verb that takes a source first (:func:`add_source_verb`): source → its parser."""
    posbias_flags_elsewhere: dict[str, list[str]] | None = None
    """A source's parser: each flag it does not take → the sources that take it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, but a verb (a parser without verbs of its own) refuses what it does
        not know itself, so the error shows that verb's usage; a verb that takes a source
        hands what follows the source to that source's parser."""
        import sys

        self._posbias_argv = list(sys.argv[1:] if args is None else args)
        sources = self.posbias_sources
        first = self._posbias_argv[0] if self._posbias_argv else "-h"
        if sources and first in sources:
            namespace, extras = sources[first].parse_known_args(self._posbias_argv[1:], namespace)
            namespace.source = first
            return namespace, extras
        if sources and first.startswith("-") and first not in ("-h", "--help"):
            # The flags a source takes are known once the source is: it comes first.
            metavar = next(a.metavar for a in self._actions if a.dest == "source")
            given = [token for token in self._posbias_argv if token in sources] or [metavar]
            self.error(
                f"{metavar} comes first: {self.prog} {given[0]} [its flags] ({metavar}: "
                f"{', '.join(sources)})"
            )
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def unknown_flags(self) -> list[str]:
        """The flags of the last parsed arguments that this parser does not take."""
        known = list(self._option_string_actions)
        found = []
        for token in self._posbias_argv or ():
            if token == "--":
                break
            if not token.startswith("-") or token == "-" or _NUMBER.match(token):
                continue
            flag = token.split("=", 1)[0]
            if flag in known or (
                self.allow_abbrev
                and flag.startswith("--")
                and any(k.startswith(flag) for k in known)
            ):
                continue
            found.append(flag)
        return found

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        """Print this verb's usage and the message with the closest known name; exit 2. A word
        given to a flag that takes a number is one line (the usage says nothing about it)."""
        elsewhere = self.posbias_flags_elsewhere or {}
        foreign = [flag for flag in self.unknown_flags() if flag in elsewhere]
        if foreign:
            flag = foreign[0]
            self.exit(
                2,
                f"error: {self.prog} takes no {flag} (a flag of {', '.join(elsewhere[flag])})\n",
            )
        bad_number = _BAD_NUMBER.match(message)
        if bad_number:
            form = value_form({"int": int, "float": float}[bad_number["type"]])
            flag, value = bad_number["flag"].split("/")[0], bad_number["value"]
            self.exit(2, f"error: {flag} takes {form}, got {value}\n")
        unknown = self.unknown_flags()
        known_flags = [k for k in self._option_string_actions if k.startswith("--")]
        known_flags.remove("--help")
        positionals = {a.dest: a.metavar or a.dest for a in self._actions if not a.option_strings}
        if unknown and (
            message.startswith("unrecognized arguments")
            or message.startswith("the following arguments are required")
        ):
            hints = "".join(
                dict.fromkeys(
                    f" ({flag[2:]} is given without a flag: "
                    f"{self.prog} {positionals[flag[2:].replace('-', '_')]})"
                    if flag[2:].replace("-", "_") in positionals
                    else suggest(flag, known_flags)
                    for flag in unknown
                )
            )
            if message.startswith("the following"):
                message = f"unrecognized arguments: {' '.join(unknown)}{hints}; {message}"
            else:
                message += hints
        else:
            match = _INVALID_CHOICE.search(message)
            if match:
                known = [k.strip().strip("'") for k in match["known"].split(",")]
                message += suggest(match["name"], known)
        super().error(message)


def verbs_of(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    """The verbs of a group (its sub-commands), or ``None`` for a command that runs."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def sources_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parsers of the sources a command takes first (:func:`add_source_verb`: the
    benchmarks of ``posbias benchmark build``), each holding that source's flags; else none."""
    return dict(getattr(parser, "posbias_sources", None) or {})


def next_words(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """What may follow ``parser``'s words on the command line: a group's verbs, a source of a
    verb that takes one, or nothing (a command that runs), each with its parser."""
    verbs = verbs_of(parser)
    return dict(verbs.choices) if verbs is not None else sources_of(parser)


def command_of(
    words: Sequence[str], root: argparse.ArgumentParser
) -> tuple[list[str], argparse.ArgumentParser]:
    """The words at the head of ``words`` that name a command (its verbs, then the source of a
    verb that takes one: :func:`add_source_verb`) and the parser that holds its flags.

    Example:
        >>> from hf_posbias.cli import build_parser
        >>> words = ["benchmark", "build", "squad-posq", "--tiny"]
        >>> named, parser = command_of(words, build_parser())
        >>> named, "--tiny" in parser._option_string_actions
        (['benchmark', 'build', 'squad-posq'], True)
    """
    parser, named = root, []
    for word in words:
        choices = next_words(parser)
        if word not in choices:
            break
        parser = choices[word]
        named.append(word)
    return named, parser


@dataclass(frozen=True)
class Command:
    """A command that runs (a parser without verbs of its own), as :func:`walk_commands`
    finds it.

    ``listed``: its name is a line of its group's ``--help``, and so is every group's above it
    (a command that runs but is not listed is hidden).
    """

    path: tuple[str, ...]
    parser: argparse.ArgumentParser
    listed: bool

    @property
    def name(self) -> str:
        """The command as typed: ``posbias benchmark build``."""
        return " ".join(("posbias", *self.path))

    @property
    def sources(self) -> dict[str, argparse.ArgumentParser]:
        """A command that takes a source first (:func:`add_source_verb`): each source's parser,
        which holds the flags of that source; else nothing."""
        return sources_of(self.parser)

    @property
    def flag_parsers(self) -> list[argparse.ArgumentParser]:
        """The parsers that hold this command's flags: each source's, or its own."""
        return list(self.sources.values()) or [self.parser]


def is_listed(group: argparse.ArgumentParser, name: str) -> bool:
    """Whether ``group``'s ``--help`` has a line naming the verb ``name``: the name, indented as a
    verb list indents it (a help text's wrapped line is indented deeper), then its help or the
    end of the line.

    Example:
        >>> from hf_posbias.cli import build_parser
        >>> is_listed(build_parser(), "evaluate"), is_listed(build_parser(), "evalute")
        (True, False)
    """
    line = rf"(?m)^ {{2,8}}{re.escape(name)}(?: {{2,}}\S|$)"
    return re.search(line, group.format_help()) is not None


def walk_commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = (), listed: bool = True
) -> list[Command]:
    """Every command under ``parser`` that runs, each under every name it runs by, in the
    order of the groups' verbs.

    Example:
        >>> from hf_posbias.cli import build_parser
        >>> found = walk_commands(build_parser())
        >>> [c.name for c in found if c.path[0] == "study"]
        ['posbias study run', 'posbias study report', 'posbias study status']
    """
    verbs = verbs_of(parser)
    if verbs is None:
        return [Command(path, parser, listed)]
    found: list[Command] = []
    for name, sub in verbs.choices.items():
        found += walk_commands(sub, (*path, name), listed and is_listed(parser, name))
    return found


def echo(line: str) -> None:
    """Print a line at once (a long run's lines reach a log file as they happen)."""
    print(line, flush=True)


@dataclass(kw_only=True)
class _Replace:
    """The flag that replaces what an output folder holds, for a verb whose settings do not
    declare it themselves (the same field, help and meaning everywhere)."""

    overwrite: bool = shared_setting("overwrite", default=False)


def _run(verb: Verb, command: str, args: argparse.Namespace) -> Any:
    """Build the checked settings, claim the verb's output (:class:`OutputFolder`), run it."""
    settings = settings_from_args(verb.settings, args)

    def work() -> Any:
        return verb.handler(settings, args) if verb.with_args else verb.handler(settings)

    output = verb.output_folder()
    target = getattr(settings, output.field, None) if output is not None else None
    if output is None or target is None or getattr(settings, "dry_run", False):
        return work()
    from hf_posbias.output_folders import claim_output_folder

    if not output.claim:  # a shared work folder: its stages are pinned; only say what it keeps
        try:
            return work()
        except BaseException as err:
            from hf_posbias.output_folders import kept_line, set_stop_note

            if output.keeps is not None:
                text = kept_line(target, output.keeps)
            else:
                text = f"{target} may hold part of its output; the same command writes it again"
            set_stop_note(err, text, kept=True)
            raise
    overwrite = bool(getattr(settings, "overwrite", getattr(args, "overwrite", False)))
    with claim_output_folder(
        target,
        output.params(settings, args),
        command=command,
        overwrite=overwrite,
        keeps=output.keeps,
        part=getattr(settings, output.part) if output.part else None,
        file=output.file,
    ) as claim:
        if claim.state == "finished":
            echo(claim.already_there())
            return 0
        return work()


def add_verb(
    subparsers: argparse._SubParsersAction,
    name: str,
    settings_cls: type,
    handler: Handler,
    *,
    help: str,
    description: str | None = None,
    with_args: bool = False,
    output: OutputFolder | None | str = "auto",
) -> argparse.ArgumentParser:
    """Add the verb ``name``: flags from ``settings_cls``, run by ``handler(settings)``.

    ``with_args``: the handler also gets the parsed arguments (``handler(settings, args)``), for
    what is no setting of the verb (``-v``, a spec file's overrides). ``output``: how the verb
    writes (:attr:`Verb.output`). Returns the verb's parser. A group that declares several verbs
    lists them as :class:`Verb` records.
    """
    return Verb(name, settings_cls, handler, help, description, with_args, output).add_to(
        subparsers
    )


@dataclass(frozen=True)
class Verb:
    """One verb of a group, as the group declares it: its name, settings dataclass, handler
    and texts. :meth:`add_to` adds it (:func:`add_verb`).

    Example:
        >>> import argparse
        >>> from dataclasses import dataclass
        >>> @dataclass(kw_only=True)
        ... class Nothing:
        ...     pass
        >>> verbs = argparse.ArgumentParser(prog="demo").add_subparsers()
        >>> Verb("hello", Nothing, lambda s: None, "greet").add_to(verbs).prog
        'demo hello'
    """

    name: str
    settings: type
    handler: Handler
    help: str
    description: str | None = None
    with_args: bool = False
    output: OutputFolder | None | str = "auto"
    """How the verb writes (:class:`hf_posbias.output_folders.OutputFolder`): its output folder
    is claimed before the handler runs (refused when it holds another run, resumed or "already
    there" when it holds this one, replaced with ``--overwrite``). ``"auto"``: a verb whose
    settings have ``out`` writes there, keeping nothing to resume; ``None``: writes nothing."""

    def output_folder(self) -> OutputFolder | None:
        """The verb's :attr:`output`, ``"auto"`` resolved."""
        if self.output != "auto":
            return self.output  # type: ignore[return-value]
        from hf_posbias.output_folders import OutputFolder

        names = {f.name for f in dataclasses.fields(self.settings)}
        return OutputFolder() if "out" in names else None

    def add_to(self, verbs: argparse._SubParsersAction) -> argparse.ArgumentParser:
        """Add this verb to ``verbs``: one flag per settings field (and ``--overwrite`` where
        the verb claims an output folder); returns its parser."""
        parser = verbs.add_parser(self.name, help=self.help, description=self.description)
        return self.configure(parser)

    def configure(self, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        """Give ``parser`` this verb's flags and handler (the command it runs as is
        ``parser.prog``); returns it."""
        add_settings_arguments(parser, self.settings)
        output = self.output_folder()
        names = {f.name for f in dataclasses.fields(self.settings)}
        if output is not None and output.claim and "overwrite" not in names:
            add_settings_arguments(parser, _Replace)
        parser.set_defaults(func=functools.partial(_run, self, parser.prog))
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


def list_verbs(
    group: argparse.ArgumentParser,
    verbs: argparse._SubParsersAction,
    headings: Sequence[tuple[str, Sequence[str]]] = (),
    *,
    rest: str = "",
) -> None:
    """List the verbs of ``group`` in its ``--help``, one line each, under ``headings`` (title,
    verb names): expert verbs under a heading of their own, every verb in sight. The verbs no
    heading names come first without a title, or last under the title ``rest``.

    Example:
        >>> parser = VerbParser(prog="posbias")
        >>> group = parser.add_subparsers().add_parser("listwise")
        >>> verbs = group.add_subparsers(metavar="VERB")
        >>> for name in ("test", "curves"):
        ...     _ = verbs.add_parser(name, help=f"the {name}")
        >>> list_verbs(group, verbs, [("expert", ["curves"])])
        >>> print(group.format_help().split("\\n\\n", 2)[2])  # doctest: +NORMALIZE_WHITESPACE
        commands (posbias listwise VERB --help for each):
            test    the test
          expert:
            curves  the curves
    """
    helps = {action.dest: action.help or "" for action in verbs._choices_actions}
    named = {name for _, names in headings for name in names}
    others = (rest, [name for name in helps if name not in named])
    blocks = [*headings, others] if rest else [others, *headings]
    width = max(map(len, helps)) + 2
    lines = [f"commands ({group.prog} {verbs.metavar or 'COMMAND'} --help for each):"]
    for title, names in blocks:
        shown = [name for name in names if name in helps]
        if shown and title:
            lines.append(f"  {title}:")
        lines.extend(f"    {name:<{width}}{helps[name]}" for name in shown)
    # The usage keeps naming the verb argument; argparse's flat list of verbs gives way to this.
    group.usage = (
        group.format_usage().removeprefix("usage: ").strip().replace(group.prog, "%(prog)s", 1)
    )
    verbs.help = argparse.SUPPRESS
    group.epilog = "\n".join(lines)


def add_source_verb(
    verbs: argparse._SubParsersAction,
    name: str,
    sources: Sequence[Verb],
    *,
    help: str,
    description: str,
    metavar: str = "SOURCE",
) -> argparse.ArgumentParser:
    """Add the verb ``name`` that takes a source first, then that source's flags, the way
    ``mteb run -t TASK`` takes a task: ``posbias benchmark build fever --input … --wiki-pages …``.

    Each source is a :class:`Verb` (its settings, handler, help) that runs as the command
    ``<verb> <source>`` (its output folder records that). ``--help`` lists the sources, then the
    flags every source takes alike, then each source's own under its name (``<verb> SOURCE
    --help`` shows one source's alone). A flag the chosen source does not take is one error line
    naming the sources that take it (:class:`VerbParser`). ``metavar`` names the source in the help;
    the parsed arguments hold it as ``source``. Returns the verb's parser.

    Example:
        >>> from dataclasses import dataclass
        >>> from hf_posbias.settings import setting
        >>> @dataclass(kw_only=True)
        ... class Fever:
        ...     input: str = setting("claims JSONL")
        ...     wiki_pages: str = setting("wiki-pages folder")
        >>> @dataclass(kw_only=True)
        ... class SciFact:
        ...     input: str = setting("folder of the CSVs")
        >>> parser = VerbParser(prog="tool")
        >>> build = add_source_verb(
        ...     parser.add_subparsers(),
        ...     "build",
        ...     [Verb("fever", Fever, print, "FEVER"), Verb("scifact", SciFact, print, "SciFact")],
        ...     help="build a task",
        ...     description="Build a task from a source.",
        ... )
        >>> args = parser.parse_args(["build", "fever", "--input", "c", "--wiki-pages", "w"])
        >>> args.source, args.wiki_pages
        ('fever', 'w')
        >>> import contextlib, io
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        ...     parser.parse_args(["build", "scifact", "--input", "d", "--wiki-pages", "w"])
        >>> print(err.getvalue().strip())
        error: tool build scifact takes no --wiki-pages (a flag of fever)
        >>> print(build.format_help())  # doctest: +NORMALIZE_WHITESPACE, +ELLIPSIS
        usage: tool build [-h] SOURCE [its flags]
        ...
        fever: FEVER:
          --input INPUT         claims JSONL
          --wiki-pages WIKI_PAGES
                                wiki-pages folder
        <BLANKLINE>
        scifact: SciFact:
          --input INPUT         folder of the CSVs
    """
    parser = verbs.add_parser(
        name,
        help=help,
        description=description,
        usage=f"%(prog)s [-h] {metavar} [its flags]",
    )
    parser.add_argument(
        "source",
        metavar=metavar,
        choices=[source.name for source in sources],
        help=f"one of: {', '.join(source.name for source in sources)}",
    )
    parsed = {
        source.name: source.configure(
            VerbParser(
                prog=f"{parser.prog} {source.name}",
                description=source.description or source.help,
            )
        )
        for source in sources
    }

    def shown(sub: argparse.ArgumentParser) -> dict[str, argparse.Action]:
        """A source's arguments as its help shows them (``--help`` left out), by spelling."""
        return {
            action.option_strings[0] if action.option_strings else action.dest: action
            for action in sub._actions
            if not isinstance(action, argparse._HelpAction)
        }

    by_source = {source: shown(sub) for source, sub in parsed.items()}
    helps = {
        key: {parser._get_formatter()._expand_help(actions[key]) for actions in by_source.values()}
        for key in set.intersection(*(set(actions) for actions in by_source.values()))
    }
    alike = [key for key in next(iter(by_source.values())) if len(helps.get(key, ())) == 1]
    first = next(iter(by_source.values()))
    parser.add_argument_group(f"every {metavar}")._group_actions.extend(first[k] for k in alike)
    takes: dict[str, list[str]] = {}
    for source, actions in by_source.items():
        for key in actions:
            takes.setdefault(key, []).append(source)
    for source in sources:
        own = [action for key, action in by_source[source.name].items() if key not in alike]
        title = f"{source.name}: {source.help}"
        parser.add_argument_group(title)._group_actions.extend(own)
        parsed[source.name].posbias_flags_elsewhere = {
            key: names
            for key, names in takes.items()
            if key.startswith("-") and key not in by_source[source.name]
        }
    parser.posbias_sources = parsed  # type: ignore[attr-defined]
    return parser
