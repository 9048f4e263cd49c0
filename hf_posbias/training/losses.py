"""The bi-encoder trainer's InfoNCE losses: YHP26 App. D's cached MNRL and its IPS-weighted form.

YHP26 trains with ``CachedMultipleNegativesRankingLoss(scale=20)`` (in-batch negatives,
gradient caching). ``--config ips`` multiplies every query's InfoNCE term by its
inverse-propensity weight (:func:`hf_posbias.training.train.ips_weights`), passed to the loss
as the dataset's ``label`` column: :class:`WeightedCachedMNRL`. With every weight 1 it is the
plain cached MNRL (a test checks both agree).

This module imports torch and sentence-transformers at the top: only the training run (and
its tests) import it, never ``posbias --help``.

Example:
    >>> issubclass(WeightedCachedMNRL, CachedMultipleNegativesRankingLoss)
    True
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from sentence_transformers import util as st_util
from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss


class WeightedCachedMNRL(CachedMultipleNegativesRankingLoss):
    """InfoNCE with in-batch negatives where query i's term is multiplied by ``labels[i]``.

    loss = Σ_i w_i · CE(scale · cos(q_i, d_·), i) / batch_size — the plain cached MNRL when every
    w_i is 1 (one direction, query→document, no hardness terms: the loss's defaults, the project's
    reading of YHP26 App. D). Gradient caching is unchanged: the loss is computed in mini-batches
    and back-propagated into the cached embeddings; the embedding mini-batches may be cut by rows or
    by tokens (``mini_batch_num_tokens``) like the parent's. With
    ``gather_across_devices`` the documents of all processes are gathered (with gradients)
    and each process scores its own queries against all of them, as the parent does.
    """

    def calculate_loss(
        self,
        reps: list[list[torch.Tensor]],
        labels: torch.Tensor | None = None,
        *,
        with_backward: bool = False,
    ) -> torch.Tensor:
        queries = torch.cat(reps[0])
        docs = [torch.cat(r) for r in reps[1:]]
        n = len(queries)
        offset = 0
        if self.gather_across_devices:
            # Looked up in sentence_transformers.util at call time (tests simulate two ranks).
            docs = [st_util.all_gather_with_grad(d) for d in docs]
            offset = st_util.get_rank() * n
        docs_all = torch.cat(docs)
        weights = (
            torch.ones(n, device=queries.device)
            if labels is None
            else labels.to(queries.device, dtype=queries.dtype)
        )
        losses = []
        for begin in range(0, n, self.mini_batch_size):
            end = min(begin + self.mini_batch_size, n)
            scores = self.similarity_fct(queries[begin:end], docs_all) * self.scale
            target = torch.arange(offset + begin, offset + end, device=queries.device)
            per_query = F.cross_entropy(scores, target, reduction="none")
            loss = (per_query * weights[begin:end]).sum() / n
            if with_backward:
                loss.backward()
                loss = loss.detach()
            losses.append(loss)
        return sum(losses)


def build_loss(
    model: Any,
    scale: float,
    mini_batch_size: int,
    weighted: bool = False,
    gather_across_devices: bool = False,
) -> CachedMultipleNegativesRankingLoss:
    """The run's InfoNCE: ``CachedMultipleNegativesRankingLoss``, or :class:`WeightedCachedMNRL`.

    Both take ``mini_batch_num_tokens`` later (the memory preflight sets it with
    ``mini_batch_size``).
    """
    loss_class = WeightedCachedMNRL if weighted else CachedMultipleNegativesRankingLoss
    return loss_class(
        model,
        scale=scale,
        mini_batch_size=mini_batch_size,
        gather_across_devices=gather_across_devices,
    )


def weighted_cached_mnrl(
    model: Any, scale: float, mini_batch_size: int, gather_across_devices: bool = False
) -> CachedMultipleNegativesRankingLoss:
    """A :class:`WeightedCachedMNRL` (``build_loss(..., weighted=True)``)."""
    return build_loss(model, scale, mini_batch_size, True, gather_across_devices)
