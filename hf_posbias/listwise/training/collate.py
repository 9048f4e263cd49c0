"""Training batches for DebiasFirst: prompt + target permutation, identifier positions marked.

Each training row (:mod:`~hf_posbias.listwise.training.trainset`) becomes

- ``input_ids`` — the listwise prompt
  (:class:`~hf_posbias.rerankers.prompt.ListwisePrompt`,
  the same ids FIRST scoring uses) followed by the answer ``"[C] > [A] > …"`` and EOS;
- ``labels`` — −100 on the prompt, the answer ids on the answer (L_LM on the answer only);
- ``answer_start`` — the index of the answer's first token ``[``: its logits predict the first
  identifier, exactly where inference reads them;
- ``target_ranks`` — 0-based target rank of the passage at each input position (−1 = padding);
- ``position_ids`` — positions of the real tokens (padding does not shift them).

Prompt and answer are tokenised separately and concatenated, so the training sequence starts
with exactly the scoring prompt; the collator checks that the answer begins with ``[`` and the
best passage's identifier token. Rows are left-padded by default, as FIRST scoring pads them:
then every row's answer sits at the end of the batch and the loss needs the logits of only the
last few positions (:func:`~hf_posbias.listwise.training.losses.model_loss` asks for those alone —
the
full ``[B, T, vocabulary]`` logits of 20-passage windows would dwarf the model). Rows may be
encoded once (:meth:`ListwiseCollator.encode_row`) and padded later: the collator takes either.
``identifier_ids`` (``[K]``) goes with the batch so the loss needs nothing else.

Example:
    >>> from hf_posbias.testing import build_bpe_tokenizer
    >>> tok = build_bpe_tokenizer(); tok.pad_token = tok.eos_token
    >>> collator = ListwiseCollator(tok, max_window=3)
    >>> batch = collator([{"query_id": "q", "query": "fox?", "doc_ids": ["a", "b", "c"],
    ...                    "passages": ["the fox", "a dog", "cats"], "target": ["c", "a", "b"]}])
    >>> batch["target_ranks"].tolist()
    [[1, 2, 0]]
    >>> i = int(batch["answer_start"][0])
    >>> int(batch["input_ids"][0, i + 1]) == collator.identifier_ids[2]  # "[C" is the answer
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.training.finetune_settings import MAX_WINDOW_FLAG, REJECT_LONGER_FLAG
from hf_posbias.listwise.training.trainset import target_ranks
from hf_posbias.rerankers.identifiers import format_permutation
from hf_posbias.rerankers.prompt import ListwisePrompt
from hf_posbias.rerankers.records import Passage
from hf_posbias.settings import flag_name


class ListwiseCollator:
    """Turns training rows into a padded batch for :func:`.losses.debiasfirst_loss`.

    Args:
        tokenizer: the model's tokenizer (needs a pad token).
        style: identifier style.
        passage_tokens: token budget per passage (``None``: no cut).
        max_window: largest window (identifiers checked for this many).
        max_length: refuse (never silently truncate) sequences longer than this.
        system: system message (``None``: RankLLM's).
        padding_side: ``left`` (default, as scoring) or ``right``.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        style: str = "letters",
        passage_tokens: int | None = None,
        max_window: int = 20,
        max_length: int | None = None,
        system: str | None = None,
        padding_side: str = "left",
    ) -> None:
        if tokenizer.pad_token_id is None:
            raise InputError("the tokenizer has no pad token (set it to the EOS token)")
        if padding_side not in ("left", "right"):
            raise InputError(f"padding_side must be left or right, got {padding_side!r}")
        self.padding_side = padding_side
        self.max_window = max_window
        self.max_length = max_length
        self.prompt = ListwisePrompt(
            tokenizer, style=style, passage_tokens=passage_tokens, system=system
        )
        self.identifier_ids = self.prompt.identifier_ids(max_window)

    def encode_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """``input_ids``, ``labels``, ``answer_start`` and ``target_ranks`` of one row."""
        doc_ids = list(row["doc_ids"])
        k = len(doc_ids)
        if k > self.max_window:
            raise InputError(
                f"a training window holds {k} passages, more than {MAX_WINDOW_FLAG} "
                f"{self.max_window}"
            )
        passages = [Passage(d, str(t)) for d, t in zip(doc_ids, row["passages"])]
        ranks = target_ranks(row)
        order = sorted(range(k), key=lambda i: ranks[i])
        prompt_ids = self.prompt.prompt_ids(str(row["query"]), passages)
        tokenizer = self.prompt.tokenizer
        answer = format_permutation(order, self.prompt.style)
        answer_ids = list(tokenizer.encode(answer, add_special_tokens=False))
        if (
            len(answer_ids) < 2
            or answer_ids[0] != self.prompt.open_id
            or (answer_ids[1] != self.identifier_ids[order[0]])
        ):
            raise InputError(
                "the answer does not start with '[' and the first identifier as single tokens "
                "for this tokenizer: the identifier logits could not be read at the answer start"
            )
        if tokenizer.eos_token_id is not None:
            answer_ids.append(tokenizer.eos_token_id)
        input_ids = prompt_ids + answer_ids
        if self.max_length is not None and len(input_ids) > self.max_length:
            raise InputError(
                f"a training sequence has {len(input_ids)} tokens, more than "
                f"{REJECT_LONGER_FLAG} {self.max_length}: lower {flag_name('passage_tokens')}"
            )
        return {
            "input_ids": input_ids,
            "labels": [-100] * len(prompt_ids) + answer_ids,
            "answer_start": len(prompt_ids),
            "target_ranks": ranks,
        }

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """A padded batch of tensors from training rows or :meth:`encode_row` outputs."""
        return self.pad([r if "input_ids" in r else self.encode_row(r) for r in rows])

    def pad(self, encoded: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Pad :meth:`encode_row` outputs into a batch (see the module docstring)."""
        import torch

        width = max(len(e["input_ids"]) for e in encoded)
        k = max(len(e["target_ranks"]) for e in encoded)
        pad = self.prompt.tokenizer.pad_token_id
        input_ids = torch.full((len(encoded), width), pad, dtype=torch.long)
        labels = torch.full((len(encoded), width), -100, dtype=torch.long)
        mask = torch.zeros((len(encoded), width), dtype=torch.long)
        ranks = torch.full((len(encoded), k), -1, dtype=torch.long)
        starts = []
        for b, e in enumerate(encoded):
            n = len(e["input_ids"])
            at = slice(width - n, width) if self.padding_side == "left" else slice(0, n)
            input_ids[b, at] = torch.tensor(e["input_ids"])
            labels[b, at] = torch.tensor(e["labels"])
            mask[b, at] = 1
            starts.append(at.start + e["answer_start"])
            ranks[b, : len(e["target_ranks"])] = torch.tensor(e["target_ranks"])
        return {
            "input_ids": input_ids,
            "attention_mask": mask,
            # Real tokens count from 0 whatever the padding (as in FIRST scoring's left_pad).
            "position_ids": (mask.cumsum(dim=1) - 1).clamp(min=0),
            "labels": labels,
            "answer_start": torch.tensor(starts, dtype=torch.long),
            "target_ranks": ranks,
            "identifier_ids": torch.tensor(self.identifier_ids[:k], dtype=torch.long),
        }
