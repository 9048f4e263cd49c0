"""The settings of a DebiasFirst fine-tune: the flags of ``posbias listwise train``.

:class:`ListwiseTrainingSettings` inherits every hardware setting from
:class:`~hf_posbias.training.settings.ComputeSettings` (precision, gradient checkpointing,
mini-batching, attention kernel, memory budget, seed, global batch) without repeating one, and
adds the listwise run: base model, training set, λ, the propensity file, Pos-Aug, NEFTune, the
prompt (passage budget, identifiers) and the schedule. The same ``HfArgumentParser`` parses it
for ``accelerate launch -m hf_posbias.listwise.train`` and for ``posbias listwise train``.

What the shared settings mean for a listwise run:

- ``--global-batch`` — training windows per optimisation step over all processes (default 8,
  Q26's effective batch; the bi-encoder trainer's default is 256 rows). Each of W processes
  takes ``global/W`` windows; DDP averages the gradients (nothing is gathered: a window's loss
  needs no other window).
- ``--mini-batch-size N`` — windows per forward pass; the rest of a process's share is gradient
  accumulation (so N must divide it; the largest divisor ≤ N is used). ``auto``: on a GPU the
  memory preflight's choice, on a CPU one window (a batched forward is not faster there and
  needs no padding). ``--mini-batch-tokens T`` — ``T ÷ longest training sequence`` windows.
- ``--gradient-checkpointing``, ``--precision``, ``--attn-implementation``,
  ``--device-memory-gib``, ``--seed`` — as for every trainer (:mod:`hf_posbias.devices`).

Example:
    >>> from hf_posbias.training.settings import parse_settings
    >>> s = parse_settings(["--model", "smollm2-135m", "--data", "d", "--out", "o",
    ...                     "--lambda", "0.5", "--pos-aug", "4"], ListwiseTrainingSettings)
    >>> s.lam, s.pos_aug, s.global_batch, s.precision, s.propensity_file is None
    (0.5, 4, 8, 'auto', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hf_posbias.errors import InputError
from hf_posbias.listwise.losses import DEFAULT_LAMBDA
from hf_posbias.training.settings import AUTO, ComputeSettings

NO_PROPENSITY = "none"


@dataclass(kw_only=True)
class ListwiseTrainingSettings(ComputeSettings):
    """One DebiasFirst fine-tune; every field is a flag (see the module docstring)."""

    # Shared hardware settings whose meaning differs for windows: only default and help change.
    global_batch: int = field(
        default=8,
        metadata={
            "help": "training windows per optimisation step over all processes (Q26: 8); each "
            "of W processes takes global/W, the rest of its share after --mini-batch-size is "
            "gradient accumulation; must be divisible by W"
        },
    )
    mini_batch_size: str = field(
        default=AUTO,
        metadata={
            "help": "windows per forward pass: N (the largest divisor of a process's share "
            "<= N), or auto = the GPU memory preflight's choice, one window on CPU"
        },
    )

    model: str = field(
        metadata={"help": "base causal LM: smollm2-135m (packaged), a folder or a Hub id"}
    )
    data: str = field(
        metadata={
            "help": "listwise training set: the folder (or .parquet/.jsonl) written by "
            "posbias listwise build-train, augment or convert"
        }
    )
    out: str = field(metadata={"help": "output folder of the checkpoint and its model card"})
    propensity: str = field(
        default=NO_PROPENSITY,
        metadata={
            "help": "propensity.json of posbias listwise propensity (L_Rank-IPS, Eq. 4), or "
            "none (FIRST's L_Rank); its k must be the training windows' size"
        },
    )
    lam: float = field(
        default=DEFAULT_LAMBDA,
        metadata={"aliases": ["--lambda"], "help": "λ of λ·L_Rank(-IPS) + L_LM (Q26: 0.1)"},
    )
    pos_aug: int | None = field(
        default=None,
        metadata={
            "help": "Pos-Aug on the fly: every window becomes n rotated permutations (n must "
            "divide the window size); unset = the data as it is (e.g. already augmented)"
        },
    )
    neftune_alpha: float | None = field(
        default=None,
        metadata={
            "help": "NEFTune noise α on the input embeddings (Q26 trains with it); unset = off"
        },
    )
    passage_tokens: int | None = field(
        default=None,
        metadata={
            "help": "cut each passage to this many tokens, as --passage-tokens of posbias "
            "listwise test (evaluate with the same value)"
        },
    )
    identifiers: Literal["letters", "numbers"] = field(
        default="letters", metadata={"help": "identifier style: [A]…[T] (default) or [1]…[20]"}
    )
    window: int = field(default=20, metadata={"help": "largest window the data may hold"})
    max_length: int | None = field(
        default=None,
        metadata={"help": "refuse training sequences longer than this (never truncated)"},
    )
    max_steps: int | None = field(default=None, metadata={"help": "stop after N steps"})
    epochs: float = field(default=3.0, metadata={"help": "passes over the training set (Q26: 3)"})
    lr: float = field(default=5e-6, metadata={"help": "peak learning rate (Q26: 5e-6)"})
    warmup_ratio: float = field(default=0.0, metadata={"help": "linear warm-up share of steps"})
    logging_steps: int = field(default=10, metadata={"help": "log the losses every N steps"})
    card: bool = field(default=True, metadata={"help": "write the model card README.md"})
    no_progress: bool = field(default=False, metadata={"help": "hide progress bars"})

    def __post_init__(self) -> None:
        super().__post_init__()
        checks = [
            ("--lambda", self.lam, self.lam >= 0, ">= 0"),
            ("--pos-aug", self.pos_aug, self.pos_aug is None or self.pos_aug >= 1, ">= 1"),
            (
                "--neftune-alpha",
                self.neftune_alpha,
                self.neftune_alpha is None or self.neftune_alpha > 0,
                "positive",
            ),
            (
                "--passage-tokens",
                self.passage_tokens,
                self.passage_tokens is None or self.passage_tokens >= 1,
                ">= 1",
            ),
            ("--window", self.window, self.window >= 1, ">= 1"),
            (
                "--max-length",
                self.max_length,
                self.max_length is None or self.max_length >= 1,
                ">= 1",
            ),
            ("--max-steps", self.max_steps, self.max_steps is None or self.max_steps >= 1, ">= 1"),
            ("--epochs", self.epochs, self.epochs > 0, "positive"),
            ("--lr", self.lr, self.lr > 0, "positive"),
            ("--warmup-ratio", self.warmup_ratio, 0 <= self.warmup_ratio < 1, "in [0, 1)"),
            ("--logging-steps", self.logging_steps, self.logging_steps >= 1, ">= 1"),
        ]
        for flag, value, ok, rule in checks:
            if not ok:
                raise InputError(f"{flag} must be {rule}, got {value}")
        if self.identifiers not in ("letters", "numbers"):
            raise InputError(f"--identifiers must be letters or numbers, got {self.identifiers!r}")

    @property
    def propensity_file(self) -> str | None:
        """The propensity file, ``None`` for ``--propensity none`` (FIRST's L_Rank)."""
        text = str(self.propensity).strip()
        return None if text.lower() in (NO_PROPENSITY, "") else text
