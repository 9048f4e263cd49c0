"""Generation-mode rerankers: the model writes ``"[C] > [A] > …"`` (local LM or endpoint).

RankZephyr-style rerankers emit the whole permutation. Identifiers the model fails to write are
appended in input order (rank_llm's convention) — a known source of position bias, so every
window with such a fallback is counted (:class:`~hf_posbias.rerankers.records.WindowRanking`
``appended``) and the run reports the rate.

- :class:`LocalGenerationReranker` — greedy ``generate`` on a local ``transformers`` causal LM,
  windows batched with left padding.
- :class:`EndpointReranker` — any OpenAI-compatible chat endpoint (vLLM, TGI, ``transformers
  serve``, OpenAI) through the generation package's :class:`OpenAIChatBackend`; ``mode="generate"``
  reads the written permutation, ``mode="first"`` asks for the logprobs of the first token after
  an assistant prefix ``[`` (vLLM's ``continue_final_message``) and scores the identifiers FIRST's
  way. An endpoint returns at most its top-n logprobs: identifiers outside them score −inf and
  are counted (``cut``). An endpoint that refuses logprobs is refused at construction, with one
  probe request, before any heavy work.

Example:
    >>> answer = ranking_from_text("[B] > [A]", ["d1", "d2", "d3"])
    >>> answer.order, answer.appended, answer.scores
    ([1, 0, 2], 1, [2.0, 3.0, 1.0])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hf_posbias.errors import BackendError, InputError, first_line
from hf_posbias.rerankers.base import Window
from hf_posbias.rerankers.first import LocalListwiseLM, left_pad
from hf_posbias.rerankers.identifiers import (
    OPEN,
    format_permutation,
    identifier_labels,
    parse_permutation,
)
from hf_posbias.rerankers.prompt import ListwiseMessages
from hf_posbias.rerankers.records import Passage, WindowRanking, order_by_score
from hf_posbias.settings import flag_name


def ranking_from_text(text: str, doc_ids: Sequence[str], style: str = "letters") -> WindowRanking:
    """A window ranking from a generated permutation; scores are ``k − rank``."""
    parsed = parse_permutation(text, len(doc_ids), style)
    k = len(doc_ids)
    scores = [0.0] * k
    for rank, i in enumerate(parsed.order):
        scores[i] = float(k - rank)
    return WindowRanking(parsed.order, scores, appended=parsed.appended)


def _answer_tokens(tokenizer: Any, k: int, style: str) -> int:
    """Tokens of the longest answer for k passages, plus a little room."""
    return len(tokenizer.encode(format_permutation(list(range(k)), style))) + 4


class LocalGenerationReranker(LocalListwiseLM):
    """Greedy generation of the permutation by a local causal LM (windows batched).

    Takes :class:`~hf_posbias.rerankers.first.LocalListwiseLM`'s arguments; identifiers
    need not
    be single tokens (the answer is parsed as text).
    """

    kind = "generate"

    def __init__(self, model: Any, tokenizer: Any, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        identifier_labels(self.window_size, self.prompt.style)  # k fits the style

    def generate_texts(self, windows: Sequence[Window]) -> list[str]:
        """The model's answer text for each window (greedy)."""
        import torch

        rows = [self.prompt.prompt_ids(q, ps) for q, ps in windows]
        texts = [""] * len(rows)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        device = next(self.model.parameters()).device
        tokenizer = self.prompt.tokenizer
        pad = tokenizer.pad_token_id
        for b in range(0, len(order), self.batch_size):
            chunk = order[b : b + self.batch_size]
            ids, mask, _ = left_pad([rows[i] for i in chunk], pad)
            longest = max(len(windows[i][1]) for i in chunk)
            with torch.inference_mode():
                out = self.model.generate(
                    input_ids=ids.to(device),
                    attention_mask=mask.to(device),
                    max_new_tokens=_answer_tokens(tokenizer, longest, self.prompt.style),
                    do_sample=False,
                    pad_token_id=pad,
                )
            new = out[:, ids.shape[1] :]
            for row, i in enumerate(chunk):
                texts[i] = tokenizer.decode(new[row], skip_special_tokens=True)
        return texts

    def rank_windows(self, windows: Sequence[Window]) -> list[WindowRanking]:
        """Rank each window by the permutation the model writes."""
        texts = self.generate_texts(windows)
        return [
            ranking_from_text(t, [p.doc_id for p in ps], self.prompt.style)
            for t, (_, ps) in zip(texts, windows)
        ]


class EndpointReranker:
    """Listwise reranking through an OpenAI-compatible chat endpoint (see the module docstring).

    Args:
        backend: an :class:`hf_posbias.generation.backends.OpenAIChatBackend`.
        mode: ``generate`` (read the permutation) or ``first`` (first-token logprobs).
        passage_tokens: budget per passage in *words* (the endpoint's tokenizer is not local):
            ``style``, ``passage_tokens`` and ``system`` make its ``prompt``
            (:class:`~hf_posbias.rerankers.prompt.ListwiseMessages`).
        probe: send one small logprobs request at construction (``mode="first"``).
    """

    def __init__(
        self,
        backend: Any,
        *,
        mode: str = "generate",
        style: str = "letters",
        window_size: int = 20,
        passage_tokens: int | None = None,
        system: str | None = None,
        probe: bool = True,
    ) -> None:
        if mode not in ("generate", "first"):
            raise InputError(f"unknown endpoint mode {mode!r}: generate or first")
        identifier_labels(window_size, style)
        self.backend = backend
        self.mode = mode
        self.window_size = window_size
        self.prompt = ListwiseMessages(style=style, passage_tokens=passage_tokens, system=system)
        self.name = str(backend.model)
        if mode == "first" and probe:
            self._probe()

    def describe(self) -> dict[str, Any]:
        """What pins this reranker's output."""
        return {
            "name": self.name,
            "kind": f"endpoint-{self.mode}",
            "window_size": self.window_size,
            "style": self.prompt.style,
            "passage_words": self.prompt.passage_tokens,
            **self.backend.params(),
        }

    def _top_logprobs(self, msgs: list[dict[str, str]], top_n: int) -> dict[str, float]:
        """Top-n first-token logprobs after an assistant prefix ``[`` (one request)."""
        import openai

        from hf_posbias.generation.backends import EndpointUnreachable

        client = self.backend._get_client()  # the backend owns the key and base URL
        try:
            response = client.chat.completions.create(
                model=self.backend.model,
                messages=[*msgs, {"role": "assistant", "content": OPEN}],
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=top_n,
                extra_body={"continue_final_message": True, "add_generation_prompt": False},
            )
        except openai.APIConnectionError as err:
            # Down, not unable: another --mode would not help.
            raise EndpointUnreachable(
                f"endpoint {self.backend.url} is unreachable ({first_line(err)}): start the "
                f"server or fix {flag_name('base_url')}"
            ) from None
        except openai.APIStatusError as err:
            raise BackendError(
                f"endpoint {self.backend.url} refused a logprobs request: {first_line(err)}"
            ) from None
        choice = response.choices[0]
        content = getattr(getattr(choice, "logprobs", None), "content", None)
        if not content or not content[0].top_logprobs:
            raise BackendError(
                f"endpoint {self.backend.url} returned no logprobs: it cannot score the FIRST "
                f"way; use {flag_name('mode')} generate"
            )
        return {
            entry.token.strip(): float(entry.logprob)
            for entry in content[0].top_logprobs
            if entry.token.strip()
        }

    def _probe(self) -> None:
        passages = [Passage("a", "first passage"), Passage("b", "second passage")]
        from hf_posbias.generation.backends import EndpointUnreachable

        try:
            self._top_logprobs(self.prompt.messages("probe", passages), 2)
        except EndpointUnreachable:
            raise
        except BackendError as err:
            raise BackendError(f"{first_line(err)} (use {flag_name('mode')} generate)") from None

    def _first(self, window: Window) -> WindowRanking:
        query, passages = window
        labels = identifier_labels(len(passages), self.prompt.style)
        top = self._top_logprobs(self.prompt.messages(query, passages), min(len(labels), 20))
        scores = [top.get(label, -math.inf) for label in labels]
        cut = sum(1 for s in scores if s == -math.inf)
        order = order_by_score(scores, [p.doc_id for p in passages])
        return WindowRanking(order, scores, cut=cut)

    def rank_windows(self, windows: Sequence[Window]) -> list[WindowRanking]:
        """Rank each window through the endpoint (requests run concurrently in generate mode)."""
        if self.mode == "first":
            return [self._first(w) for w in windows]
        k_max = max((len(ps) for _, ps in windows), default=1)
        answers = self.backend.complete_many(
            [self.prompt.messages(q, ps) for q, ps in windows],
            temperature=0.0,
            top_p=1.0,
            max_tokens=8 * k_max,
        )
        out = []
        for answer, (_, passages) in zip(answers, windows):
            if isinstance(answer, BackendError):
                raise BackendError(f"{self.name}: {first_line(answer)}")
            out.append(ranking_from_text(answer, [p.doc_id for p in passages], self.prompt.style))
        return out
