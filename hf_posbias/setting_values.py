"""The values a setting takes: what its annotation means and, for a number, its range.

A field of a settings dataclass (:mod:`hf_posbias.settings`) is typed, and a numeric one declares
the numbers it takes (``setting(…, range=at_least(1))``, :class:`NumberRange`). This module says
what those declarations mean, with no dependency inside the package: the converter of a flag's
text (:func:`type_parts`), how a value of a type is written in an error (:func:`value_form`),
whether a spec file's value fits a field (:func:`fits`, at a :data:`KeyPath`), and the ranges,
those of the settings of one meaning in every verb declared once in :data:`SHARED_RANGES`
(beside their one help text, :mod:`hf_posbias.shared_helps`).

Example:
    >>> at_least(1).problem(0), above(0).describe(), value_form(int | None)
    ('must be >= 1, got 0', '> 0', 'a whole number or null')
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal


def unwrap_optional(tp: Any) -> tuple[Any, bool]:
    """``(T, True)`` for ``T | None``; ``(str, True)`` for a union of several types with
    ``None``; ``(tp, False)`` otherwise."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
        return str, True
    return tp, False


def _number_or_word(number: type, text: str) -> Any:
    """A flag's text as ``number`` when it is one, else as it is (a word such as ``auto``).

    Example:
        >>> _number_or_word(float, "2"), _number_or_word(float, "auto")
        (2.0, 'auto')
    """
    try:
        return number(text)
    except ValueError:
        return text


def _number_or_none(number: type, text: str) -> Any:
    """An optional number's flag text: the word ``none`` is ``None`` (a setting turned off,
    e.g. ``--bootstrap none``), anything else the number.

    Example:
        >>> _number_or_none(int, "none"), _number_or_none(int, "200")
        (None, 200)
    """
    return None if text.strip().lower() == "none" else number(text)


def type_parts(tp: Any) -> tuple[Callable[[str], Any] | None, tuple | None, bool]:
    """(converter, literal choices, is_list) of a field's annotation (``str | list[str]``: one or
    more names, a single one kept as a string).

    An optional number's flag also takes ``none`` (:func:`_number_or_none`).

    Example:
        >>> type_parts(int)[0], type_parts(int | None)[0]("none"), type_parts(list[str])[2]
        (<class 'int'>, None, True)
    """
    if set(typing.get_args(tp)) - {type(None)} == {str, list[str]}:
        return str, None, True
    number = next((m for m in union_members(tp) or () if m in (int, float)), None)
    if number is not None:  # ``float | Literal["auto"]``: a number, else the word as given
        return functools.partial(_number_or_word, number), None, False
    tp, optional = unwrap_optional(tp)
    if optional and tp in (int, float):
        # Named as the number, so argparse's refusal reads "invalid int value".
        convert = functools.partial(_number_or_none, tp)
        convert.__name__ = tp.__name__  # type: ignore[attr-defined]
        return convert, None, False
    origin = typing.get_origin(tp)
    if origin is Literal:
        values = typing.get_args(tp)
        return type(values[0]), values, False
    if origin in (list, tuple, Sequence) or tp in (list, tuple):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        inner = args[0] if args else str
        conv, lit, _ = type_parts(inner)
        return conv, lit, True
    if tp in (int, float, str):
        return tp, None, False
    return str, None, False


KeyPath = tuple["str | int", ...]
"""Where a value sits in a spec file: ``("configs", 1)`` is ``configs[1]``."""


def key_path(path: KeyPath) -> str:
    """The spelling of a key path as a spec file's reader sees it.

    Example:
        >>> key_path(("configs", 1)), key_path(("training", "max_steps"))
        ('configs[1]', 'training.max_steps')
    """
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def union_members(tp: Any) -> list[Any] | None:
    """The non-None members of a union of two or more types (``str | dict``), else ``None``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) > 1:
            return args
    return None


def _plural(form: str) -> str:
    """``a string`` → ``strings``; ``a mapping (key: value lines)`` → ``mappings (…)``."""
    noun, paren, rest = form.removeprefix("a ").removeprefix("an ").partition(" (")
    return f"{noun}s{paren}{rest}"


def value_form(tp: Any) -> str:
    """How a value of type ``tp`` is written (a spec file's or a flag's error message).

    Example:
        >>> value_form(int), value_form(float | None), value_form(list[str])
        ('a whole number', 'a number or null', 'a list (e.g. [x, y]) of strings')
    """
    members = union_members(tp)
    if members is not None:
        form = " or ".join(value_form(a) for a in members)
        return f"{form} or null" if type(None) in typing.get_args(tp) else form
    base, optional = unwrap_optional(tp)
    origin = typing.get_origin(base)
    if origin is Literal:
        form = "one of " + ", ".join(map(str, typing.get_args(base)))
    elif base is bool:
        form = "true or false"
    elif base is int:
        form = "a whole number"
    elif base is float:
        form = "a number"
    elif base is str:
        form = "a string"
    elif origin in (list, tuple, Sequence) or base in (list, tuple):
        args = [a for a in typing.get_args(base) if a is not Ellipsis]
        inner = value_form(args[0]) if args else "a value"
        form = f"a list (e.g. [x, y]) of {' or '.join(map(_plural, inner.split(' or ')))}"
    elif origin is dict or base is dict:
        form = "a mapping (key: value lines)"
    else:
        return "a value"
    return f"{form} or null" if optional else form


def fits(tp: Any, value: Any) -> bool:
    """Whether ``value`` (as YAML typed it) is a value of ``tp``.

    Example:
        >>> fits(int | None, None), fits(float, 3), fits(int, True), fits(list[str], "a")
        (True, True, False, False)
    """
    members = union_members(tp)
    if members is not None:
        return (value is None and type(None) in typing.get_args(tp)) or any(
            fits(a, value) for a in members
        )
    base, optional = unwrap_optional(tp)
    if value is None:
        return optional
    origin = typing.get_origin(base)
    if origin is Literal:
        return value in typing.get_args(base)
    if base is bool:
        return isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if base is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if base is str:
        return isinstance(value, str)
    if origin in (list, tuple, Sequence) or base in (list, tuple):
        return isinstance(value, list | tuple)
    if origin is dict or base is dict:
        return isinstance(value, dict)
    return True


# --------------------------------------------------------------------------- ranges


def _number_text(number: float) -> str:
    """A bound as a person writes it: ``1``, ``0.5``, ``1e-06``."""
    return f"{number:g}"


@dataclass(frozen=True)
class NumberRange:
    """The numbers a numeric setting takes: its one declaration (``setting(range=…)``).

    ``low``/``high``: the bounds (``None``: unbounded on that side); ``low_open``/``high_open``:
    the bound itself is excluded (a learning rate is ``> 0``); ``why``: what the bound is for,
    said after it in the error (``to compute nDCG@10``). NaN and the infinities are never in a
    bounded range. Build one with :func:`at_least`, :func:`above` or :func:`between`;
    :data:`ANY_NUMBER` declares a setting that takes every number, on purpose.

    Example:
        >>> at_least(1).problem(0), above(0).problem(1e-5), between(0, 1).problem(2.0)
        ('must be >= 1, got 0', None, 'must be between 0 and 1, got 2.0')
        >>> between(0, 1, high_open=True).describe(), at_least(10, why="for nDCG@10").problem(5)
        ('>= 0 and < 1', 'must be >= 10 for nDCG@10, got 5')
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    why: str = ""

    def admits(self, value: float) -> bool:
        """Whether ``value`` is in the range (NaN and ±inf never are, unless unbounded)."""
        if self.low is None and self.high is None:
            return True
        if not math.isfinite(value):
            return False
        above_low = (
            self.low is None or value > self.low or (value == self.low and not self.low_open)
        )
        below_high = (
            self.high is None or value < self.high or (value == self.high and not self.high_open)
        )
        return above_low and below_high

    def describe(self) -> str:
        """The range as the error says it: ``>= 1``, ``> 0``, ``between 0 and 1``."""
        if self.low is None and self.high is None:
            return "any number"
        if self.low is not None and self.high is not None and not (self.low_open or self.high_open):
            return f"between {_number_text(self.low)} and {_number_text(self.high)}"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {_number_text(self.low)}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {_number_text(self.high)}")
        return " and ".join(parts)

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (``None``: nothing; a value that is no number is its
        type's business, not the range's)."""
        if isinstance(value, bool) or not isinstance(value, int | float) or self.admits(value):
            return None
        why = f" {self.why}" if self.why else ""
        # inf is >= 0, but no bounded setting takes it: say what is wrong with it.
        finite = "a finite number " if not math.isfinite(value) else ""
        return f"must be {finite}{self.describe()}{why}, got {value!r}"

    def outside(self) -> list[float]:
        """Values just outside the range, one per bound (what a test feeds a flag).

        Example:
            >>> at_least(1).outside(), above(0).outside(), between(0, 1).outside()
            ([0], [0], [-1, 2])
        """
        values: list[float] = []
        if self.low is not None:
            values.append(self.low if self.low_open else self.low - 1)
        if self.high is not None:
            values.append(self.high if self.high_open else self.high + 1)
        return values


def at_least(low: float, *, why: str = "") -> NumberRange:
    """``>= low``: ``at_least(1)`` for a count, ``at_least(0)`` for a seed."""
    return NumberRange(low, why=why)


def above(low: float, *, why: str = "") -> NumberRange:
    """``> low``: ``above(0)`` for a learning rate or a temperature scale."""
    return NumberRange(low, low_open=True, why=why)


def between(
    low: float, high: float, *, low_open: bool = False, high_open: bool = False, why: str = ""
) -> NumberRange:
    """``low <= value <= high`` (either end excluded with ``low_open`` / ``high_open``)."""
    return NumberRange(low, high, low_open, high_open, why)


ANY_NUMBER = NumberRange()
"""The declaration of a numeric setting that takes every number, made on purpose (a numeric
flag must declare a range: ``tests/cli/test_cli_numbers.py`` refuses one that declares none)."""


SHARED_RANGES: dict[str, NumberRange] = {
    "seed": at_least(0),
    "batch_size": at_least(1),
    "n_resamples": at_least(1),
    "bootstrap": at_least(1),
    "max_steps": at_least(1),
    "epochs": above(0),
    "lr": above(0),
    "logging_steps": at_least(1),
    "warmup_ratio": between(0, 1, high_open=True),
    "limit": at_least(1),
    "max_concurrency": at_least(1),
    "per_position": at_least(1),
    "global_batch": at_least(1),
    "lambda": at_least(0),
    "pos_aug": at_least(1),
    "passage_tokens": at_least(1),
    "alpha": between(0, 1, low_open=True, high_open=True),
    "k": at_least(1),
    "window": at_least(1),
    "shuffles": at_least(1),
    "smoothing": at_least(0),
}
"""The range of each numeric setting of ``hf_posbias.shared_helps.SHARED_HELPS``, declared once
for every verb that takes it (``hf_posbias.settings.shared_setting``), as its help text is."""


DEFAULT_SEED = 42
"""The one default of ``--seed`` in every verb: YHP26's (Table 10, the seed of all its fine-tuning
runs), which the papers' study specs (``studies/``) use for every step."""

SHARED_DEFAULTS: dict[str, Any] = {"seed": DEFAULT_SEED}
"""The settings of ``hf_posbias.shared_helps.SHARED_HELPS`` whose default is the same in every
verb, declared once (``hf_posbias.settings.shared_setting`` refuses another)."""
