"""Render dataset and model cards from the Jinja templates in dataset_cards/ and model_cards/.

Templates are filled only with measured statistics passed in by the caller; an undefined
variable is an error (``StrictUndefined``), so a card can never ship with a silent blank.

Example:
    >>> from hf_posbias.cards.templates import available_templates
    >>> isinstance(available_templates("dataset"), list)
    True
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

CardKind = Literal["dataset", "model"]


def template_dir(kind: CardKind) -> Path:
    """The folder of ``kind``'s templates: the repository checkout, else the wheel's data files."""
    name = f"{kind}_cards"
    for root in (Path(__file__).resolve().parents[2], Path(sys.prefix) / "share" / "hf-posbias"):
        if (root / name).is_dir():
            return root / name
    raise FileNotFoundError(f"card templates {name}/ not found (broken installation)")


def available_templates(kind: CardKind) -> list[str]:
    """Names of the ``*.md.j2`` templates of one kind."""
    return sorted(p.name for p in template_dir(kind).glob("*.j2"))


def render_card(kind: CardKind, template: str, **context: Any) -> str:
    """Render ``template`` (e.g. ``"train.md.j2"``) of ``kind`` with ``context``.

    Jinja's ``tojson`` filter and a ``pct`` filter (``0.1234 → '12.34'``) are available.
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir(kind)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["pct"] = lambda x, digits=2: f"{100 * float(x):.{digits}f}"
    return env.get_template(template).render(**context)
