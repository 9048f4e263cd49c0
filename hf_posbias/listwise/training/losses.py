"""FIRST's ranking loss, its inverse-propensity version, and the DebiasFirst joint loss.

:func:`rank_loss` (Q26 Eq. 2 and Eq. 4) takes the identifier logits ``s`` of a batch of windows
(``logits[b, i]`` = score of the passage at input position i), their target ranks ``r``
(0-based) and an optional propensity matrix ω (``[k, k]``, row = input position, column =
output position):

    L = mean over b of  Σ_{i, j : r_i < r_j}  log(1 + exp(s_j − s_i))
                                               / ((r_i + r_j + 2) · ω[i, r_i] · ω[j, r_j])

With ``propensity=None`` (ω ≡ 1) this is FIRST's L_Rank — the better-ranked passage should
score higher, pairs near the top weigh more (``r_i + r_j + 2`` is FIRST's ``i + j`` with 1-based
ranks); with ω it is L_Rank-IPS. Target ranks < 0 mark padding (windows shorter than k).

:func:`debiasfirst_loss` (Eq. 6) is ``λ · L_Rank(-IPS) + L_LM`` on a training batch from
:class:`~hf_posbias.listwise.training.collate.ListwiseCollator`: L_LM is the next-token loss on the
answer tokens only (the prompt is masked), L_Rank reads the identifier logits at the first
answer position (the ``[`` token, whose next token is the first identifier) — the very logits
FIRST scoring reads at inference. λ = 0.1 by default.

Example:
    >>> import torch
    >>> s = torch.tensor([[2.0, 0.0]])
    >>> round(float(rank_loss(s, torch.tensor([[0, 1]]))), 4)  # softplus(0 - 2) / 3
    0.0423
    >>> round(float(rank_loss(s, torch.tensor([[1, 0]]))), 4)  # softplus(2 - 0) / 3
    0.709
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.training.finetune_settings import DEFAULT_LAMBDA
from hf_posbias.settings import flag_name

if TYPE_CHECKING:
    import torch


def mean_ips_weight(propensity: Any, windows_ranks: Sequence[Sequence[int]]) -> float:
    """Mean of ``1/(ω[i, r_i] · ω[j, r_j])`` over every pair ``r_i < r_j`` of every window.

    Example:
        >>> mean_ips_weight([[0.5, 0.5], [0.25, 0.25]], [[0, 1], [1, 0]])  # 1/(.5·.25) twice
        8.0
    """
    import numpy as np

    omega = np.asarray(propensity, dtype=np.float64)
    total, pairs = 0.0, 0
    for ranks in windows_ranks:
        r = np.asarray(ranks)
        valid = r >= 0
        w = np.where(valid, omega[np.arange(len(r)), np.clip(r, 0, None)], 1.0)
        mask = (r[:, None] < r[None, :]) & valid[:, None] & valid[None, :]
        total += float((1.0 / (w[:, None] * w[None, :]))[mask].sum())
        pairs += int(mask.sum())
    if pairs == 0:
        raise InputError("the training windows hold no ranked pair to normalise the IPS weights")
    return total / pairs


def normalize_propensity(
    propensity: Any, windows_ranks: Sequence[Sequence[int]], how: str = "paper"
) -> Any:
    """ω for :func:`rank_loss` under ``--ips-normalization``: ``paper`` unchanged, ``mean1``
    scaled by √c (c = :func:`mean_ips_weight`), so every pair weight is divided by c.

    ``how`` is one of :data:`IPS_NORMALIZATIONS`, checked by
    :class:`~hf_posbias.listwise.training.finetune_settings.ListwiseTrainingSettings`.

    Example:
        >>> omega = [[0.5, 0.5], [0.25, 0.25]]
        >>> normalize_propensity(omega, [[0, 1], [1, 0]], "mean1").round(4).tolist()  # × √8
        [[1.4142, 1.4142], [0.7071, 0.7071]]
    """
    import numpy as np

    omega = np.asarray(propensity, dtype=np.float64)
    if how == "mean1":
        return omega * np.sqrt(mean_ips_weight(omega, windows_ranks))
    return omega


def rank_loss(
    logits: torch.Tensor, target_ranks: torch.Tensor, propensity: Any = None
) -> torch.Tensor:
    """FIRST's L_Rank, or L_Rank-IPS with a propensity matrix (see the module docstring).

    Args:
        logits: ``[B, k]`` identifier scores (input-position order).
        target_ranks: ``[B, k]`` 0-based target rank of each input position; ``< 0`` = padding.
        propensity: ``[k, k]`` ω (tensor, array or nested lists) or ``None`` (ω ≡ 1).

    Returns:
        The batch mean (a scalar tensor, float32 or wider, differentiable in ``logits``).
    """
    import torch

    if logits.ndim != 2 or logits.shape != target_ranks.shape:
        raise InputError(
            f"rank_loss needs logits and target_ranks of the same [B, k] shape, got "
            f"{tuple(logits.shape)} and {tuple(target_ranks.shape)}"
        )
    scores = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    ranks = target_ranks.to(device=logits.device, dtype=torch.long)
    valid = ranks >= 0
    r_i, r_j = ranks[:, :, None], ranks[:, None, :]
    pairs = (r_i < r_j) & valid[:, :, None] & valid[:, None, :]
    weight = 1.0 / (r_i + r_j + 2).clamp(min=1).to(scores.dtype)
    if propensity is not None:
        omega = torch.as_tensor(propensity, device=logits.device, dtype=scores.dtype)
        k = logits.shape[1]
        if tuple(omega.shape) != (k, k):
            raise InputError(
                f"the propensity matrix is {tuple(omega.shape)} but the windows hold k={k} "
                "passages: it must be k×k"
            )
        positions = torch.arange(k, device=logits.device).expand_as(ranks)
        w = omega[positions, ranks.clamp(min=0)]  # ω[i, r_i] for each input position i
        if bool(((w <= 0) & valid).any()):
            raise InputError(
                "the propensity matrix is 0 on a cell this batch visits (1/ω is infinite): "
                f"re-estimate it with {flag_name('smoothing')} > 0"
            )
        w = torch.where(valid, w, torch.ones_like(w))
        weight = weight / (w[:, :, None] * w[:, None, :])
    # diff[b, i, j] = s_j − s_i: the loss when the better passage i does not outscore j.
    diff = scores[:, None, :] - scores[:, :, None]
    terms = torch.nn.functional.softplus(diff) * weight * pairs
    return terms.sum(dim=(1, 2)).mean()


def lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy over the positions whose label is not −100 (the answer).

    Example:
        >>> import torch
        >>> logits = torch.zeros(1, 3, 4)
        >>> round(float(lm_loss(logits, torch.tensor([[-100, 2, 3]]))), 4)  # log 4
        1.3863
    """
    import torch

    shifted = logits[:, :-1, :].float()
    targets = labels[:, 1:].to(logits.device)
    if not bool((targets != -100).any()):
        raise InputError("the batch has no answer tokens to learn (every label is -100)")
    return torch.nn.functional.cross_entropy(
        shifted.reshape(-1, shifted.shape[-1]), targets.reshape(-1), ignore_index=-100
    )


def identifier_logits(
    logits: torch.Tensor, answer_start: torch.Tensor, identifier_ids: torch.Tensor
) -> torch.Tensor:
    """``[B, K]`` logits of the K identifier tokens at each row's first answer position.

    Example:
        >>> import torch
        >>> logits = torch.arange(24.0).reshape(1, 3, 8)
        >>> identifier_logits(logits, torch.tensor([1]), torch.tensor([2, 5])).tolist()
        [[10.0, 13.0]]
    """
    import torch

    rows = torch.arange(logits.shape[0], device=logits.device)
    at = logits[rows, answer_start.to(logits.device)]  # [B, V]
    return at[:, identifier_ids.to(logits.device)]


@dataclass
class LossParts:
    """The joint loss and its two parts (detached copies for logging)."""

    loss: Any
    rank: float
    lm: float


def debiasfirst_loss(
    logits: torch.Tensor,
    batch: dict[str, torch.Tensor],
    *,
    lam: float = DEFAULT_LAMBDA,
    propensity: Any = None,
    with_lm: bool = True,
) -> LossParts:
    """``λ · L_Rank(-IPS) + L_LM`` of a collated batch (see the module docstring).

    ``logits`` is the causal LM's output ``[B, T, V]`` on ``batch["input_ids"]``; the batch comes
    from :class:`~hf_posbias.listwise.training.collate.ListwiseCollator`. ``lam=0`` gives plain SFT
    on the answer; ``propensity=None`` gives FIRST's joint loss; ``with_lm=False`` gives
    ``λ · L_Rank(-IPS)`` alone (Q26's ablation; L_LM is still computed for the log).
    """
    if lam < 0:
        raise InputError(f"λ must be >= 0, got {lam}")
    scores = identifier_logits(logits, batch["answer_start"], batch["identifier_ids"])
    ranking = rank_loss(scores, batch["target_ranks"], propensity)
    language = lm_loss(logits, batch["labels"])
    total = lam * ranking + language if with_lm else lam * ranking
    return LossParts(total, float(ranking.detach()), float(language.detach()))


def model_loss(
    model: Any,
    batch: dict[str, torch.Tensor],
    *,
    lam: float = DEFAULT_LAMBDA,
    propensity: Any = None,
    with_lm: bool = True,
) -> LossParts:
    """Forward ``model`` on a collated batch; return its :func:`debiasfirst_loss`.

    Only the logits the loss reads are computed: from the last prompt token of the row whose
    answer starts first (it predicts that answer's ``[``) to the end (``logits_to_keep``; with
    left padding that is the answer span alone). The loss equals the one on the full logits.
    ``position_ids`` from the batch are passed on when the model takes them.
    """
    import inspect

    device = next(model.parameters()).device
    forward = inspect.signature(getattr(model, "module", model).forward).parameters
    width = int(batch["input_ids"].shape[1])
    kwargs: dict[str, Any] = {
        "input_ids": batch["input_ids"].to(device),
        "attention_mask": batch["attention_mask"].to(device),
    }
    if "position_ids" in batch and "position_ids" in forward:
        kwargs["position_ids"] = batch["position_ids"].to(device)
    first = 0
    if "logits_to_keep" in forward:
        first = max(int(batch["answer_start"].min()) - 1, 0)
        kwargs["logits_to_keep"] = width - first
    logits = model(**kwargs).logits
    kept = {
        **batch,
        "answer_start": batch["answer_start"] - first,
        "labels": batch["labels"][:, first:],
    }
    return debiasfirst_loss(logits, kept, lam=lam, propensity=propensity, with_lm=with_lm)
