"""Render dataset and model cards from the Jinja templates in dataset_cards/ and model_cards/.

Templates are filled only with measured statistics passed in by the caller; an undefined
variable is an error (``StrictUndefined``), so a card can never ship with a silent blank.

Example:
    >>> from hf_posbias.cards import available_templates
    >>> isinstance(available_templates("dataset"), list)
    True
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal, TypeVar

CardKind = Literal["dataset", "model"]

FactsT = TypeVar("FactsT")


def template_dir(kind: CardKind) -> Path:
    """The folder of ``kind``'s templates: the repository checkout, else the wheel's data files."""
    name = f"{kind}_cards"
    for root in (Path(__file__).resolve().parents[1], Path(sys.prefix) / "share" / "hf-posbias"):
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


def save_card_facts(ckpt_dir: str | Path, filename: str, facts: Any) -> Path:
    """Write a checkpoint's card facts (a dataclass) as ``ckpt_dir/filename``; return the path.

    Cards are rendered from these facts, so a card can be re-rendered (e.g. with an evaluation
    added) without retraining. Written last, the file also marks a finished run.
    """
    from hf_posbias.shards import write_json

    path = Path(ckpt_dir) / filename
    write_json(path, asdict(facts))
    return path


def write_checkpoint_card(ckpt_dir: str | Path, text: str, filename: str, facts: Any) -> Path:
    """Write a checkpoint's ``README.md`` card, then its facts (:func:`save_card_facts`, last:
    their presence marks a finished run); return the card path. Both trainers write cards here.

    Example:
        >>> import dataclasses, pathlib, tempfile
        >>> @dataclasses.dataclass
        ... class Facts:
        ...     steps: int
        >>> ckpt = pathlib.Path(tempfile.mkdtemp())
        >>> write_checkpoint_card(ckpt, "# card\\n", "facts.json", Facts(3)).read_text()
        '# card\\n'
        >>> (ckpt / "facts.json").read_text()
        '{\\n  "steps": 3\\n}\\n'
    """
    card = Path(ckpt_dir) / "README.md"
    card.write_text(text)
    save_card_facts(ckpt_dir, filename, facts)
    return card


def load_card_facts(ckpt_dir: str | Path, filename: str, cls: type[FactsT], what: str) -> FactsT:
    """Read the facts written by :func:`save_card_facts` into ``cls`` (its ``from_dict``).

    A folder without them is a one-line :class:`~hf_posbias.errors.InputError` naming ``what``
    the folder is not.

    Example:
        >>> load_card_facts("/nonexistent", "facts.json", dict, "a posbias checkpoint")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /nonexistent has no facts.json: not a posbias checkpoint
    """
    from hf_posbias.errors import InputError
    from hf_posbias.rows import read_json

    path = Path(ckpt_dir) / filename
    if not path.is_file():
        raise InputError(f"{ckpt_dir} has no {filename}: not {what}")
    return cls.from_dict(read_json(path))  # type: ignore[attr-defined]
