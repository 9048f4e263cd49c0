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
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any


class JsonRecord:
    """Mixin for dataclasses: :meth:`to_dict`, their JSON-serialisable form."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form: the fields in declaration order, nested dataclasses as
        dicts (:func:`dataclasses.asdict`)."""
        return asdict(self)
