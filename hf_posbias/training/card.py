"""Model cards of trained checkpoints: ``README.md`` rendered from ``model_cards/model.md.j2``.

Every checkpoint folder gets a card with the base model, the position configuration and its
measured begin:middle:end distribution, the training-set repo and config, the exact
hyper-parameters, the per-bin × position counts of the rows actually used, the measured loss and
time, and — once the evaluation side has run — per-position nDCG@10 and PSI. The training facts are
also kept as JSON (``posbias_training.json``, the run's "done" marker) so that the evaluation side
can re-render the card later with :func:`write_model_card` ``(ckpt_dir, evaluation=...)``.

Naming scheme on the Hub: ``<org>/posbias-<model>-<config>``, e.g.
``my-org/posbias-modernbert-base-uniform`` (see :func:`hub_repo_name`).

Example:
    >>> from hf_posbias.training.card import hub_repo_name
    >>> hub_repo_name("my-org", "gpt2-medium", "50:25:25")
    'my-org/posbias-gpt2-medium-50-25-25'
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.cards import load_card_facts, save_card_facts, write_checkpoint_card
from hf_posbias.errors import InputError

TRAINING_INFO = "posbias_training.json"
CARD_TEMPLATE = "model.md.j2"


@dataclass
class TrainingCardInfo:
    """The measured facts of one training run that the card shows."""

    base_model: str
    model_name: str
    kind: str
    positional_encoding: str
    config: str
    distribution: str
    nominal_ratio: str
    dataset: str
    dataset_config: str
    n_rows: int
    n_source_rows: int
    counts: dict[str, dict[str, int]]
    batch_size: int
    lr: float
    epochs: float
    """The epochs asked for (``--epochs``); :attr:`epochs_trained` is what the run did."""
    max_steps: int | None
    steps: int
    warmup_ratio: float
    seed: int
    scale: float
    mini_batch_size: int | None
    pooling: str
    max_length: int
    query_prefix: str
    document_prefix: str
    world_size: int
    train_loss: float
    train_seconds: float
    truncated_documents: int
    n_documents: int
    weighted: bool = False
    mini_batch_tokens: int | None = None
    gradient_checkpointing: bool = False
    memory_preflight: str = ""
    precision: str = "fp32"
    attn_implementation: str = ""
    per_device_batch: int = 0
    """Rows per process and step (``batch_size`` is the global batch of all processes)."""
    device: str = ""
    license: str = "apache-2.0"
    base_model_on_hub: bool = True
    dataset_on_hub: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    steps_per_epoch: int = 0
    """Optimisation steps of one pass over the rows (one length bin per batch)."""
    epochs_trained: float = 0.0
    """Passes over the training rows the run made: ``steps / steps_per_epoch``."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingCardInfo:
        """Inverse of :func:`dataclasses.asdict` (unknown keys are refused)."""
        return cls(**data)


def hub_repo_name(org: str, model: str, config: str) -> str:
    """``<org>/posbias-<model>-<config>`` with characters the Hub refuses replaced by ``-``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"posbias-{model}-{config}").strip("-")
    return f"{org}/{slug}"


def save_training_info(ckpt_dir: str | Path, info: TrainingCardInfo) -> Path:
    """Write ``posbias_training.json`` (the facts the card is rendered from)."""
    return save_card_facts(ckpt_dir, TRAINING_INFO, info)


def load_training_info(ckpt_dir: str | Path) -> TrainingCardInfo:
    """Read the facts saved by :func:`save_training_info`."""
    return load_card_facts(
        ckpt_dir, TRAINING_INFO, TrainingCardInfo, "a posbias-trained checkpoint"
    )


def render_model_card(info: TrainingCardInfo, evaluation: dict[str, Any] | None = None) -> str:
    """The card text. ``evaluation``: ``{"benchmark": str, "ndcg_at_10": {position: float},
    "psi": float}`` (optional ``"notes": str``)."""
    from hf_posbias.cards import render_card

    if evaluation is not None:
        missing = [k for k in ("benchmark", "ndcg_at_10", "psi") if k not in evaluation]
        if missing:
            raise InputError(f"evaluation dict lacks {', '.join(missing)}")
    bins = list(info.counts)
    positions = sorted({p for row in info.counts.values() for p in row}, key=_position_order)
    return render_card(
        "model",
        CARD_TEMPLATE,
        info=asdict(info),
        bins=bins,
        positions=positions,
        evaluation=evaluation,
        extra_notes=evaluation.get("notes", "") if evaluation else "",
    )


def _position_order(position: str) -> tuple[int, str]:
    from hf_posbias import POSITIONS

    return (POSITIONS.index(position) if position in POSITIONS else len(POSITIONS), position)


def write_model_card(
    ckpt_dir: str | Path,
    info: TrainingCardInfo | None = None,
    evaluation: dict[str, Any] | None = None,
) -> Path:
    """Write ``README.md`` (and ``posbias_training.json``) into ``ckpt_dir``; return the card path.

    With ``info=None`` the facts are read back from the folder, so the evaluation side can add
    its results to an existing checkpoint: ``write_model_card(ckpt, evaluation={...})``.
    """
    ckpt = Path(ckpt_dir)
    if info is None:
        info = load_training_info(ckpt)
    # The facts are written after the card: their presence marks the run as complete (resume).
    return write_checkpoint_card(ckpt, render_model_card(info, evaluation), TRAINING_INFO, info)
