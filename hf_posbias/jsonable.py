"""Records written as JSON: the one ``to_dict`` of the package's result and report dataclasses.

A dataclass that is written to a JSON file or handed to one (stage reports, summaries,
counters, statistics) inherits :class:`JsonRecord` instead of spelling out its own
``to_dict``. Its JSON keys are its fields in declaration order, nested dataclasses become
dicts (:func:`dataclasses.asdict`), so the field order is the file's key order. A record whose
JSON differs from its fields (renamed keys, derived rates) overrides ``to_dict``.

Example:
    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Report(JsonRecord):
    ...     kept: int = 0
    ...     notes: list[str] = field(default_factory=list)
    >>> Report(kept=3).to_dict()
    {'kept': 3, 'notes': []}
    >>> Report.from_dict({"kept": 3, "written_by": "a later release"})
    Report(kept=3, notes=[])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any, TypeVar

R = TypeVar("R", bound="JsonRecord")


class JsonRecord:
    """Mixin for dataclasses: :meth:`to_dict`, their JSON-serialisable form, and
    :meth:`from_dict`, its inverse for a record of plain fields."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form: the fields in declaration order, nested dataclasses as
        dicts (:func:`dataclasses.asdict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record a :meth:`to_dict` dict (e.g. a JSON file read back) describes; keys it
        does not know are ignored, so a file written by a later release still reads. A record
        with nested dataclasses overrides it."""
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in known})
