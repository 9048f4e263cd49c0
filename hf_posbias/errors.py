"""Exceptions for user mistakes.

Every error a user can cause (bad input file, unknown model name, unreachable endpoint, a budget
that cannot be met) is raised as a :class:`PosbiasError`. The ``posbias`` CLI prints its message on
one line and exits with status 2 — no traceback. Programming errors stay ordinary exceptions.
"""

from __future__ import annotations


class PosbiasError(Exception):
    """A user-facing error whose message is complete on one line."""


class InputError(PosbiasError):
    """Malformed or inconsistent input data (a corpus line, a missing column, an empty set)."""


class ModelLoadError(PosbiasError):
    """A model name or path that cannot be resolved or loaded."""


class BackendError(PosbiasError):
    """A remote backend (OpenAI-compatible endpoint, the Hub) that cannot be reached or used."""


class BudgetError(PosbiasError):
    """A sampling budget that a (length bin, position) cell cannot meet."""


class PluginError(PosbiasError):
    """An installed plugin (a Python entry point of an hf-posbias group) that does not load, is
    of the wrong type, or takes a name that is already taken."""


def first_line(err: BaseException, limit: int = 300) -> str:
    """The first non-empty line of an exception's message (its type name if it has none).

    Library exceptions often carry multi-line messages or whole tracebacks; a
    :class:`PosbiasError` must stay one line, so wrapping code quotes only this.

    Example:
        >>> first_line(ValueError("bad value\\nmore detail"))
        'bad value'
        >>> first_line(KeyError())
        'KeyError'
    """
    text = str(err).strip()
    return (text.splitlines()[0] if text else type(err).__name__)[:limit]
