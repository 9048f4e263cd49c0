"""The ``posbias`` command: a few verbs, grouped by job in ``posbias --help`` (:data:`JOBS`).

Each area registers its verbs from its own module (``hf_posbias.cli.<area>``) through a
``register(subparsers)`` function; handlers import heavy libraries lazily so that
``posbias --help`` stays instant. A :class:`~hf_posbias.errors.PosbiasError` raised anywhere
becomes a one-line ``error: …`` on stderr and exit status 2 — never a traceback.

Example:
    >>> from hf_posbias.cli import build_parser
    >>> build_parser().prog
    'posbias'
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from hf_posbias.cli.common import VerbParser, list_verbs
from hf_posbias.errors import DISK_ERRNOS, PosbiasError, disk_error_line
from hf_posbias.progress import NOT_THIS_PACKAGE, LibraryNotices
from hf_posbias.settings import naming_flags
from hf_posbias.version import __version__

# Order = order in `posbias --help`. A module that is missing (area not built yet) is skipped.
COMMAND_MODULES: tuple[str, ...] = (
    "hf_posbias.cli.data",
    "hf_posbias.cli.train",
    "hf_posbias.cli.benchmark",
    "hf_posbias.cli.evaluate",
    "hf_posbias.cli.compare",
    "hf_posbias.cli.leaderboard",
    "hf_posbias.cli.analyze",
    "hf_posbias.cli.study",
    "hf_posbias.cli.demo",
    "hf_posbias.cli.listwise",
    "hf_posbias.cli.listing",
)


JOBS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("data", ("data", "benchmark")),
    ("training", ("train",)),
    ("evaluation", ("evaluate", "compare", "leaderboard")),
    ("analysis", ("analyze",)),
    ("study", ("study", "demo")),
    ("listwise", ("listwise",)),
    ("extension points", ("list",)),
)
"""The job headings of ``posbias --help`` and the verbs under each, in order. A verb a plugin
or a later module adds without a heading here is listed under "other"."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered sub-command."""
    parser = VerbParser(
        prog="posbias",
        description="Measure and control position bias in dense retrievers.",
    )
    parser.add_argument("--version", action="version", version=f"hf-posbias {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name == module_name:
                continue
            raise
        module.register(subparsers)
    # The verbs are listed by job, not in argparse's one flat block.
    list_verbs(parser, subparsers, JOBS, rest="other")
    return parser


def _quiet_libraries() -> None:
    # Libraries print load reports and advisory warnings on every call; users want the stage
    # reports. -v restores them.
    from hf_posbias.progress import is_interactive

    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if not is_interactive():
        # Carriage-return bars (tqdm in mteb, sentence-transformers, huggingface_hub) turn a log
        # file into one long line; hf_posbias.progress prints plain lines there instead.
        os.environ.setdefault("TQDM_DISABLE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # The libraries' notices (mteb's renamed-method FutureWarnings …) go, this package's stay:
    # from 0.2.0 on a deprecated name warns (warning_line prints it as one line).
    for category in (FutureWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category, module=NOT_THIS_PACKAGE)
    for name in ("transformers", "sentence_transformers", "datasets", "mteb", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # huggingface_hub logs each offline retry through a handler of its own, which the root
    # handler's LIBRARY_NOTICES does not filter (bm25s's DEBUG lines it does: bm25s resets its
    # logger's level on import, so a level set here would not hold).
    for name in ("huggingface_hub", "urllib3"):
        logging.getLogger(name).setLevel(logging.WARNING)


LIBRARY_NOTICES = LibraryNotices()
"""The root handler's filter without ``-v``: the libraries' log lines under WARNING stay out."""
PYTHON_WARNING_FORMAT = warnings.formatwarning
"""Python's own format of a warning (file, line, category, source line): a library's, with -v."""
PACKAGE_DIR = str(Path(__file__).resolve().parents[1])


def warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
    *,
    verbose: bool = False,
) -> str:
    """How the command line shows a warning (``warnings.formatwarning``, set once in
    :func:`main`): this package's as one line, ``warning: …``, without a file path; a library's
    only with ``-v``, in Python's own format (an empty text is nothing on stderr).

    Example:
        >>> warning_line("window 25 is larger", UserWarning, f"{PACKAGE_DIR}/rerankers/w.py", 9)
        'warning: window 25 is larger\\n'
        >>> warning_line("renamed", FutureWarning, "/site-packages/mteb/m.py", 9)
        ''
    """
    ours = category.__module__.startswith("hf_posbias") or filename.startswith(PACKAGE_DIR)
    if ours:
        return f"warning: {message}\n"
    return PYTHON_WARNING_FORMAT(message, category, filename, lineno, line) if verbose else ""


def with_stop_note(line: str, err: BaseException) -> str:
    """An error line, with what the failed run kept in its output folder when it kept something
    (:func:`hf_posbias.output_folders.stop_note`): the last line names the state to resume from.

    Example:
        >>> from hf_posbias.output_folders import set_stop_note
        >>> err = ValueError("x")
        >>> _ = set_stop_note(err, "o keeps its finished shards: rerun to resume", kept=True)
        >>> with_stop_note("bad model", err)
        'bad model (o keeps its finished shards: rerun to resume)'
    """
    from hf_posbias.output_folders import stop_note

    note = stop_note(err)
    return f"{line} ({note.text})" if note is not None and note.kept else line


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``posbias`` console script; returns the exit status. A setting's
    mistake names its flag (:func:`hf_posbias.settings.naming_flags`), where a Python caller
    of the same check reads its keyword."""
    with naming_flags():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        # A broken plugin (hf_posbias.plugins) is found while the verbs and their choices are
        # built or listed: one line too.
        parser = build_parser()
        args = parser.parse_args(argv)
    except PosbiasError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # huggingface_hub prints through a handler of its own AND propagates to the root handler
    # configured above: every offline retry warning would appear twice.
    logging.getLogger("huggingface_hub").propagate = False
    for handler in logging.getLogger().handlers:
        handler.removeFilter(LIBRARY_NOTICES)
        if not args.verbose:
            handler.addFilter(LIBRARY_NOTICES)
    warnings.formatwarning = functools.partial(warning_line, verbose=args.verbose)
    if not args.verbose:
        _quiet_libraries()
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    from hf_posbias.output_folders import stop_note

    try:
        return int(args.func(args) or 0)
    except PosbiasError as err:
        print(f"error: {with_stop_note(str(err), err)}", file=sys.stderr)
        return 2
    except OSError as err:
        if err.errno not in DISK_ERRNOS:
            raise
        line = disk_error_line(err, getattr(args, "out", None))
        print(f"error: {with_stop_note(line, err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        # What the run keeps, as its output folder's claim left it; a verb that claims none
        # writes nothing (hf_posbias.cli.common.Verb.output).
        note = stop_note(err)
        print(f"interrupted: {note.text if note else 'nothing was written'}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `posbias … | head`: the reader left; no traceback, and no second error at exit
        # when Python flushes stdout into the closed pipe.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces stdout until exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
