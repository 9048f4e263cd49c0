"""The evaluation protocol of each task of a study: its scoring, its buckets, its bases.

An entry of a spec's ``tasks:`` is a registered task name or a task folder (scored as
``posbias evaluate`` scores it by default, on every base), or a mapping that pins the protocol::

    tasks:
      - SQuAD-PosQ                               # pytrec_eval, the task's [lo, hi) buckets
      - {task: SQuAD-PosQ-Tiny, scoring: zeng2025}          # Z25's nDCG, inclusive buckets
      - {task: tasks/posir-yhp26, buckets: posir20,          # PosIR's 20 bins, three bases
         bases: [modernbert-base, modernbert-large, qwen3-0.6b]}

=============  ============================================================================
``task``       a registered task name or a task folder. A folder holding no ``task.json`` but
               sub-folders that do (one ``posbias benchmark build posir --domains D`` build per
               PosIR domain) is one task per sub-folder: PosIR scores each domain on its own
               corpus. A folder built from several domains at once is one merged task.
``scoring``    ``pytrec_eval`` (default: graded nDCG@10 of the top-k, as ``posbias evaluate``)
               or ``zeng2025`` (Z25's reference code: binary nDCG of the top-100, ties
               averaged); ``default`` and ``posir`` are ``posbias evaluate --scoring``'s names
               (``posir`` = ``pytrec_eval`` on ``posir20`` buckets).
``buckets``    ``task`` (the folder's own buckets, ``[lo, hi)``; the default of
               ``pytrec_eval``), ``inclusive`` (the folder's edges closed on both sides, a
               boundary value in both buckets, as Z25's script; the default and only scheme of
               ``zeng2025``) or ``posir20`` (PosIR's 20 relative bins of the evidence centre).
``bases``      the bases of the spec this task runs on (default: all of them).
=============  ============================================================================

Each (scoring, buckets) pair is one protocol of ``posbias evaluate --scoring``
(:data:`PROTOCOLS`); a pair that is none is refused in one line, as is an unknown scoring, an
unknown key and a base the spec does not train.

Example:
    >>> entry = parse_task_entry({"task": "SQuAD-PosQ", "scoring": "zeng2025"})
    >>> entry.scoring, entry.buckets, entry.evaluate_scoring, entry.runs_on("bert-base")
    ('zeng2025', 'inclusive', 'zeng2025', True)
    >>> parse_task_entry("FineWeb-PosQ").evaluate_scoring
    'default'
    >>> parse_task_entry({"task": "T", "scoring": "bm42"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: tasks: T: unknown scoring 'bm42' (pytrec_eval, zeng2025, ...)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError

SCORINGS: dict[str, tuple[str, str]] = {
    "pytrec_eval": ("pytrec_eval", "task"),
    "zeng2025": ("zeng2025", "inclusive"),
    "default": ("pytrec_eval", "task"),
    "posir": ("pytrec_eval", "posir20"),
}
"""Scoring name → (scoring, its default buckets); ``default``/``posir`` are the names of
``posbias evaluate --scoring``."""
BUCKET_SCHEMES: tuple[str, ...] = ("task", "inclusive", "posir20")
PROTOCOLS: dict[tuple[str, str], str] = {
    ("pytrec_eval", "task"): "default",
    ("pytrec_eval", "posir20"): "posir",
    ("zeng2025", "inclusive"): "zeng2025",
}
"""(scoring, buckets) → the ``posbias evaluate --scoring`` protocol that scores it."""
ENTRY_KEYS: tuple[str, ...] = ("task", "scoring", "buckets", "bases")


@dataclass(frozen=True)
class TaskEntry:
    """One entry of a spec's ``tasks``: a task and the protocol it is scored with."""

    task: str
    scoring: str = "pytrec_eval"
    buckets: str = "task"
    bases: tuple[str, ...] | None = None
    """The bases this task runs on (``None``: every base of the spec)."""

    @property
    def evaluate_scoring(self) -> str:
        """The ``posbias evaluate --scoring`` protocol of this entry."""
        return PROTOCOLS[(self.scoring, self.buckets)]

    def runs_on(self, base: str) -> bool:
        """Whether this task is evaluated on the models of ``base``."""
        return self.bases is None or base in self.bases

    def record(self) -> str | dict[str, Any]:
        """The entry as a spec writes it: the plain name when nothing is pinned."""
        if self.scoring == "pytrec_eval" and self.buckets == "task" and self.bases is None:
            return self.task
        out: dict[str, Any] = {"task": self.task, "scoring": self.scoring}
        out["buckets"] = self.buckets
        if self.bases is not None:
            out["bases"] = list(self.bases)
        return out


def parse_task_entry(entry: str | Path | Mapping[str, Any]) -> TaskEntry:
    """A :class:`TaskEntry` of a name, a folder or a mapping (one line on any mistake)."""
    if isinstance(entry, str | Path):
        return TaskEntry(str(entry))
    if not isinstance(entry, Mapping):
        raise InputError(
            f"tasks: an entry is a task name, a folder or a mapping with {', '.join(ENTRY_KEYS)}; "
            f"got {type(entry).__name__}"
        )
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown or "task" not in entry:
        problem = f"unknown key(s) {', '.join(unknown)}" if unknown else "no 'task' key"
        raise InputError(f"tasks: {dict(entry)}: {problem} (keys: {', '.join(ENTRY_KEYS)})")
    task = str(entry["task"])
    name = str(entry.get("scoring") or "pytrec_eval")
    if name not in SCORINGS:
        raise InputError(f"tasks: {task}: unknown scoring {name!r} ({', '.join(SCORINGS)})")
    scoring, default_buckets = SCORINGS[name]
    buckets = str(entry.get("buckets") or default_buckets)
    if buckets not in BUCKET_SCHEMES:
        raise InputError(
            f"tasks: {task}: unknown buckets {buckets!r} ({', '.join(BUCKET_SCHEMES)})"
        )
    if (scoring, buckets) not in PROTOCOLS:
        known = ", ".join(f"{s} with {b}" for s, b in PROTOCOLS)
        raise InputError(
            f"tasks: {task}: {scoring} scoring with {buckets} buckets is not a protocol "
            f"posbias evaluate has ({known})"
        )
    bases = entry.get("bases")
    if bases is not None:
        if isinstance(bases, str) or not isinstance(bases, Iterable):
            raise InputError(f"tasks: {task}: bases must be a list of the spec's bases")
        bases = tuple(str(b) for b in bases)
        if not bases:
            raise InputError(f"tasks: {task}: bases is empty (leave it out for every base)")
    return TaskEntry(task, scoring, buckets, bases)


def task_entries(tasks: Sequence[Any], bases: Sequence[str]) -> list[TaskEntry]:
    """Every entry of a spec's ``tasks``, checked against its ``bases``: a task's base that
    the spec does not train is one line.

    Example:
        >>> task_entries([{"task": "T", "bases": ["gpt2"]}], ["bert-base"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: tasks: T: base 'gpt2' is not one of the study's bases ...
    """
    entries = [parse_task_entry(t) for t in tasks]
    for entry in entries:
        for base in entry.bases or ():
            if base not in bases:
                raise InputError(
                    f"tasks: {entry.task}: base {base!r} is not one of the study's bases "
                    f"({', '.join(bases)})"
                )
    return entries


def expand_domains(entry: TaskEntry) -> list[TaskEntry]:
    """One entry per task sub-folder of a folder holding no ``task.json`` (a PosIR build with
    one folder per domain); the entry itself otherwise.

    Example:
        >>> expand_domains(TaskEntry("SQuAD-PosQ")) == [TaskEntry("SQuAD-PosQ")]
        True
    """
    from dataclasses import replace

    folder = Path(entry.task).expanduser()
    if not folder.is_dir() or (folder / "task.json").is_file():
        return [entry]
    parts = sorted(p for p in folder.iterdir() if (p / "task.json").is_file())
    if not parts:
        return [entry]
    return [replace(entry, task=str(p)) for p in parts]
