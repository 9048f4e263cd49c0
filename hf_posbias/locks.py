"""One run per output folder: a lock file naming its holder, stale when that process is gone.

A long verb (``posbias study run``, ``build``, ``evaluate``) holds ``<out>/.posbias.lock`` while
it works; a second run on the same folder is refused in one line naming the holder (pid, host,
command, start time) instead of doing the work twice. A lock whose process no longer exists on
this host (a run killed with ``kill -9``, a crashed node) is stale and taken over. A folder the
lock created and that is still empty when the run ends (it failed before writing anything) is
removed, so a refused run leaves nothing behind.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp()) / "run"
    >>> with output_lock(out, command="posbias evaluate"):
    ...     with output_lock(out, command="posbias evaluate"):  # doctest: +ELLIPSIS
    ...         pass
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: .../run is in use by posbias evaluate (pid ... on ...): wait ...
    >>> out.exists()  # created by the lock, empty when the run ended: removed
    False
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError

LOCK_NAME = ".posbias.lock"
"""The lock file of an output folder (hidden: folder digests and listings skip it)."""
UNREADABLE_STALE_S = 60.0
"""An unreadable lock (its writer died between creating and filling it) older than this is
stale."""


def lock_name(part: str) -> str:
    """The lock file of one share of a folder's work (``0/2`` → ``.posbias-0-2.lock``)."""
    return f".posbias-{''.join(c if c.isalnum() else '-' for c in part)}.lock"


def is_lock_file(name: str) -> bool:
    """Whether a file name is a lock of :func:`output_lock` (folder checks skip them)."""
    return name == LOCK_NAME or (name.startswith(".posbias-") and name.endswith(".lock"))


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (another user's process counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def read_holder(lock: Path) -> dict[str, Any] | None:
    """The holder recorded in ``lock`` (``pid``, ``host``, ``command``, ``started``), or
    ``None`` when the file is missing or not (yet) readable."""
    try:
        holder = json.loads(lock.read_text())
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def is_stale(lock: Path) -> bool:
    """Whether ``lock`` is left by a run that is gone: its process no longer exists on this
    host, or the file stayed unreadable for :data:`UNREADABLE_STALE_S`."""
    holder = read_holder(lock)
    if holder is None:
        try:
            return time.time() - lock.stat().st_mtime > UNREADABLE_STALE_S
        except FileNotFoundError:
            return True
    if holder.get("host") != socket.gethostname():
        return False  # another node's process: cannot be checked from here
    pid = holder.get("pid")
    return not isinstance(pid, int) or not process_alive(pid)


def _acquire(lock: Path, holder: dict[str, Any]) -> None:
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if is_stale(lock):
                lock.unlink(missing_ok=True)
                continue
            other = read_holder(lock) or {}
            raise InputError(
                f"{lock.parent} is in use by {other.get('command', 'another run')} "
                f"(pid {other.get('pid', '?')} on {other.get('host', '?')} since "
                f"{other.get('started', '?')}): wait for it to finish, or delete {lock} if that "
                "run is gone"
            ) from None
        with os.fdopen(fd, "w") as handle:
            json.dump(holder, handle)
        return
    raise InputError(f"{lock}: could not take the lock (another run keeps taking it)")


@contextlib.contextmanager
def output_lock(folder: str | Path, *, command: str, part: str | None = None) -> Iterator[Path]:
    """Hold ``<folder>/.posbias.lock`` for the block (see the module docstring); yields the
    lock's path. ``command`` names the holder in a refused run's message. ``part``: a share of
    the folder's work that runs alongside the others by design (a study's ``--shard 0/2``): its
    own lock, ``.posbias-<part>.lock``.

    Example:
        >>> import tempfile
        >>> out = tempfile.mkdtemp()
        >>> with output_lock(out, command="a", part="0/2"):
        ...     with output_lock(out, command="b", part="1/2"):
        ...         print(sorted(p.name for p in Path(out).iterdir()))
        ['.posbias-0-2.lock', '.posbias-1-2.lock']
    """
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise InputError(f"{target} exists and is a file, not an output folder")
    created = not target.exists()
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(
            f"output folder {str(folder)!r} is not writable: {err.strerror or err}"
        ) from None
    lock = target / (LOCK_NAME if part is None else lock_name(part))
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": command,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    try:
        _acquire(lock, holder)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                target.rmdir()
        raise
    try:
        yield lock
    finally:
        if read_holder(lock) == holder:
            lock.unlink(missing_ok=True)
        if created:
            with contextlib.suppress(OSError):
                target.rmdir()  # only if the run wrote nothing
