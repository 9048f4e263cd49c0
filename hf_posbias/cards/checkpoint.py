"""The checkpoint card of both trainers: a model kind's card as data, written card then facts.

The bi-encoder (:data:`hf_posbias.training.card.BI_ENCODER_CARD`) and DebiasFirst
(:data:`hf_posbias.listwise.training.card.LISTWISE_CARD`) each give a
:class:`CheckpointCardKind` (template, facts file and class, evaluation keys); the functions here
save and load the facts and render and write the card for any kind.

Example:
    >>> kind = CheckpointCardKind("model.md.j2", "facts.json", dict, "a posbias checkpoint")
    >>> kind.facts_file, kind.evaluation_keys
    ('facts.json', ())
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hf_posbias.cards.templates import render_card


@dataclass(frozen=True)
class CheckpointCardKind:
    """What one kind of trained checkpoint's card is made of: data, no code of its own.

    Both trainers write their checkpoint's card through :func:`write_checkpoint_card` with their
    kind: the bi-encoder's (:data:`hf_posbias.training.card.BI_ENCODER_CARD`) and DebiasFirst's
    (:data:`hf_posbias.listwise.training.card.LISTWISE_CARD`).
    """

    template: str
    """The ``model_cards/`` template (e.g. ``"model.md.j2"``)."""
    facts_file: str
    """The JSON file of the run's facts, written last: its presence marks a finished run."""
    facts: type
    """The facts dataclass (with a ``from_dict`` classmethod)."""
    what: str
    """What a folder without the facts is not (``"a posbias-trained checkpoint"``)."""
    evaluation_keys: tuple[str, ...] = ()
    """Keys an ``evaluation`` given to the card must have."""
    evaluation_error: str = "the evaluation lacks {missing}"
    """The one-line error for an evaluation without them (``{missing}``: the keys, joined)."""
    context: Callable[[Any, dict[str, Any] | None], dict[str, Any]] | None = None
    """More template variables from ``(facts, evaluation)``, beyond ``info`` and ``evaluation``."""


def save_card_facts(kind: CheckpointCardKind, ckpt_dir: str | Path, facts: Any) -> Path:
    """Write a checkpoint's card facts (a dataclass) as ``ckpt_dir/<kind.facts_file>``.

    Cards are rendered from these facts, so a card can be re-rendered (e.g. with an evaluation
    added) without retraining. Written last, the file also marks a finished run.

    Example:
        >>> import dataclasses, pathlib, tempfile
        >>> @dataclasses.dataclass
        ... class Facts:
        ...     steps: int
        ...     @classmethod
        ...     def from_dict(cls, data):
        ...         return cls(**data)
        >>> kind = CheckpointCardKind("model.md.j2", "facts.json", Facts, "a posbias checkpoint")
        >>> ckpt = pathlib.Path(tempfile.mkdtemp())
        >>> save_card_facts(kind, ckpt, Facts(3)).read_text()
        '{\\n  "steps": 3\\n}\\n'
        >>> load_card_facts(kind, ckpt)
        Facts(steps=3)
    """
    from hf_posbias.shards import write_json

    path = Path(ckpt_dir) / kind.facts_file
    write_json(path, asdict(facts))
    return path


def load_card_facts(kind: CheckpointCardKind, ckpt_dir: str | Path) -> Any:
    """Read the facts written by :func:`save_card_facts` into ``kind.facts`` (its ``from_dict``).

    A folder without them is a one-line :class:`~hf_posbias.errors.InputError` naming what the
    folder is not.

    Example:
        >>> kind = CheckpointCardKind("model.md.j2", "facts.json", dict, "a posbias checkpoint")
        >>> load_card_facts(kind, "/nonexistent")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /nonexistent has no facts.json: not a posbias checkpoint
    """
    from hf_posbias.errors import InputError
    from hf_posbias.rows.readers import read_json

    path = Path(ckpt_dir) / kind.facts_file
    if not path.is_file():
        raise InputError(f"{ckpt_dir} has no {kind.facts_file}: not {kind.what}")
    return kind.facts.from_dict(read_json(path))  # type: ignore[attr-defined]


def render_checkpoint_card(
    kind: CheckpointCardKind, facts: Any, evaluation: dict[str, Any] | None = None
) -> str:
    """The card text of ``facts``, with an optional ``evaluation`` (``kind.evaluation_keys``)."""
    from hf_posbias.errors import InputError

    if evaluation is not None:
        missing = [key for key in kind.evaluation_keys if key not in evaluation]
        if missing:
            raise InputError(kind.evaluation_error.format(missing=", ".join(missing)))
    extra = kind.context(facts, evaluation) if kind.context else {}
    return render_card("model", kind.template, info=asdict(facts), evaluation=evaluation, **extra)


def write_checkpoint_card(
    kind: CheckpointCardKind,
    ckpt_dir: str | Path,
    facts: Any = None,
    evaluation: dict[str, Any] | None = None,
) -> Path:
    """Write a checkpoint's ``README.md`` card, then its facts (:func:`save_card_facts`, last:
    their presence marks a finished run); return the card path. Both trainers write cards here.

    With ``facts=None`` the facts are read back from the folder, so an evaluation can be added
    to an existing checkpoint: ``write_checkpoint_card(kind, ckpt, evaluation={...})``.

    Example:
        >>> kind = CheckpointCardKind("model.md.j2", "facts.json", dict, "a posbias checkpoint")
        >>> write_checkpoint_card(kind, "/nonexistent", evaluation={})
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /nonexistent has no facts.json: not a posbias checkpoint
    """
    ckpt = Path(ckpt_dir)
    if facts is None:
        facts = load_card_facts(kind, ckpt)
    card = ckpt / "README.md"
    from hf_posbias.shards import write_text_atomic

    write_text_atomic(card, render_checkpoint_card(kind, facts, evaluation))
    save_card_facts(kind, ckpt, facts)
    return card
