"""JSON records: one ``to_dict`` (hf_posbias.jsonable.JsonRecord), keys in field order."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

import hf_posbias
from hf_posbias.jsonable import JsonRecord

PACKAGE = Path(hf_posbias.__file__).parent


@dataclass
class _Inner(JsonRecord):
    low: float
    high: float


@dataclass(frozen=True)
class _Outer(JsonRecord):
    name: str
    inner: _Inner
    counts: dict[str, int] = field(default_factory=dict)


def test_to_dict_keeps_field_order_and_nests_records():
    record = _Outer("m", _Inner(0.1, 0.9), {"b": 2, "a": 1})
    assert json.dumps(record.to_dict()) == (
        '{"name": "m", "inner": {"low": 0.1, "high": 0.9}, "counts": {"b": 2, "a": 1}}'
    )


def test_no_module_spells_out_the_asdict_to_dict():
    """A ``to_dict`` that only returns ``asdict(self)`` is JsonRecord's: inherit it instead."""
    copies = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.FunctionDef) and node.name == "to_dict"):
                continue
            body = [s for s in node.body if not isinstance(s, ast.Expr)]  # docstring
            if (
                path.name != "jsonable.py"
                and len(body) == 1
                and isinstance(body[0], ast.Return)
                and "asdict(self)" in ast.unparse(body[0])
            ):
                copies.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert copies == []
