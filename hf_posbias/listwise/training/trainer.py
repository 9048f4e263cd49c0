"""The DebiasFirst trainer: the transformers ``Trainer`` with λ·L_Rank(-IPS) + L_LM.

:class:`DebiasFirstTrainer` is what :func:`hf_posbias.listwise.training.train.train_listwise`
runs; the loss of a forward pass is :func:`hf_posbias.listwise.training.losses.model_loss` on a
batch of :class:`~hf_posbias.listwise.training.collate.ListwiseCollator` windows.

This module imports transformers (and torch) at the top: only the training run imports it,
never ``posbias --help``.

Example:
    >>> from transformers import Trainer
    >>> issubclass(DebiasFirstTrainer, Trainer), DebiasFirstTrainer.loss_is_scaled_for_ga
    (True, False)
"""

from __future__ import annotations

from typing import Any

from transformers import Trainer

from hf_posbias.listwise.training.losses import model_loss


class DebiasFirstTrainer(Trainer):
    """The transformers ``Trainer`` with the DebiasFirst loss (λ·L_Rank(-IPS) + L_LM).

    The loss of a forward pass is a batch mean, so the Trainer divides it by the gradient
    accumulation steps (``loss_is_scaled_for_ga = False``). The two parts are averaged
    between logging steps and logged as ``rank_loss`` and ``lm_loss``; :attr:`run_totals`
    holds their sums over the whole run and the number of forward passes.
    """

    loss_is_scaled_for_ga = False

    def __init__(
        self, *args: Any, lam: float, propensity: Any, with_lm: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lam = lam
        self.propensity = propensity
        self.with_lm = with_lm
        self._since_log = [0.0, 0.0, 0]
        self.run_totals = [0.0, 0.0, 0]

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        parts = model_loss(
            model, inputs, lam=self.lam, propensity=self.propensity, with_lm=self.with_lm
        )
        for totals in (self._since_log, self.run_totals):
            totals[0] += parts.rank
            totals[1] += parts.lm
            totals[2] += 1
        return (parts.loss, None) if return_outputs else parts.loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        rank, lm, n = self._since_log
        if "loss" in logs and n:
            logs = {**logs, "rank_loss": rank / n, "lm_loss": lm / n}
            self._since_log = [0.0, 0.0, 0]
        super().log(logs, start_time)
