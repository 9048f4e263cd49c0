"""The one declaration of the training settings, parsed by :mod:`hf_posbias.settings`.

Every setting is a dataclass field declared with :func:`hf_posbias.settings.setting` (help,
default, renamed spellings), like every verb's settings. The flags of ``posbias train``,
``accelerate launch -m hf_posbias.training.train``, the matrix scripts (which pass flags through
and validate them with the same parser) and the facts in the model card all come from here.

- :class:`~hf_posbias.trainer_base.compute.ComputeSettings` — how a step runs on the hardware
  (global batch, precision, checkpointing, mini-batching, attention kernel, memory budget,
  seed), shared by both trainers: it lives in :mod:`hf_posbias.trainer_base.compute`.
- :class:`TrainingSettings` — one bi-encoder run of YHP26 (model, configuration, data, output,
  schedule, loss, card, Hub).

Multi-GPU semantics: ``--global-batch`` is the number of rows of one optimisation step over all
processes, i.e. the in-batch negatives of every query (256 in YHP26 App. D). With W processes each
embeds ``global_batch / W`` rows of the same length bin and the loss gathers the embeddings of all
processes (``gather_across_devices``), so every query still scores against ``global_batch``
documents. ``global_batch`` must be divisible by W.

Example:
    >>> from hf_posbias.training.training_settings import parse_settings
    >>> s = parse_settings(["--model", "bert-base", "--config", "uniform", "--data", "d",
    ...                     "--out", "o", "--precision", "bf16", "--mini-batch-size", "16"])
    >>> s.global_batch, s.precision, s.mini_batch_rows, s.gradient_checkpointing
    (256, 'bf16', 16, 'auto')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hf_posbias.modeling.bases import PoolingName
from hf_posbias.setting_values import above, at_least
from hf_posbias.settings import (
    ProgressSettings,
    check_choice,
    parse_settings_args,
    setting,
    shared_setting,
)
from hf_posbias.trainer_base.compute import ComputeSettings

S = TypeVar("S", bound=ComputeSettings)


@dataclass(kw_only=True)
class TrainingSettings(ComputeSettings, ProgressSettings):
    """One bi-encoder training run (YHP26 §4, App. D); every field is a flag of ``posbias train``.

    ``lr``/``max_length``/``pooling`` default to the model spec; ``max_steps`` (if set) overrides
    ``epochs``. ``record_batches`` keeps the row indices of every batch (tests, audits).
    """

    model: str = setting("short name, checkpoint id or local folder")
    config: str = setting(
        "training-set configuration: begin | middle | end | uniform (where the evidence sits), "
        "b:m:e proportions or ips (the pool reweighted)"
    )
    data: str = setting("training-set repo/folder (the pool for ips)")
    out: str = shared_setting("out")
    max_steps: int | None = shared_setting("max_steps", default=None)
    epochs: float = shared_setting("epochs", default=3.0)
    lr: float | None = shared_setting(
        "lr", default=None, unset="4e-5 below 400M parameters, else 2e-5 (YHP26 App. D)"
    )
    pooling: PoolingName | None = setting("override the model's pooling", default=None)
    max_length: int | None = setting(
        "max tokens per text; unset = the model's", default=None, range=at_least(1)
    )
    warmup_ratio: float = shared_setting("warmup_ratio", default=0.1)
    scale: float = setting("InfoNCE scale = 1 / temperature", default=20.0, range=above(0))
    logging_steps: int = shared_setting("logging_steps", default=10)
    push_to_hub: str | None = setting(
        "upload checkpoint + card to this model repo id", default=None
    )
    hub_token: str | None = shared_setting("hub_token", default=None)
    card: bool = setting("write the model card README.md", default=True)
    record_batches: bool = setting(
        "keep every batch's row indices in the result (audits)", default=False
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pooling is not None:
            from hf_posbias.modeling.bases import POOLINGS

            check_choice("pooling", self.pooling, POOLINGS)


# --------------------------------------------------------------------------- parsing


def parse_settings(
    argv: Sequence[str] | None,
    settings_cls: type[S] = TrainingSettings,  # type: ignore[assignment]
    **kwargs: Any,
) -> S:
    """Parse flags into ``settings_cls`` (:func:`hf_posbias.settings.parse_settings_args`).

    A bad value or an unknown flag is a one-line :class:`~hf_posbias.errors.InputError` (not
    argparse's usage dump), so the matrix scripts can validate every run's flags up front.

    Example:
        >>> parse_settings(["--model", "m", "--config", "c", "--data", "d", "--out", "o",
        ...                 "--precision", "fp8"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: argument --precision: invalid choice: 'fp8' ...
    """
    return parse_settings_args(settings_cls, argv, **kwargs)
