"""One rule for every verb that writes: an output folder holds one run, named by its parameters.

Every ``posbias`` verb that writes claims its output folder through :func:`claim_output_folder`
before any heavy work, under the folder's lock (:func:`hf_posbias.locks.output_lock`); the
command line does it for each verb as its :class:`OutputFolder` declares
(:class:`hf_posbias.cli.common.Verb`):

- a new or empty folder becomes the run's;
- a folder holding a run of the same verb with the same parameters resumes it (a verb with
  resumable state) or says the result is already there (a finished run of a verb without one);
- a folder holding a run of another verb, or with other parameters, is refused in one line naming
  what differs (:func:`hf_posbias.shards.other_run_error`, the stages' refusal too), before
  anything is written; ``--overwrite`` replaces it. The old run stays, set aside in
  ``<out>/.posbias-replaced/``, until the new run finishes: a replacement that finishes leaves no
  file of the old run, one that fails or is interrupted leaves the old run as it was;
- a folder holding files of no run is refused, ``--overwrite`` or not: nothing removes what no
  ``posbias`` run wrote;
- a run that fails or is interrupted leaves its resumable state (what the verb says it keeps,
  named in the stop line) or nothing.

The record ``<out>/.posbias-run.json`` (hidden, like the lock: folder digests skip it) holds the
verb, its parameters, their fingerprint and whether the run finished. The parameters
(:func:`run_parameters`) are the verb's settings, less those that change how a run goes but not
what it writes (:data:`RUN_CONTROL_FLAGS`), plus a digest of every input file or folder they
name: a run whose input changed on disk is a run with other parameters.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp()) / "cmp"
    >>> with claim_output_folder(out, {"seed": 1}, command="posbias compare") as claim:
    ...     _ = (out / "compare.md").write_text("B vs A")
    >>> claim.state, read_run_record(out)["finished"]
    ('new', True)
    >>> with claim_output_folder(out, {"seed": 1}, command="posbias compare") as claim:
    ...     pass
    >>> claim.state  # the same parameters, finished: nothing to do
    'finished'
    >>> with claim_output_folder(out, {"seed": 2}, command="posbias compare"):
    ...     pass  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.shards.OtherRunError: .../cmp holds a run with other parameters (seed: 1 → 2); ...
    >>> with claim_output_folder(out, {"seed": 2}, command="posbias compare", overwrite=True):
    ...     _ = (out / "compare.json").write_text("{}")
    >>> sorted(p.name for p in out.iterdir())  # only the new run's files
    ['.posbias-run.json', 'compare.json']
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.hashing import folder_digest
from hf_posbias.locks import is_lock_file, output_lock
from hf_posbias.settings import flag_of, settings_record
from hf_posbias.shards import (
    OtherRunError,
    differences,
    fingerprint,
    other_run_error,
    write_json,
)

RUN_RECORD = ".posbias-run.json"
"""The record of the run an output folder holds (hidden: folder digests and listings skip it)."""
REPLACED = ".posbias-replaced"
"""Where the run being replaced waits (inside its folder) until the replacing run finishes."""

RUN_CONTROL_FLAGS: frozenset[str] = frozenset(
    {
        "--progress",
        "--overwrite",
        "--dry-run",
        "--device",
        "--batch-size",
        "--endpoint-batch-size",
        "--corpus-chunk-size",
        "--max-concurrency",
        "--concurrency",
        "--max-retries",
        "--base-url",
        "--api-key-env",
        "--token",
        "--hub-token",
        "--push-to-hub",
        "--trust-remote-code",
        "--mini-batch-size",
        "--mini-batch-tokens",
        "--gradient-checkpointing",
        "--attn-implementation",
        "--device-memory-gib",
        "--logging-steps",
        "--shard-size",
        "--executor",
        "--ray-address",
        "--gpus-per-task",
        "--cpus-per-task",
        "--retries",
        "--shard",
        "--in-process",
        "--num-processes",
        "--plan-for",
        "--throughput",
    }
)
"""Flags that change how a run goes (speed, memory, where it runs, what it prints, secrets) but
not what it writes: never pinned, so a run resumes under other values of them. A flag means the
same in every verb (:mod:`hf_posbias.shared_helps`), so the list is by flag."""
RUN_CONTROL_PREFIXES: tuple[str, ...] = ("--slurm-",)
"""Families of run-control flags (the Slurm executor's)."""

INPUTS = "inputs"
"""The parameter holding a digest of each input a run's settings name, by setting and path."""
INPUT_SAMPLE_BYTES = 1 << 16
"""An input file larger than twice this is digested by its size and first and last bytes
(:func:`hf_posbias.hashing.folder_digest`): model weights and corpora stay quick to check."""


def is_run_control(flag: str) -> bool:
    """Whether a flag changes how a run goes, not what it writes (:data:`RUN_CONTROL_FLAGS`).

    Example:
        >>> is_run_control("--progress"), is_run_control("--slurm-time"), is_run_control("--seed")
        (True, True, False)
    """
    return flag in RUN_CONTROL_FLAGS or flag.startswith(RUN_CONTROL_PREFIXES)


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _as_path(item: Any) -> Path | None:
    """The existing file or folder a setting's value names, if it names one."""
    if not isinstance(item, str | Path) or not str(item) or "\n" in str(item):
        return None
    path = Path(item).expanduser()
    try:
        return path.resolve() if path.exists() else None
    except OSError:  # a name too long to be a path
        return None


def input_digest(path: str | Path, out: str | Path | None = None) -> str:
    """A short content digest of an input file or folder (``out``, where it lies inside a
    folder input, left out).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "a.txt").write_text("one")
        >>> before = input_digest(folder)
        >>> _ = (folder / "a.txt").write_text("two")
        >>> input_digest(folder) == before
        False
    """
    path = Path(path)
    if path.is_dir():
        return folder_digest(path, sample_bytes=INPUT_SAMPLE_BYTES, exclude=out)[:16]
    return folder_digest(path.parent, names=[path.name], sample_bytes=INPUT_SAMPLE_BYTES)[:16]


def run_parameters(settings: Any, *, out_field: str = "out", grows: Sequence[str] = ()) -> dict:
    """What a verb's run is made of: its settings, less the output folder, the run controls
    (:func:`is_run_control`) and ``grows`` (settings a rerun may change to add to the run, such
    as the remedies of ``posbias analyze remedies``), plus ``inputs``: a digest of every input
    file or folder the settings name. An input inside the output folder is refused (replacing
    the folder would take it away).

    Example:
        >>> from dataclasses import dataclass
        >>> from hf_posbias.settings import setting
        >>> @dataclass
        ... class Compare:
        ...     run_a: str = setting("A", default="/nonexistent/a")
        ...     out: str = setting("out", default="cmp")
        ...     seed: int = setting("seed", default=0)
        ...     progress: bool = setting("bars", default=True)
        >>> run_parameters(Compare())
        {'run_a': '/nonexistent/a', 'seed': 0}
    """
    out = Path(getattr(settings, out_field))
    params: dict[str, Any] = {}
    inputs: dict[str, dict[str, str]] = {}
    for name, value in settings_record(settings).items():
        if name == out_field or name in grows or is_run_control(flag_of(settings, name)):
            continue
        items = value if isinstance(value, list | tuple) else [value]
        paths = [_as_path(item) for item in items]
        # A path is recorded as the file it names (``data/`` and ``./data`` are one input).
        named = [item if path is None else str(path) for item, path in zip(items, paths)]
        params[name] = named if isinstance(value, list | tuple) else named[0]
        for path in filter(None, paths):
            if _inside(path, out):
                raise InputError(
                    f"{flag_of(settings, name)} {path} lies inside {flag_of(settings, out_field)} "
                    f"{out}: choose an output folder apart from the inputs"
                )
            inputs.setdefault(name, {})[str(path)] = input_digest(path, out)
    if inputs:
        params[INPUTS] = inputs
    return params


def parameter_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """What differs between two runs' parameters, each once: a setting that names another
    input says so; one that names the same input whose content changed says that.

    Example:
        >>> old = {"input": "a.jsonl", "inputs": {"input": {"a.jsonl": "1f"}}}
        >>> parameter_changes(old, {"input": "b.jsonl", "inputs": {"input": {"b.jsonl": "2e"}}})
        ['input: "a.jsonl" → "b.jsonl"']
        >>> parameter_changes(old, {"input": "a.jsonl", "inputs": {"input": {"a.jsonl": "2e"}}})
        ['a.jsonl: its content changed since that run']
    """
    old, new = dict(old or {}), dict(new or {})
    old_inputs, new_inputs = old.pop(INPUTS, {}), new.pop(INPUTS, {})
    changes = differences(old, new)
    for name in sorted(set(old_inputs) | set(new_inputs)):
        if old.get(name) != new.get(name):
            continue  # another input altogether: said above
        before, after = old_inputs.get(name, {}), new_inputs.get(name, {})
        changes += [
            f"{path}: its content changed since that run"
            for path in sorted(set(before) | set(after))
            if before.get(path) != after.get(path)
        ]
    return changes


@dataclass(frozen=True)
class OutputFolder:
    """How a verb writes its output: which setting names it and what the rule of the module
    docstring needs to know about the verb (the command line claims the folder with it,
    :class:`hf_posbias.cli.common.Verb`).

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Sample:
        ...     out: str = "o"
        ...     seed: int = 3
        ...     remedies: tuple = ("maxp",)
        >>> OutputFolder(grows=("remedies",)).params(Sample(), None)
        {'seed': 3}
        >>> OutputFolder(stages=True).params(Sample(), None) is None
        True
    """

    field: str = "out"
    """The setting that names the output folder (or file); unset (``None``): nothing written."""
    keeps: str | None = None
    """What an unfinished run keeps to resume, as the stop line says it ("its finished
    shards"); ``None``: nothing (a failed run leaves nothing, a finished one is already there)."""
    grows: tuple[str, ...] = ()
    """Settings a rerun may change to add to the run (``posbias analyze remedies --remedies``):
    not pinned."""
    pins: Callable[[Any, Any], dict[str, Any]] | None = None
    """``pins(settings, args)``: the parameters, where they are not the settings
    (:func:`run_parameters`): a study's are its spec's."""
    stages: bool = False
    """The verb's stages pin their own parameters (``posbias data build``: a change of δ
    reruns only the stages after it); the folder's record checks only the verb."""
    file: bool = False
    """The output is one file (a PNG, a JSON of results), not a folder."""
    claim: bool = True
    """``False``: the verb writes into a folder other verbs share (the data stages' work
    folder, whose stages are pinned one by one); only what it keeps is declared."""
    part: str | None = None
    """The setting naming this run's share of a folder shared by design (a study's
    ``--shard``): its own lock."""

    def params(self, settings: Any, args: Any) -> dict[str, Any] | None:
        """What the run is made of (``None``: its stages pin it)."""
        if self.stages:
            return None
        if self.pins is not None:
            return self.pins(settings, args)
        return run_parameters(settings, out_field=self.field, grows=self.grows)


def read_run_record(out: str | Path) -> dict[str, Any] | None:
    """The record of the run ``out`` holds (``None``: no run of this package).

    Example:
        >>> read_run_record("/nonexistent") is None
        True
    """
    from hf_posbias.rows.readers import read_json

    path = _Place(Path(out), file=False).record
    return read_json(path) if path.is_file() else None


@dataclass
class _Place:
    """Where a run's files, record and set-aside old run live: in its folder, or beside its
    file (``file``: the output is one file, e.g. a PNG)."""

    target: Path
    file: bool

    @property
    def root(self) -> Path:
        return self.target.parent if self.file else self.target

    @property
    def record(self) -> Path:
        return self.root / (f".{self.target.name}{RUN_RECORD}" if self.file else RUN_RECORD)

    @property
    def aside(self) -> Path:
        return self.root / (f".{self.target.name}{REPLACED}" if self.file else REPLACED)

    def entries(self, hidden: bool = True) -> list[Path]:
        """What the run wrote (``hidden``: temporary files too), lock, record and aside apart."""
        if self.file:
            return [self.target] if self.target.exists() else []
        if not self.root.is_dir():
            return []
        skip = {RUN_RECORD, REPLACED}
        return sorted(
            p
            for p in self.root.iterdir()
            if p.name not in skip
            and not is_lock_file(p.name)
            and (hidden or not p.name.startswith("."))
        )

    def clear(self) -> None:
        """Remove what the run wrote and its record."""
        for path in self.entries():
            _remove(path)
        self.record.unlink(missing_ok=True)

    def set_aside(self) -> None:
        """Move the run (its files and record) into :attr:`aside`."""
        self.aside.mkdir()
        for path in [*self.entries(), self.record]:
            if path.exists():
                os.rename(path, self.aside / path.name)

    def bring_back(self) -> None:
        """Put the run set aside back in place of what is there now."""
        self.clear()
        for path in self.aside.iterdir():
            os.rename(path, self.root / path.name)
        self.aside.rmdir()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


@dataclass
class Claim:
    """A verb's hold on its output folder (:func:`claim_output_folder`).

    ``state``: ``new`` (an empty or new folder), ``resumed`` (an unfinished run with the same
    parameters: a resumable verb goes on from its state, another starts again), ``finished``
    (this run is already there: nothing to do), ``replacing`` (a run with other parameters,
    set aside until this one finishes)."""

    folder: Path
    command: str
    state: str
    record: dict[str, Any] = field(default_factory=dict)
    place: _Place | None = None

    def finish(self) -> None:
        """Record the run as finished now: a later step of the verb that fails (an upload)
        keeps the run's output."""
        if self.place is not None and not self.record.get("finished"):
            self.record["finished"] = True
            write_json(self.place.record, self.record)

    def already_there(self) -> str:
        """The line that says a finished run with the same parameters is already there."""
        return (
            f"{self.folder} already holds this run of {self.command}, finished (same parameters "
            "and inputs): nothing to do"
        )


_ACTIVE: list[Claim] = []


def finish_current_run() -> None:
    """Mark the run of the innermost :func:`claim_output_folder` as finished (see
    :meth:`Claim.finish`); nothing outside a claim.

    Example:
        >>> finish_current_run()  # no claim: nothing to mark
    """
    if _ACTIVE:
        _ACTIVE[-1].finish()


@dataclass(frozen=True)
class StopNote:
    """What a run that raised left in its output folder, for the line the command line prints
    when it stops (:func:`stop_note`)."""

    text: str
    """``runs/x keeps its finished shards; the same command resumes from there``, ``nothing was
    kept in runs/x``, …"""
    kept: bool
    """Whether the folder holds something of the run (state to resume, a previous run)."""


def kept_line(out: str | Path, keeps: str) -> str:
    """What an unfinished run left to resume from, as its last line says it.

    Example:
        >>> kept_line("runs/x", "its finished shards")
        'runs/x keeps its finished shards; the same command resumes from there'
    """
    return f"{out} keeps {keeps}; the same command resumes from there"


def stop_note(err: BaseException) -> StopNote | None:
    """What the run that ended with ``err`` left (set by :func:`claim_output_folder` and the
    command line; ``None``: it claimed no folder).

    Example:
        >>> err = KeyboardInterrupt()
        >>> stop_note(err) is None
        True
        >>> set_stop_note(err, "nothing was kept in o", kept=False).text
        'nothing was kept in o'
    """
    return getattr(err, "posbias_stop_note", None)


def set_stop_note(err: BaseException, text: str, *, kept: bool) -> StopNote:
    """Attach what a run left to the exception that ends it (:func:`stop_note` reads it)."""
    note = StopNote(text, kept)
    err.posbias_stop_note = note  # type: ignore[attr-defined]
    return note


def _decide(
    place: _Place, found: dict | None, wanted: dict, *, overwrite: bool, resumable: bool
) -> str:
    out = place.target
    if found is None:
        foreign = place.entries(hidden=False)
        if foreign:
            names = ", ".join(p.name for p in foreign[:3]) + (", …" if len(foreign) > 3 else "")
            what = (
                "is a file of no posbias run"
                if place.file
                else f"holds files of no posbias run ({names})"
            )
            raise InputError(f"{out} {what}: choose a new output, or remove it first")
        return "new"
    if found.get("command") != wanted["command"]:
        if not overwrite:
            raise other_run_error(out, [f"{found.get('command')} → {wanted['command']}"])
        return "replacing"
    if wanted["params"] is not None and found.get("fingerprint") != wanted["fingerprint"]:
        if not overwrite:
            raise other_run_error(out, parameter_changes(found.get("params"), wanted["params"]))
        return "replacing"
    if found.get("finished") and not resumable and wanted["params"] is not None:
        return "finished"
    return "resumed"


@contextlib.contextmanager
def claim_output_folder(
    out: str | Path,
    params: dict[str, Any] | None,
    *,
    command: str,
    overwrite: bool = False,
    keeps: str | None = None,
    part: str | None = None,
    file: bool = False,
) -> Iterator[Claim]:
    """Claim ``out`` for one run of ``command`` (the rule in the module docstring).

    Args:
        out: the output folder (``file``: the output file).
        params: what the run is made of (:func:`run_parameters`); ``None``: the verb's stages
            pin their own parameters (``posbias data build``), and only the verb is checked.
        command: the verb (``posbias evaluate``), named in refusals and the record.
        overwrite: replace a run of another verb or with other parameters instead of refusing.
        keeps: what an unfinished run of the verb keeps to resume ("its finished shards"); a
            run with the same parameters then goes on from it. ``None``: the verb keeps nothing;
            a failed run leaves nothing, and a finished one is "already there".
        part: a share of the folder's work that runs beside the others (a study's ``--shard``):
            its own lock (:func:`hf_posbias.locks.output_lock`).
        file: ``out`` is one file; its record and lock lie beside it.

    Yields:
        The :class:`Claim`. ``state == "finished"``: the run is already there; the caller does
        nothing (:meth:`Claim.already_there`).

    A run that raises (an error, Ctrl-C) leaves its resumable state (``keeps``), the run it was
    replacing, or nothing; the exception carries what it left (:func:`stop_note`).
    """
    place = _Place(Path(out), file)
    lock_part = part if not file else f"{place.target.name}-{part or 'file'}"
    held_only_leftovers = False
    try:
        with output_lock(place.root, command=command, part=lock_part):
            if place.aside.exists():  # a replacement killed before it finished: the old run back
                place.bring_back()
            found = _read(place.record)
            wanted = {"command": command, "params": params}
            wanted["fingerprint"] = fingerprint(wanted)
            state = _decide(place, found, wanted, overwrite=overwrite, resumable=keeps is not None)
            claim = Claim(place.target, command, state, dict(found or {}))
            if state == "finished":
                yield claim
                return
            if state == "replacing":
                place.set_aside()
            elif state == "resumed" and keeps is None:
                place.clear()  # an unfinished run that keeps nothing: start again
            claim.place = place
            if state == "resumed" and keeps is not None:
                # A run resumed keeps its record as it is until it finishes: a rerun that finds
                # everything done, or that a stage refuses, touches nothing.
                if not claim.record.get("finished"):
                    claim.record = {**wanted, "finished": False}
            else:
                claim.record = {**wanted, "finished": False}
                write_json(place.record, claim.record)
            _ACTIVE.append(claim)
            try:
                yield claim
            except BaseException as err:
                text, kept = _leave(place, state, keeps, claim)
                # A stage that refused other parameters changed nothing: no note on its line.
                set_stop_note(err, text, kept=kept and not isinstance(err, OtherRunError))
                held_only_leftovers = state == "resumed" and not place.file and not place.entries()
                raise
            finally:
                _ACTIVE.remove(claim)
            if params is None:  # its stages decided what to redo: the record is this run's
                claim.record = {**wanted, "finished": False}
            claim.finish()
            if place.aside.exists():
                shutil.rmtree(place.aside)
    finally:
        if held_only_leftovers:
            # The folder held nothing but this unfinished run: it goes with it (the lock
            # removes a folder it made itself).
            with contextlib.suppress(OSError):
                place.root.rmdir()


def _read(record: Path) -> dict[str, Any] | None:
    from hf_posbias.rows.readers import read_json

    return read_json(record) if record.is_file() else None


def _leave(place: _Place, state: str, keeps: str | None, claim: Claim) -> tuple[str, bool]:
    """Tidy the folder of a run that raised; what it left and whether it kept something."""
    out = place.target
    if claim.record.get("finished") and claim.record.get("params") is not None:
        return f"{out} holds the run's finished output", True
    if state == "replacing":
        place.bring_back()
        return f"{out} holds its previous run again", True
    if keeps is not None and place.entries(hidden=False):
        return kept_line(out, keeps), True
    place.clear()
    return f"nothing was kept in {out}", False
