"""Exceptions for user mistakes.

Every error a user can cause (bad input file, unknown model name, unreachable endpoint, a budget
that cannot be met) is raised as a :class:`PosbiasError`. The ``posbias`` CLI prints its message on
one line and exits with status 2 — no traceback. Programming errors stay ordinary exceptions.
"""

from __future__ import annotations

import errno


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


DISK_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT})
"""What a full disk, a quota or a read-only or foreign folder raise: the user's to fix."""


def disk_error_line(err: OSError, out: str | None = None, *, option: str = "--out") -> str:
    """The one line of a disk error: the path (the output folder when the error names none),
    what went wrong, what to do (``option``: how the caller names the output, ``--out`` on the
    command line, ``out=`` in Python).

    Example:
        >>> print(disk_error_line(PermissionError(errno.EACCES, "Permission denied", "o/s.json")))
        cannot write o/s.json: Permission denied (make the folder writable or choose another --out)
        >>> disk_error_line(OSError(errno.ENOSPC, "No space left on device"), "o")
        'cannot write in o: No space left on device (free space; a rerun resumes)'
    """
    path = err.filename or (f"in {out}" if out else "the output")
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = "free space; a rerun resumes"
    else:
        hint = f"make the folder writable or choose another {option}"
    return f"cannot write {path}: {err.strerror or first_line(err)} ({hint})"
