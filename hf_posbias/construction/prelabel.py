"""Stage 2's reranker pre-label: which recalled passages a reranker-panel majority calls a
positive before the false-negative judges are asked (Z25 App. A.2).

It lives apart from the stages so that a throughput benchmark (``benchmarks/verify_throughput.py``)
can time the same code path the build runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hf_posbias.construction import recipe

if TYPE_CHECKING:
    from hf_posbias.verification.panel import RerankerPanel

_NORMALIZATION_FOR_PAIRS = {"share": "saturate", "softmax": "sigmoid"}
"""Stage 2 scores single (question, passage) pairs: a normalisation over a candidate's three
segments has no meaning there, so it is replaced by its per-pair counterpart."""


def stage2_prelabel(
    panel: RerankerPanel,
    questions: Sequence[str],
    passages: Sequence[Sequence[str]],
    threshold: float,
    progress: bool = False,
) -> tuple[list[list[int]], np.ndarray]:
    """Stage 2's reranker pre-label: which recalled passages a panel majority calls positive.

    All pairs of all questions go to the panel at once (each unique pair scored once per
    member, batched by length across questions); each member's raw score is normalised per
    pair (:data:`_NORMALIZATION_FOR_PAIRS`), and :func:`recipe.prelabel_positive` votes.

    Args:
        panel: the rerankers (BM25 members already fitted on the corpus).
        questions: one text per question.
        passages: per question, the texts of its recalled passages.
        threshold: the normalised score a member's vote needs.
        progress: show the panel's progress bars.

    Returns:
        ``(positives, normalized)``: per question, the indices into its ``passages`` that are
        pre-labelled positive; ``normalized[r, j]`` is member r's score of the j-th pair in
        question-then-passage order.

    Example:
        >>> from hf_posbias.verification.panel import parse_panel
        >>> panel = parse_panel("bm25@saturate")
        >>> passages = ["owls nest in old trees", "fish swim in rivers", "lions hunt at dusk"]
        >>> panel.prepare([{"segments": passages}])
        >>> positives, norm = stage2_prelabel(panel, ["where do owls nest"], [passages], 0.4)
        >>> positives, norm.shape, bool(norm[0, 0] >= 0.4 > norm[0, 1])
        ([[0]], (1, 3), True)
    """
    from hf_posbias.verification.members import member_saturation, normalize_scores

    raw, _ = panel.pair_scores(
        [q for q, texts in zip(questions, passages) for _ in texts],
        [t for texts in passages for t in texts],
        progress,
    )
    normalized = np.empty_like(raw)
    for r, member in enumerate(panel.members):
        method = _NORMALIZATION_FOR_PAIRS.get(member.normalization, member.normalization)
        normalized[r] = normalize_scores(
            raw[r].reshape(-1, 1), method, member_saturation(member)
        ).reshape(-1)
    positives: list[list[int]] = []
    start = 0
    for texts in passages:
        block = normalized[:, start : start + len(texts)]
        positives.append(
            [c for c in range(len(texts)) if recipe.prelabel_positive(block[:, c], threshold)]
        )
        start += len(texts)
    return positives, normalized
