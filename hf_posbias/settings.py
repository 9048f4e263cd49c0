"""Settings declared once: a dataclass field is a flag, its help, its choices and its check.

Every verb of ``posbias`` (and every module entry point such as ``accelerate launch -m
hf_posbias.training.train``) takes one settings dataclass. Each field says everything about one
setting in one place:

- its name (``global_batch`` → ``--global-batch``; an underscore spelling is never shown),
- its type (``bool`` → ``--x / --no-x``; ``Literal[...]`` → choices; ``list[str]`` → one or more
  values; ``X | None`` → optional),
- its default (no default → a required flag, or a positional with ``positional=True``),
- its help text, shown with the default by ``--help``,
- for a number, the values it takes (``range=at_least(1)``, ``above(0)``, ``between(0, 1)``, or
  :data:`ANY_NUMBER` where every number is meant; :class:`NumberRange`), checked by
  :class:`Settings` for flags and Python callers alike,

and ``__post_init__`` checks the values — in Python and on the command line alike, because
:func:`settings_from_args` builds the dataclass. This module imports nothing heavy, so
``posbias --help`` stays instant.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(kw_only=True)
    ... class Demo:
    ...     out: str = setting("output folder")
    ...     top_k: int = setting("documents per query", default=100)
    ...     plot: bool = setting("write a PNG", default=True)
    >>> parser = argparse.ArgumentParser(prog="demo")
    >>> add_settings_arguments(parser, Demo)
    >>> settings_from_args(Demo, parser.parse_args(["--out", "o", "--no-plot"]))
    Demo(out='o', top_k=100, plot=False)
    >>> flag_name("top_k")
    '--top-k'
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import dataclasses
import functools
import sys
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from hf_posbias.errors import InputError
from hf_posbias.setting_values import (
    SHARED_DEFAULTS,
    SHARED_RANGES,
    KeyPath,
    NumberRange,
    fits,
    type_parts,
    unwrap_optional,
    value_form,
)
from hf_posbias.shared_helps import SHARED_HELPS, SHARED_UNSET

S = TypeVar("S")

_META = "posbias"


def setting(
    help: str,
    *,
    default: Any = dataclasses.MISSING,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    choices: Sequence[Any] | Callable[[], Sequence[Any]] | None = None,
    positional: bool = False,
    metavar: str | None = None,
    cli: bool = True,
    show_default: bool = True,
    flag: str | None = None,
    range: NumberRange | None = None,
    unset: str | None = None,
) -> Any:
    """A dataclass field that is also a command-line flag.

    ``choices`` may be a callable (evaluated when the parser is built, so a registry can stay
    lazily imported). ``cli=False`` keeps a field out of the parser
    (set by the library, not the user). ``flag`` is the spelling when the field's name cannot be
    it (``lam`` is ``--lambda``, a Python keyword). ``range``: the numbers a numeric field takes
    (:class:`NumberRange`), declared once here and checked by :class:`Settings` (``None``, the
    unset value of an optional field, always passes). ``unset``: what the field does when left
    unset (its default ``None``), shown by ``--help`` as its default (:func:`default_note`); the
    help text itself names no default, so a verb that gives the field another default shows
    that one alone.
    """
    meta = {
        _META: {
            "help": help,
            "choices": choices,
            "positional": positional,
            "metavar": metavar,
            "cli": cli,
            "show_default": show_default,
            "flag": flag,
            "range": range,
            "unset": unset,
        },
        # transformers' HfArgumentParser reads "help" too.
        "help": help,
    }
    return dataclasses.field(default=default, default_factory=default_factory, metadata=meta)


def shared_setting(name: str, **kwargs: Any) -> Any:
    """:func:`setting` with the one help text of :data:`SHARED_HELPS` for ``name`` (with what
    leaving it unset does, :data:`SHARED_UNSET`; for a number, its one range of
    :data:`SHARED_RANGES`; where every verb has the same default, that one of
    :data:`SHARED_DEFAULTS`, which a verb cannot change).

    Example:
        >>> from dataclasses import dataclass, fields
        >>> @dataclass
        ... class Run:
        ...     seed: int = shared_setting("seed")
        >>> fields(Run)[0].metadata["help"] == SHARED_HELPS["seed"], Run().seed
        (True, 42)
        >>> declared_range(Run, "seed")
        NumberRange(low=0, high=None, low_open=False, high_open=False, why='')
    """
    if name in SHARED_RANGES:
        kwargs.setdefault("range", SHARED_RANGES[name])
    if name in SHARED_UNSET:
        kwargs.setdefault("unset", SHARED_UNSET[name])
    if name in SHARED_DEFAULTS:
        if kwargs.get("default", SHARED_DEFAULTS[name]) != SHARED_DEFAULTS[name]:
            raise TypeError(f"{name} has one default in every verb: {SHARED_DEFAULTS[name]!r}")
        kwargs["default"] = SHARED_DEFAULTS[name]
    return setting(SHARED_HELPS[name], **kwargs)


def flag_name(field_name: str, *, negated: bool = False) -> str:
    """The command-line spelling of a settings field (the one place that spells it).

    ``negated``: the ``--no-`` form of a ``bool`` field.

    Example:
        >>> flag_name("cut_long"), flag_name("constrained", negated=True)
        ('--cut-long', '--no-constrained')
    """
    return ("--no-" if negated else "--") + field_name.replace("_", "-")


def flag_of(settings: Any, field_name: str) -> str:
    """The spelling of a field of ``settings`` (a class or an instance) on the command line: its
    declared ``flag=`` where the field's name cannot be it, else :func:`flag_name`.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K:
        ...     size: int = setting("n", default=1, flag="--sample-size")
        ...     seed: int = setting("s", default=0)
        >>> flag_of(K, "size"), flag_of(K(), "seed"), flag_of(object(), "top_k")
        ('--sample-size', '--seed', '--top-k')
    """
    cls = settings if isinstance(settings, type) else type(settings)
    declared = getattr(cls, "__dataclass_fields__", {}).get(field_name)
    flag = declared.metadata.get(_META, {}).get("flag") if declared is not None else None
    return flag or flag_name(field_name)


_NAMING_FLAGS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "posbias_naming_flags", default=False
)


@contextlib.contextmanager
def naming_flags() -> Iterator[None]:
    """Within it, a setting's check names the setting by its flag (``--top-k``): the command
    line (``posbias``, a module entry point, flags parsed by :func:`parse_settings_args`) runs
    inside it. Outside it a Python caller reads the keyword it passed (``top_k``). The one switch
    of :func:`setting_label` (its example).
    """
    token = _NAMING_FLAGS.set(True)
    try:
        yield
    finally:
        _NAMING_FLAGS.reset(token)


def setting_label(field_name: str, settings: Any = None) -> str:
    """How an error names a setting to whoever set it: its flag on the command line
    (:func:`naming_flags`; the declared ``flag=`` of ``settings``' field where it has one,
    :func:`flag_of`), else the keyword of the Python call (the field's name).

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K:
        ...     lam: float = setting("λ", default=0.1, flag="--lambda")
        >>> with naming_flags():
        ...     setting_label("lam", K), setting_label("top_k")
        ('--lambda', '--top-k')
        >>> setting_label("lam", K), setting_label("top_k")
        ('lam', 'top_k')
    """
    if not _NAMING_FLAGS.get():
        return field_name
    return flag_of(settings, field_name) if settings is not None else flag_name(field_name)


def check_choice(field_name: str, value: Any, choices: Iterable[Any]) -> None:
    """One-line :class:`InputError` when ``value`` is not among ``choices``, naming the setting
    as its caller set it (:func:`setting_label`).

    Example:
        >>> check_choice("scoring", "x", ("default", "posir"))
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: scoring must be one of default, posir, got 'x'
    """
    choices = tuple(choices)
    if value not in choices:
        from hf_posbias.suggestions import suggest

        hint = suggest(value, map(str, choices)) if isinstance(value, str) else ""
        raise InputError(
            f"{setting_label(field_name)} must be one of {', '.join(map(str, choices))}, got "
            f"{value!r}{hint}"
        )


def check_choices(settings: Any, *field_names: str) -> None:
    """:func:`check_choice` for each named field against the ``choices`` its :func:`setting`
    declares (the ones ``--help`` shows and the parser enforces), so the library refuses what the
    command line refuses without the choices being spelled twice. A list value is checked item
    by item; ``None`` (unset) passes.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Test:
        ...     method: str = setting("paired test", default="x", choices=("bootstrap", "t"))
        >>> check_choices(Test(), "method")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: method must be one of bootstrap, t, got 'x'
    """
    declared = {
        f.name: f.metadata.get(_META, {}).get("choices") for f in dataclasses.fields(settings)
    }
    for name in field_names:
        choices, value = declared[name], getattr(settings, name)
        if choices is None:
            raise TypeError(f"{type(settings).__name__}.{name} declares no choices")
        if callable(choices):
            choices = choices()
        if value is None:
            continue
        for item in value if isinstance(value, list | tuple) else (value,):
            check_choice(name, item, choices)


def declared_range(settings: Any, field_name: str) -> NumberRange | None:
    """The range a field of ``settings`` (a class or an instance) declares, if any."""
    cls = settings if isinstance(settings, type) else type(settings)
    declared = getattr(cls, "__dataclass_fields__", {}).get(field_name)
    return declared.metadata.get(_META, {}).get("range") if declared is not None else None


def range_problems(cls: type, values: typing.Mapping[str, Any]) -> list[tuple[KeyPath, str]]:
    """Every value of ``values`` (by field name) outside the range its field of ``cls``
    declares, each with its key path (a list's items one by one); values that are no number
    are left to the type checks.

    Example:
        >>> from dataclasses import dataclass
        >>> from hf_posbias.setting_values import above, at_least
        >>> @dataclass
        ... class K:
        ...     lr: float = setting("rate", default=0.1, range=above(0))
        ...     sizes: list[int] = setting("sizes", default_factory=list, range=at_least(1))
        >>> range_problems(K, {"lr": 0.0, "sizes": [2, 0]})
        [(('lr',), 'must be > 0, got 0.0'), (('sizes', 1), 'must be >= 1, got 0')]
    """
    problems: list[tuple[KeyPath, str]] = []
    for name, value in values.items():
        declared = declared_range(cls, name)
        if declared is None:
            continue
        items = enumerate(value) if isinstance(value, list | tuple) else [(None, value)]
        for index, item in items:
            problem = declared.problem(item)
            if problem is not None:
                problems.append(((name,) if index is None else (name, index), problem))
    return problems


def check_number(field_name: str, value: Any, declared: NumberRange) -> None:
    """One-line :class:`InputError` when ``value`` is outside ``declared``, naming the setting
    as its caller set it (:func:`setting_label`): a library function's own argument checked
    against the range its setting declares.

    Example:
        >>> from hf_posbias.setting_values import between
        >>> check_number("holdout", 1.5, between(0, 1, high_open=True))
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: holdout must be >= 0 and < 1, got 1.5
    """
    problem = declared.problem(value)
    if problem is not None:
        raise InputError(f"{setting_label(field_name)} {problem}")


def check_ranges(settings: Any, values: typing.Mapping[str, Any] | None = None) -> None:
    """One-line :class:`InputError` for the first value outside its declared range, naming the
    setting as its caller set it (:func:`setting_label`: the flag on the command line, the
    keyword in Python): ``values`` (by field name) against the fields of ``settings`` (a class
    or an instance), by default the instance's own. :class:`Settings` runs it for every verb.

    Example:
        >>> from dataclasses import dataclass
        >>> from hf_posbias.setting_values import at_least
        >>> @dataclass
        ... class K:
        ...     top_k: int = setting("documents", default=100, range=at_least(1))
        >>> check_ranges(K(top_k=0))
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: top_k must be >= 1, got 0
    """
    cls = settings if isinstance(settings, type) else type(settings)
    if values is None:
        values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(cls) if f.init}
    for path, problem in range_problems(cls, values):
        raise InputError(f"{setting_label(str(path[0]), cls)} {problem}")


@dataclasses.dataclass(kw_only=True)
class Settings:
    """Base of settings mixins: each mixin's ``__post_init__`` calls ``super().__post_init__()``,
    so a verb's settings combined from several groups run every group's checks, each once, and
    every declared range first.

    Example:
        >>> from dataclasses import dataclass
        >>> from hf_posbias.setting_values import above
        >>> @dataclass(kw_only=True)
        ... class Train(Settings):
        ...     lr: float = setting("learning rate", default=1e-4, range=above(0))
        >>> Train(lr=-1.0)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: lr must be > 0, got -1.0
    """

    def __post_init__(self) -> None:
        """The end of the cooperative chain of checks: every number against the range its
        field declares (:func:`check_ranges`). A mixin calls ``super().__post_init__()``
        first, after converting its values (a flag's text to a number), so the ranges are
        checked before anything else."""
        check_ranges(self)


@dataclasses.dataclass(kw_only=True)
class ProgressSettings(Settings):
    """The progress convention of every long verb: ``--progress / --no-progress``, on by default.

    Example:
        >>> parse_settings_args(ProgressSettings, ["--no-progress"])
        ProgressSettings(progress=False)
    """

    progress: bool = setting(
        "report progress (bars on a terminal, plain lines in a log)", default=True
    )


class _Extend(argparse._ExtendAction):
    """A list flag whose values replace its default list (argparse's would extend it)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        if getattr(namespace, self.dest, None) is self.default:
            setattr(namespace, self.dest, None)
        super().__call__(parser, namespace, values, option_string)


def settings_fields(cls: type) -> list[tuple[dataclasses.Field, Any]]:
    """The fields of ``cls`` that are flags, with their resolved annotations."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_META, {})
        if not f.init or not meta.get("cli", True):
            continue
        out.append((f, hints[f.name]))
    return out


def _default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def default_note(f: dataclasses.Field, *, optional: bool = False) -> str:
    """What ``--help`` appends to a setting's help: its default, once, from the setting
    (`` (default: 100)``; a list's items joined by spaces; an unset default, ``None``, as the
    field's ``unset=`` says what it does, else nothing). A help text names no default itself.
    An ``optional`` number with a default of its own, whose flag takes ``none``
    (:func:`~hf_posbias.setting_values.type_parts`), says what ``none`` does.

    Example:
        >>> from dataclasses import dataclass, fields
        >>> @dataclass
        ... class K:
        ...     seed: int = setting("seed", default=0)
        ...     device: str | None = setting("torch device", default=None, unset="a GPU, else cpu")
        ...     configs: list[str] = setting("configs", default_factory=lambda: ["a", "b"])
        ...     bootstrap: int | None = setting("resamples", default=1000, unset="no intervals")
        >>> [default_note(f) for f in fields(K)[:3]]
        [' (default: 0)', ' (default: a GPU, else cpu)', ' (default: a b)']
        >>> default_note(fields(K)[3], optional=True)
        ' (default: 1000; none: no intervals)'
    """
    meta = f.metadata.get(_META, {})
    default = _default_of(f)
    unset = meta.get("unset")
    if not meta.get("show_default", True) or default is dataclasses.MISSING:
        return ""
    if default is None:
        return f" (default: {unset})" if unset else ""
    if default is False or (isinstance(default, list | tuple) and not default):
        return ""
    shown = " ".join(map(str, default)) if isinstance(default, list | tuple) else default
    turned_off = f"; none: {unset}" if optional and unset else ""
    return f" (default: {shown}{turned_off})"


def add_settings_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type,
    *,
    exclude: Iterable[str] = (),
) -> None:
    """Add one argument per field of the settings dataclass ``cls`` to ``parser``.

    Fields without a default are required (or positional with ``setting(positional=True)``) and
    come first in ``--help``.
    Help text comes from the field's metadata (``setting(help)``; a bare ``{"help": …}`` as
    transformers uses works too) with the default appended.
    """
    skip = set(exclude)
    fields = settings_fields(cls)
    # Required settings first (what a user must give), then the rest in declaration order.
    fields.sort(key=lambda item: _default_of(item[0]) is not dataclasses.MISSING)
    for f, tp in fields:
        if f.name in skip:
            continue
        meta = dict(f.metadata.get(_META, {}))
        help_text = meta.get("help", f.metadata.get("help", ""))
        default = _default_of(f)
        required = default is dataclasses.MISSING
        base, optional = unwrap_optional(tp)
        kwargs: dict[str, Any] = {"dest": f.name}
        if base is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
            kwargs["default"] = bool(default) if not required else None
        else:
            conv, literal, is_list = type_parts(tp)
            kwargs["type"] = conv
            number = conv.args[0] if isinstance(conv, functools.partial) else conv
            if meta.get("range") is not None and number not in (int, float):
                raise TypeError(f"{cls.__name__}.{f.name} declares a range but takes no number")
            choices = meta.get("choices")
            if callable(choices):
                choices = choices()
            if choices is None and literal is not None:
                choices = literal
            if choices is not None:
                kwargs["choices"] = tuple(choices)
            if is_list:
                kwargs["nargs"] = "+"
                kwargs["action"] = _Extend
            else:
                kwargs["action"] = "store"
            if not required:
                kwargs["default"] = default
        flag = meta.get("flag") or flag_name(f.name)
        if meta.get("metavar"):
            kwargs["metavar"] = meta["metavar"]
        elif not meta.get("positional") and ("choices" not in kwargs or len(kwargs["choices"]) > 8):
            # Named after the flag, not the field (``--n-resamples N_RESAMPLES``, never the
            # field's ``RESAMPLES``); a short list of choices is shown as argparse's {a,b}.
            kwargs["metavar"] = flag.removeprefix("--").replace("-", "_").upper()
        appended = "" if required or base is bool else default_note(f, optional=optional)
        help_text = f"{help_text}{appended}"
        kwargs["help"] = help_text.replace("%", "%%") if help_text else None
        if meta.get("positional"):
            kwargs.pop("dest")
            if not required:
                kwargs["nargs"] = "*" if kwargs.get("nargs") == "+" else "?"
            action = parser.add_argument(f.name, **kwargs)
            action.posbias_default_note = appended  # type: ignore[attr-defined]
            action.posbias_range = meta.get("range")  # type: ignore[attr-defined]
            continue
        action = parser.add_argument(flag, required=required, **kwargs)
        # The range the field declares (a test walks every numeric flag with it).
        action.posbias_range = meta.get("range")  # type: ignore[attr-defined]
        # What was appended to the help (scripts/cli_surface.py folds it: another default, the
        # same meaning).
        action.posbias_default_note = appended  # type: ignore[attr-defined]


def value_problems(cls: type, values: typing.Mapping[str, Any]) -> list[tuple[KeyPath, str]]:
    """Every value of ``values`` (a spec file's mapping) whose type its field of ``cls`` refuses,
    each with its key path and the expected form; list items are checked one by one.

    Unknown keys are not this function's business (the caller names them).

    Example:
        >>> from dataclasses import dataclass
        >>> from hf_posbias.setting_values import key_path
        >>> @dataclass
        ... class K:
        ...     bootstrap: int = setting("resamples", default=1000)
        ...     tasks: list[str] = setting("tasks", default_factory=list)
        >>> for path, problem in value_problems(K, {"bootstrap": "many", "tasks": "SQuAD-PosQ"}):
        ...     print(key_path(path), problem)
        bootstrap expected a whole number, got 'many'
        tasks expected a list (e.g. [x, y]) of strings, got 'SQuAD-PosQ' (write [SQuAD-PosQ])
        >>> [key_path(p) for p, _ in value_problems(K, {"tasks": ["a", 3]})]
        ['tasks[1]']
    """
    hints = typing.get_type_hints(cls)
    problems: list[tuple[KeyPath, str]] = []
    for f in dataclasses.fields(cls):
        if f.name not in values or not f.init:
            continue
        tp, value = hints[f.name], values[f.name]
        if not fits(tp, value):
            problem = f"expected {value_form(tp)}, got {value!r}"
            if isinstance(value, str) and value_form(tp).startswith("a list"):
                problem += f" (write [{value}])"
            problems.append(((f.name,), problem))
            continue
        base, _ = unwrap_optional(tp)
        args = [a for a in typing.get_args(base) if a is not Ellipsis]
        if isinstance(value, list | tuple) and args:
            for index, item in enumerate(value):
                if not fits(args[0], item):
                    problem = f"expected {value_form(args[0])}, got {item!r}"
                    problems.append(((f.name, index), problem))
    return problems


def settings_from_values(cls: type[S], **values: Any) -> S:
    """Build ``cls`` from values by field name (a spec file's, as YAML typed them), each read
    as its flag would be: a number for a number field (``3`` → ``3.0`` for a float), a string
    where the field takes another type converted as its flag converts it (YAML reads ``5e-6``
    as a string); anything else is one :class:`InputError` line naming the field.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K:
        ...     lr: float = setting("rate", default=0.1)
        ...     k: int | None = setting("k", default=None)
        >>> settings_from_values(K, lr=3, k=None), settings_from_values(K, lr="5e-6")
        (K(lr=3.0, k=None), K(lr=5e-06, k=None))
        >>> settings_from_values(K, k="many")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: k: expected a whole number or null, got 'many'
    """
    hints = typing.get_type_hints(cls)
    typed: dict[str, Any] = {}
    for name, value in values.items():
        tp = hints[name]
        base, _ = unwrap_optional(tp)
        if fits(tp, value):
            is_int = isinstance(value, int) and not isinstance(value, bool)
            typed[name] = float(value) if base is float and is_int else value
            continue
        convert = type_parts(tp)[0]
        try:
            if not isinstance(value, str) or convert is None:
                raise ValueError(value)
            typed[name] = convert(value)
        except ValueError:
            raise InputError(f"{name}: expected {value_form(tp)}, got {value!r}") from None
    return cls(**typed)


def settings_from_args(cls: type[S], namespace: argparse.Namespace, **overrides: Any) -> S:
    """Build ``cls`` from a namespace parsed by a parser that holds its flags.

    Fields the namespace lacks (``cli=False`` or excluded) keep their defaults unless given in
    ``overrides``. The dataclass's ``__post_init__`` runs its checks, so a bad value is one
    :class:`InputError` line.
    """
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name in overrides:
            values[f.name] = overrides[f.name]
        elif hasattr(namespace, f.name):
            value = getattr(namespace, f.name)
            if isinstance(value, list) and f.name in _tuple_fields(cls):
                value = tuple(value)
            values[f.name] = value
    with naming_flags():  # the values came as flags: a mistake names the flag
        return cls(**values)


def _tuple_fields(cls: type) -> set[str]:
    hints = typing.get_type_hints(cls)
    out = set()
    for name, tp in hints.items():
        base, _ = unwrap_optional(tp)
        if typing.get_origin(base) is tuple or base is tuple:
            out.add(name)
    return out


class RaisingArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose mistakes are one :class:`InputError` instead of an exit.

    ``exit_on_error=False`` alone still exits for a missing required flag (Python < 3.12).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("exit_on_error", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> typing.NoReturn:  # type: ignore[override]
        raise InputError(message)


def settings_parser(cls: type, **parser_kwargs: Any) -> RaisingArgumentParser:
    """A stand-alone parser of ``cls`` whose mistakes are one :class:`InputError`.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K:
        ...     global_batch: int = setting("rows", default=3)
        >>> print(settings_parser(K, prog="k").format_usage().strip())
        usage: k [-h] [--global-batch GLOBAL_BATCH]
    """
    parser = RaisingArgumentParser(**parser_kwargs)
    add_settings_arguments(parser, cls)
    return parser


def parse_settings_args(
    cls: type[S], argv: Sequence[str] | None, *, strict: bool = True, **parser_kwargs: Any
) -> S:
    """Parse flags straight into ``cls``; a bad or unknown flag is one :class:`InputError`.

    For module entry points and for validating flags that a runner passes on (the matrix and
    the study check every run's flags before the first one starts).

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K:
        ...     k: int = setting("k", default=3)
        >>> parse_settings_args(K, ["--k", "5"]).k
        5
        >>> parse_settings_args(K, ["--q", "5"])
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: unknown flag(s): --q 5
    """
    parser = settings_parser(cls, **parser_kwargs)
    args = list(argv) if argv is not None else None
    try:
        namespace, unknown = parser.parse_known_args(args)
    except argparse.ArgumentError as err:
        raise InputError(str(err)) from None
    if unknown and strict:
        raise InputError(f"unknown flag(s): {' '.join(unknown)}")
    return settings_from_args(cls, namespace)


def settings_to_argv(
    settings: Any, *, skip_defaults: bool = True, first: Sequence[str] = ()
) -> list[str]:
    """The flags that reproduce ``settings`` (the inverse of :func:`parse_settings_args`).

    ``first``: fields spelled out ahead of the rest, in that order, even at their defaults (a
    command line that names what its caller set, as ``posbias study run --dry-run`` prints it);
    a field whose value is ``None`` is never spelled out.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K:
        ...     k: int = setting("k", default=3)
        ...     fast: bool = setting("f", default=False)
        ...     names: list[str] = setting("n", default_factory=list)
        >>> settings_to_argv(K(k=5, fast=True, names=["a", "b"]))
        ['--k', '5', '--fast', '--names', 'a', 'b']
        >>> settings_to_argv(K(fast=True), first=["names", "k"])
        ['--k', '3', '--fast']
    """
    fields = {f.name: (f, tp) for f, tp in settings_fields(type(settings))}
    order = [*first, *(name for name in fields if name not in first)]
    argv: list[str] = []
    for f, tp in (fields[name] for name in order):
        value = getattr(settings, f.name)
        default = _default_of(f)
        at_default = default is not dataclasses.MISSING and value == default
        if skip_defaults and at_default and f.name not in first:
            continue
        if value is None:
            continue
        meta = f.metadata.get(_META, {})
        base, _ = unwrap_optional(tp)
        flag = meta.get("flag") or flag_name(f.name)
        if base is bool:
            argv.append(flag if value else "--no-" + flag[2:])
            continue
        name = [] if meta.get("positional") else [flag]
        if isinstance(value, list | tuple) and type_parts(tp)[2]:
            if value:
                argv += [*name, *map(str, value)]
            continue
        if isinstance(value, list | tuple):
            # A one-string flag that __post_init__ parsed into a list ("1,5,20" → [1, 5, 20]).
            value = ",".join(map(str, value))
        argv += [*name, str(value)]
    return argv


def settings_record(settings: Any, *, secrets: Iterable[str] = ("hub_token", "api_key")) -> dict:
    """The settings as a plain dict for cards, manifests and logs, secrets removed.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K:
        ...     hub_token: str | None = setting("t", default=None)
        >>> settings_record(K(hub_token="hf_x"))
        {'hub_token': None}
    """
    record = dataclasses.asdict(settings)
    for name in secrets:
        if name in record:
            record[name] = None
    return record


def launch_main(
    argv: Sequence[str] | None,
    settings_cls: type[S],
    *,
    prog: str,
    description: str,
    run: Callable[[S], Any],
    report: Callable[[Any], str],
) -> int:
    """The body of a module entry point (``python -m …``, ``accelerate launch -m …``).

    Parses the flags into ``settings_cls``, calls ``run(settings)`` and prints
    ``report(result)`` on rank 0 (``result.world_size`` if it has one, ``$RANK``); a user mistake
    prints one ``error:`` line to stderr and returns 2.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class K:
        ...     k: int = setting("k", default=3)
        >>> launch_main(["--k", "0x"], K, prog="k", description="", run=print, report=str)
        2
        >>> launch_main(["--k", "5"], K, prog="k", description="", run=lambda s: s.k, report=str)
        5
        0
    """
    import logging
    import os

    from hf_posbias.errors import PosbiasError

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        with naming_flags():
            settings = parse_settings_args(settings_cls, argv, prog=prog, description=description)
            result = run(settings)
    except PosbiasError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if getattr(result, "world_size", 1) == 1 or int(os.environ.get("RANK", "0")) == 0:
        print(report(result))
    return 0
