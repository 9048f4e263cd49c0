"""Progress reporting for long loops: a bar on a terminal, plain lines in a log.

Every long loop in hf-posbias goes through :func:`progress`. On an interactive terminal it is a
``tqdm`` bar; when stderr is not a terminal (a CI log, ``nohup``, a SLURM job) it prints one plain
line at most every ``interval`` seconds (and at the end) instead of the cursor-control sequences
a bar would fill the log file with. ``disable=True`` (the CLI's ``--no-progress``) silences both.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> total = 0
    >>> for x in progress(range(3), desc="demo", file=out, interval=0):
    ...     total += x
    >>> print(out.getvalue().splitlines()[-1].split(" [")[0])
    demo: 3/3 (100%)
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from typing import IO, Any, TypeVar

T = TypeVar("T")

LOG_INTERVAL_S = 30.0
"""Seconds between two progress lines when stderr is not a terminal."""

LOG_EVERY_PERCENT = 10.0
"""A progress line also each time another this many percent of a known total is done."""

MIN_RATE_SPAN_S = 0.01
"""A rate is shown only when measured over at least this many seconds of clock."""


@dataclass(eq=False)
class ProgressReporter:
    """What every progress reporter takes: its label and the three options of the convention.

    ``desc`` starts each line; ``disable`` (``--no-progress``) silences it; ``file`` is where the
    lines go (default stderr; a terminal gets a ``tqdm`` bar); ``interval`` is the most seconds
    between two plain lines in a log. :class:`LineProgress`, :class:`Heartbeat` and the counters
    of evaluation and training runs are reporters.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> reporter = ProgressReporter("encode", file=out, interval=0)
        >>> reporter.print_line("done")
        >>> bar = reporter.counter(total=2, unit="text")
        >>> bar.update(2); bar.close()
        >>> [line.split(" [")[0] for line in out.getvalue().splitlines()]
        ['encode: done', 'encode: 2/2 (100%)']
    """

    desc: str = ""
    _: KW_ONLY
    disable: bool = False
    file: IO[str] | None = None
    interval: float = LOG_INTERVAL_S

    def counter(self, *, total: int | None, unit: str, desc: str | None = None) -> Any:
        """A :func:`progress` counter with this reporter's options (label ``desc`` or its own)."""
        return progress(
            total=total,
            desc=self.desc if desc is None else desc,
            unit=unit,
            disable=self.disable,
            file=self.file,
            interval=self.interval,
        )

    def print_line(self, text: str) -> None:
        """Print ``desc: text`` where the lines go (flushed), whatever ``disable`` says."""
        print(f"{self.desc}: {text}", file=self.file or sys.stderr, flush=True)


@dataclass(eq=False)
class LineProgress(ProgressReporter):
    """A tqdm-compatible counter that prints plain ``desc: n/total (p%) [rate, eta]`` lines.

    A line every ``interval`` seconds and each time another ``every_percent`` of ``total`` is
    done (never a carriage return), then a last one at :meth:`close`. The ETA is the remaining
    count at the rate measured since the first :meth:`update` (so the set-up time before the
    first item, a model load or a first compiled step, does not inflate it).

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> bar = LineProgress(total=4, desc="steps", unit="step", file=out,
        ...                    interval=3600, every_percent=50)
        >>> for _ in range(4):
        ...     bar.update(1)
        >>> bar.set_postfix(loss="0.5")
        >>> bar.close()
        >>> for line in out.getvalue().splitlines():
        ...     print(line.split(" [")[0] + line.split("]")[-1])
        steps: 2/4 (50%)
        steps: 4/4 (100%)
        steps: 4/4 (100%) loss=0.5
    """

    iterable: Iterable[Any] | None = field(default=None, repr=False)
    desc: str = field(default="", kw_only=True)
    total: int | None = field(default=None, kw_only=True)
    unit: str = field(default="it", kw_only=True)
    every_percent: float = field(default=LOG_EVERY_PERCENT, kw_only=True)

    def __post_init__(self) -> None:
        if self.total is None and hasattr(self.iterable, "__len__"):
            self.total = len(self.iterable)  # type: ignore[arg-type]
        self.n = 0
        self._start = time.monotonic()
        self._last = self._start
        self._first: tuple[float, int] | None = None  # (time, count) of the first update
        self._next_percent = self.every_percent
        self._emitted: tuple[int, str] | None = None  # (count, postfix) of the last line
        self._closed = False
        self._postfix = ""

    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("LineProgress was created without an iterable")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        """Text appended to each line (tqdm's API)."""
        self._postfix = text

    def set_postfix(self, ordered_dict: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """``key=value`` pairs appended to each line (tqdm's API)."""
        items = {**(ordered_dict or {}), **kwargs}
        self._postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def update(self, n: int = 1) -> None:
        """Count ``n`` more items; print a line if ``interval`` seconds have passed or another
        ``every_percent`` of the total is done."""
        now = time.monotonic()
        self.n += n
        if self._first is None:
            self._first = (now, self.n)
        crossed = False
        if self.total and self.every_percent > 0:
            percent = 100 * self.n / self.total
            while percent >= self._next_percent:
                crossed = True
                self._next_percent += self.every_percent
        if not self.disable and (crossed or now - self._last >= self.interval):
            self._last = now
            self._emit(now)

    def close(self) -> None:
        """Print the final line once."""
        if self._closed:
            return
        self._closed = True
        if not self.disable and self._emitted != (self.n, self._postfix):
            self._emit(time.monotonic())

    def _emit(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self.n / elapsed
        measured_over = elapsed
        if self._first is not None and now > self._first[0] and self.n > self._first[1]:
            # Measured from the first update's time: a slow set-up is not a slow step.
            first_time, first_count = self._first
            rate = (self.n - first_count) / (now - first_time)
            measured_over = now - first_time
        # A count that arrives whole right after the counter starts (work done before it was
        # opened) gives a rate over microseconds of clock, not of work: none is shown then.
        speed = f"{rate:.3g} {self.unit}/s, " if measured_over >= MIN_RATE_SPAN_S else ""
        done = f"{self.n}"
        if self.total:
            done += f"/{self.total} ({100 * self.n / self.total:.0f}%)"
            if speed and rate > 0 and self.n < self.total:
                eta = _duration((self.total - self.n) / rate)
                done += f" [{speed}eta {eta}]"
            else:
                done += f" [{speed}{_duration(elapsed)}]"
        else:
            done += f" {self.unit} [{speed}{_duration(elapsed)}]"
        self._emitted = (self.n, self._postfix)
        self.print_line(f"{done} {self._postfix}" if self._postfix else done)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def is_interactive(stream: IO[str] | None = None) -> bool:
    """Whether ``stream`` (default stderr) is a terminal."""
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def progress(
    iterable: Iterable[T] | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    disable: bool = False,
    file: IO[str] | None = None,
    interval: float = LOG_INTERVAL_S,
) -> Any:
    """A progress reporter over ``iterable`` (or a manual one with ``update``/``close``).

    A ``tqdm`` bar when ``file`` (default stderr) is a terminal, otherwise a :class:`LineProgress`
    printing plain lines every ``interval`` seconds.
    """
    if is_interactive(file):
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, file=file)
    return LineProgress(
        iterable, total=total, desc=desc, unit=unit, disable=disable, file=file, interval=interval
    )


@dataclass(eq=False)
class Heartbeat(ProgressReporter):
    """Plain ``desc: still running (1m30s)`` lines every ``interval`` seconds while a block runs.

    For work whose loop lives inside a library (``mteb.evaluate`` encoding a corpus): the thread
    prints from outside, so no long verb is silent for more than ``interval`` seconds, and the
    closing line says how long it took. ``disable=True`` (``--no-progress``) prints nothing.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> with Heartbeat("demo", interval=0.01, file=out):
        ...     time.sleep(0.05)
        >>> lines = out.getvalue().splitlines()
        >>> lines[0].startswith("demo: still running"), lines[-1].startswith("demo: done in")
        (True, True)
    """

    desc: str = field()  # required: no default of the base's

    def __post_init__(self) -> None:
        import threading

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._start = time.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.print_line(f"still running ({_duration(time.monotonic() - self._start)})")

    def __enter__(self) -> Heartbeat:
        self._start = time.monotonic()
        if not self.disable:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.disable:
            return
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            self.print_line(f"done in {_duration(time.monotonic() - self._start)}")


LIBRARY_LOGGERS: tuple[str, ...] = (
    "transformers",
    "sentence_transformers",
    "datasets",
    "mteb",
    "bm25s",
    "huggingface_hub",
    "urllib3",
    "httpx",
)
"""The libraries whose log lines under WARNING are theirs to debug, not a run's news (``bm25s``
logs every index build at DEBUG; ``huggingface_hub`` and ``urllib3`` each offline retry)."""


def is_library_record(name: str) -> bool:
    """Whether a logger belongs to a library of :data:`LIBRARY_LOGGERS`.

    Example:
        >>> is_library_record("bm25s"), is_library_record("mteb.evaluate")
        (True, True)
        >>> is_library_record("hf_posbias.evaluation.runs.runner"), is_library_record("bm25")
        (False, False)
    """
    return any(name == lib or name.startswith(f"{lib}.") for lib in LIBRARY_LOGGERS)


class LibraryNotices(logging.Filter):
    """A handler filter that keeps the libraries' log lines under WARNING out (the command
    line's handler without ``-v``). A filter on the handler, not a logger level: ``bm25s`` sets
    its logger to DEBUG when it is imported, after any level set before.

    Example:
        >>> quiet = LibraryNotices()
        >>> quiet.filter(logging.makeLogRecord({"name": "bm25s", "levelno": logging.DEBUG}))
        False
        >>> quiet.filter(logging.makeLogRecord({"name": "hf_posbias.x", "levelno": logging.INFO}))
        True
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not is_library_record(record.name)


NOT_THIS_PACKAGE = r"(?!hf_posbias(\.|$))"
"""A ``warnings`` filter's module pattern matching every module but this package's."""


def _library_bars() -> list[tuple[Callable[[], bool], Callable[[], None], Callable[[], None]]]:
    """(is on, turn on, turn off) of the libraries' global progress bars: transformers' (the
    weights bar; it turns huggingface_hub's download bars with its own) and datasets' (its map
    bars, "Standardizing text corpus format")."""
    from datasets.utils.tqdm import (
        disable_progress_bars,
        enable_progress_bars,
        is_progress_bar_enabled,
    )
    from transformers.utils import logging as transformers_logging

    return [
        (
            transformers_logging.is_progress_bar_enabled,
            transformers_logging.enable_progress_bar,
            transformers_logging.disable_progress_bar,
        ),
        (is_progress_bar_enabled, enable_progress_bars, disable_progress_bars),
    ]


@contextlib.contextmanager
def quiet_libraries(quiet: bool = True) -> Iterator[None]:
    """Within the block the libraries draw no progress bar (transformers' weights bar,
    datasets' map bars, the Hub's download bars) and show no ``FutureWarning`` or
    ``DeprecationWarning`` raised in their code (mteb's notices of renamed
    sentence-transformers methods); both come back as they were after the block.
    ``quiet=False`` changes nothing (``show_progress=True``, ``posbias -v``). Loads
    transformers' and datasets' bar switches (a block runs a model: they load anyway).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     with quiet_libraries():
        ...         warnings.warn_explicit("renamed", FutureWarning, "m.py", 1, module="mteb.x")
        ...         warnings.warn_explicit("ours", FutureWarning, "x.py", 1, module="hf_posbias")
        >>> [str(w.message) for w in caught]
        ['ours']
    """
    if not quiet:
        yield
        return
    turned_off = []
    with warnings.catch_warnings():
        for category in (FutureWarning, DeprecationWarning):
            warnings.filterwarnings("ignore", category=category, module=NOT_THIS_PACKAGE)
        # Turning a library's bars back on where its environment variable keeps them off
        # (HF_HUB_DISABLE_PROGRESS_BARS=1 in a log) is refused with a warning: the variable wins.
        warnings.filterwarnings("ignore", message="Cannot (enable|disable) progress bars")
        # transformers' switch also flips huggingface_hub's global one, clearing the groups a
        # caller turned off: the hub's states are put back as they were, exactly.
        import huggingface_hub.utils.tqdm  # noqa: F401  (the module, not its tqdm class)

        hub_tqdm = sys.modules["huggingface_hub.utils.tqdm"]

        hub_states = dict(hub_tqdm.progress_bar_states)
        try:
            for is_on, turn_on, turn_off in _library_bars():
                if is_on():
                    turn_off()
                    turned_off.append(turn_on)
            yield
        finally:
            for turn_on in turned_off:
                turn_on()
            hub_tqdm.progress_bar_states.clear()
            hub_tqdm.progress_bar_states.update(hub_states)
