"""Model cards of trained checkpoints: ``README.md`` rendered from ``model_cards/model.md.j2``.

Every checkpoint folder gets a card with the base model, the position configuration and its
measured begin:middle:end distribution, the training-set repo and config, the exact
hyper-parameters, the per-bin × position counts of the rows actually used, the measured loss and
time, and — once the evaluation side has run — per-position nDCG@10 and PSI. The training facts are
also kept as JSON (``posbias_training.json``, the run's "done" marker) so that the evaluation side
can re-render the card later: :func:`hf_posbias.cards.checkpoint.write_checkpoint_card`
``(BI_ENCODER_CARD, ckpt_dir, evaluation=...)`` (the bi-encoder's kind of card,
:data:`BI_ENCODER_CARD`, goes through the cards module every trained checkpoint shares).

Naming scheme on the Hub: ``<org>/posbias-<model>-<config>``, e.g.
``my-org/posbias-modernbert-base-uniform`` (see :func:`hub_repo_name`).

Example:
    >>> from hf_posbias.training.card import hub_repo_name
    >>> hub_repo_name("my-org", "gpt2-medium", "50:25:25")
    'my-org/posbias-gpt2-medium-50-25-25'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hf_posbias.cards.checkpoint import CheckpointCardKind

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


def _bin_table(info: TrainingCardInfo, evaluation: dict[str, Any] | None) -> dict[str, Any]:
    """The template's rows (length bins) and columns (positions) and the evaluation's notes."""
    positions = sorted({p for row in info.counts.values() for p in row}, key=_position_order)
    notes = evaluation.get("notes", "") if evaluation else ""
    return {"bins": list(info.counts), "positions": positions, "extra_notes": notes}


def _position_order(position: str) -> tuple[int, str]:
    from hf_posbias.positions import POSITIONS

    return (POSITIONS.index(position) if position in POSITIONS else len(POSITIONS), position)


BI_ENCODER_CARD = CheckpointCardKind(
    template=CARD_TEMPLATE,
    facts_file=TRAINING_INFO,
    facts=TrainingCardInfo,
    what="a posbias-trained checkpoint",
    evaluation_keys=("benchmark", "ndcg_at_10", "psi"),
    evaluation_error="evaluation dict lacks {missing}",
    context=_bin_table,
)
"""The bi-encoder's card. An ``evaluation`` is ``{"benchmark": str, "ndcg_at_10": {position:
float}, "psi": float}`` (optional ``"notes": str``, ``"model_index": str``)."""
