"""The settings of a DebiasFirst fine-tune: the flags of ``posbias listwise train``.

:class:`ListwiseTrainingSettings` inherits every hardware setting from
:class:`~hf_posbias.trainer_base.compute.ComputeSettings` (precision, gradient checkpointing,
mini-batching, attention kernel, memory budget, seed, global batch) without repeating one, and
adds the listwise run: base model, training set, λ, the propensity file, Pos-Aug, NEFTune, the
prompt (passage budget, identifiers) and the schedule. The :mod:`hf_posbias.settings` builder
parses it for ``accelerate launch -m hf_posbias.listwise.training.train`` and for
``posbias listwise train``.

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
    >>> from hf_posbias.settings import parse_settings_args
    >>> s = parse_settings_args(ListwiseTrainingSettings, ["--model", "smollm2-135m", "--data",
    ...                         "d", "--out", "o", "--lambda", "0.5", "--pos-aug", "4"])
    >>> s.lam, s.pos_aug, s.global_batch, s.precision, s.propensity_file is None
    (0.5, 4, 8, 'auto', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hf_posbias.errors import InputError
from hf_posbias.setting_values import above, at_least
from hf_posbias.settings import (
    ProgressSettings,
    Settings,
    check_choice,
    check_choices,
    flag_name,
    setting,
    setting_label,
    shared_setting,
)
from hf_posbias.trainer_base.compute import AUTO, ComputeSettings

NO_PROPENSITY = "none"

AUGMENTATIONS = ("pos-aug", "rand-aug", "none")
"""Training-time augmentations (Q26's ablation): Pos-Aug, RandAug, none."""

DEFAULT_LAMBDA = 0.1
"""λ of the DebiasFirst loss (Q26)."""

IPS_NORMALIZATIONS = ("paper", "mean1")
"""How the IPS pair weights ``1/(ω[i, r_i] · ω[j, r_j])`` are scaled: ``paper`` (the default) as
Q26's Eq. 4 prints it with Σω = 1 (weights of 10⁵–10⁷ on k = 20, so λ·L_Rank-IPS swamps L_LM),
``mean1`` (the project's alternative) divided by their mean over the training pairs
(self-normalised IPS: the average pair weighs 1, as in L_Rank)."""

DEFAULT_IPS_NORMALIZATION = "paper"
"""What a propensity file gets without ``--ips-normalization``: Q26's Eq. 4 as printed."""

LAMBDA_FLAG = "--lambda"
"""The spelling of the ``lam`` field (``lambda`` is a Python keyword)."""

MAX_WINDOW_FLAG = "--max-window"
"""The spelling of the ``window`` field: not ``--window``, the reranker's sliding-window size."""

REJECT_LONGER_FLAG = "--reject-longer-than"
"""The spelling of the ``max_length`` field: not ``--max-length``, posbias train's truncation."""


@dataclass(kw_only=True)
class ListwiseTrainingSettings(ComputeSettings, ProgressSettings):
    """One DebiasFirst fine-tune; every field is a flag (see the module docstring)."""

    # Shared hardware settings whose meaning differs for windows: only default and help change.
    global_batch: int = shared_setting(
        "global_batch",
        default=8,
    )
    mini_batch_size: str = shared_setting(
        "mini_batch_size",
        default=AUTO,
    )

    model: str = setting("base causal LM: smollm2-135m (packaged), a folder or a Hub id")
    data: str = setting(
        "listwise training set: the folder (or .parquet/.jsonl) written by "
        "posbias listwise build-train, augment or convert"
    )
    out: str = shared_setting("out")
    propensity: str = setting(
        "propensity.json of posbias listwise propensity (L_Rank-IPS, Eq. 4), or "
        "none (FIRST's L_Rank); its k must be the training windows' size",
        default=NO_PROPENSITY,
    )
    ips_normalization: str | None = setting(
        "scale of the IPS pair weights (needs --propensity): paper (the default with a "
        "propensity file: Q26's Eq. 4 as printed, Σω = 1, so pair weights of 10⁵–10⁷) or mean1 "
        "(the project's alternative: divided by their mean over the training pairs, "
        "self-normalised IPS, so λ still balances L_LM)",
        default=None,
        choices=IPS_NORMALIZATIONS,
    )
    lam: float = shared_setting(
        "lambda",
        default=DEFAULT_LAMBDA,
        flag=LAMBDA_FLAG,
    )
    pos_aug: int | None = shared_setting(
        "pos_aug",
        default=None,
    )
    augmentation: str | None = setting(
        "Q26's augmentation ablation, n from --pos-aug: pos-aug (the default with --pos-aug "
        "n > 1), rand-aug (n independent seeded shuffles per window: RandAug) or none",
        default=None,
        choices=AUGMENTATIONS,
    )
    lm_loss: bool = setting(
        "add L_LM (next-token loss on the answer) to λ·L_Rank(-IPS), Eq. 6; --no-lm-loss "
        "trains on λ·L_Rank(-IPS) alone (Q26's ablation; L_LM is still logged)",
        default=True,
    )
    neftune_alpha: float | None = setting(
        "NEFTune noise α on the input embeddings (Q26 trains with it); unset = off",
        default=None,
        range=above(0),
    )
    passage_tokens: int | None = shared_setting(
        "passage_tokens",
        default=None,
    )
    identifiers: Literal["letters", "numbers"] = shared_setting("identifiers", default="letters")
    # Not --window (the reranker's sliding-window size) nor --max-length (posbias train's
    # truncation): a limit the data is checked against.
    window: int = setting(
        "largest window the data may hold",
        default=20,
        flag=MAX_WINDOW_FLAG,
        range=at_least(1),
    )
    max_length: int | None = setting(
        "refuse training sequences longer than this (never truncated)",
        default=None,
        flag=REJECT_LONGER_FLAG,
        range=at_least(1),
    )
    max_steps: int | None = shared_setting("max_steps", default=None)
    epochs: float = shared_setting("epochs", default=3.0)
    lr: float = shared_setting("lr", default=5e-6)
    warmup_ratio: float = shared_setting("warmup_ratio", default=0.0)
    logging_steps: int = shared_setting("logging_steps", default=10)
    card: bool = setting("write the model card README.md", default=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("identifiers", self.identifiers, ("letters", "numbers"))
        if self.augmentation is not None:
            check_choices(self, "augmentation")
            n = self.pos_aug
            if self.augmentation == "none" and n is not None and n > 1:
                raise InputError(
                    f"{setting_label('augmentation')} none contradicts "
                    f"{setting_label('pos_aug')} {n}"
                )
            if self.augmentation != "none" and n is None:
                raise InputError(
                    f"{setting_label('augmentation')} {self.augmentation} needs "
                    f"{setting_label('pos_aug')} n (copies per window)"
                )
        if not self.lm_loss and self.lam == 0:
            raise InputError(
                f"{LAMBDA_FLAG} 0 with {flag_name('lm_loss', negated=True)} leaves no loss to train"
            )
        if self.ips_normalization is not None:
            check_choices(self, "ips_normalization")
            if self.propensity_file is None:
                raise InputError(
                    f"{setting_label('ips_normalization')} scales IPS weights: give "
                    f"{setting_label('propensity')} propensity.json (posbias listwise propensity)"
                )

    @property
    def augmentation_method(self) -> str:
        """``pos-aug``, ``rand-aug`` or ``none``: ``--augmentation``, else Pos-Aug when
        ``--pos-aug n`` > 1 is given.

        Example:
            >>> s = ListwiseTrainingSettings(model="m", data="d", out="o", pos_aug=4)
            >>> s.augmentation_method, ListwiseTrainingSettings(
            ...     model="m", data="d", out="o", pos_aug=4, augmentation="rand-aug"
            ... ).augmentation_method
            ('pos-aug', 'rand-aug')
        """
        if self.augmentation is not None:
            return self.augmentation
        return "pos-aug" if self.pos_aug is not None and self.pos_aug > 1 else "none"

    @property
    def propensity_file(self) -> str | None:
        """The propensity file, ``None`` for ``--propensity none`` (FIRST's L_Rank)."""
        text = str(self.propensity).strip()
        return None if text.lower() in (NO_PROPENSITY, "") else text


# --------------------------------------------------------------------------- experiments
# The settings of the listwise experiments and of their verbs. The window lives here once
# (:class:`RerankerOptions`): the reranker reads it when it is loaded and the experiment when it
# slides, from the same object.


@dataclass(kw_only=True)
class AugmentSettings(Settings):
    """``posbias listwise augment``: Pos-Aug rotations of a training set."""

    data: str = setting("training-set folder, .parquet or .jsonl")
    groups: int = setting("number of groups n (divides k)", range=at_least(1))
    out: str = shared_setting("out")
    seed: int = shared_setting("seed")


@dataclass(kw_only=True)
class TransitionsSettings(Settings):
    """``posbias listwise transitions``: Q26 Fig. 3, input position × target rank of a
    training set, before and after augmentation."""

    data: str = setting("training-set folder, .parquet or .jsonl (e.g. listwise convert's)")
    out: str = shared_setting("out")
    augmentation: str = setting(
        "the augmentation of the second panel (none: the file alone)",
        default="pos-aug",
        choices=AUGMENTATIONS,
    )
    groups: int = setting(
        "Pos-Aug groups n (divides k) / RandAug copies", default=4, range=at_least(1)
    )
    seed: int = shared_setting("seed")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choices(self, "augmentation")
