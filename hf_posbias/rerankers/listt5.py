"""ListT5 (Yoon et al., ACL 2024): a Fusion-in-Decoder T5 reranker ranked by tournament sort,
Q26's third fine-tuned baseline (Table 1's ListT5(r=2), Fig. 4). A port of the authors'
reference code (``run_listt5.py`` and ``FiDT5.py`` of github.com/soyoung97/ListT5), step for
step.

**One forward pass.** m = 5 passages, each written as ``Query: <q>, Index: <i>, Context:
<title text>`` (i = 1…m, in the order the pass holds them), are encoded one by one by the T5
encoder; the m encodings are concatenated and one decoder reads them all (Fusion-in-Decoder)
and writes, greedily, the m indices from the least to the most relevant (``3 1 4 2 5``: passage
5 is the best). The last r numbers written are the pass's top r (:func:`top_indices`; an answer
that is not numbers is read, as the reference reads it, as ``1`` r times, and counted).

**The tournament** (:class:`Tournament`, r = 2 as Q26's ListT5(r=2)): the list is cut into
groups of m; each group sends its top r up, and the winners are grouped again until one
passage is left — the best. It is taken out (its slot gets another passage as a dummy), and
the tournament runs again, reusing every group it has already seen (a group is looked up by the
set of its passages), until the top 10 are found; the rest keep their input order. Every pass
shows its passages in input order (the reference sorts each group by input index), so the
model never sees the order the harness put them in except through that sorting. A list of m
passages or fewer is one pass that orders them all.

Example:
    >>> listt5_inputs("why?", [Passage("d1", "because", "Cause")])
    ['Query: why?, Index: 1, Context: Cause because']
    >>> def oracle(index):  # passage p is better than p - 1: least relevant written first
    ...     return " ".join(str(j + 1) for j in sorted(range(len(index)), key=index.__getitem__))
    >>> Tournament(12, oracle).ranking()
    [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 0, 1]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from hf_posbias.rerankers.base import ListwiseReranker, Window
from hf_posbias.rerankers.kinds import RerankerKind, _architectures
from hf_posbias.rerankers.options import RerankerOptions
from hf_posbias.rerankers.records import Passage, WindowRanking

LISTT5_PREFIX = "listt5:"
"""Reranker argument prefix of a ListT5 checkpoint (a folder or a Hub id)."""

PASSAGES_PER_PASS = 5
"""m: passages of one forward pass (ListT5's checkpoints are trained on 5: ``listwise_k``)."""

TOP_R = 2
"""r: passages a pass sends up the tournament (Q26 Table 1's ListT5(r=2); ``out_k``)."""

RERANK_TOP = 10
"""How many of the best the tournament finds one by one (``rerank_topk``)."""

DUMMY_NUMBER = 21
"""The reference's offset of the dummy that takes a winner's slot (``dummy_number``)."""

MAX_INPUT_LENGTH = 512
"""Tokens per passage's input (query and index included) when ``--passage-tokens`` is unset; the
reference truncates at 256 or 512 by dataset (its ``BEIR_LENGTH_MAPPING``)."""


def listt5_inputs(query: str, passages: Sequence[Passage]) -> list[str]:
    """ListT5's input of each passage of one pass, in order (title and text joined by a space,
    as the reference joins them)."""
    return [
        f"Query: {query}, Index: {i}, Context: {f'{p.title} {p.text}'.strip()}"
        for i, p in enumerate(passages, start=1)
    ]


def top_indices(answer: str, k: int) -> tuple[list[int], bool]:
    """The last ``k`` numbers of an answer (1-based positions in the pass, best last) and
    whether the answer was unreadable (then ``[1] * k``, the reference's reading).

    Example:
        >>> top_indices("3 1 4 2 5", 2), top_indices("no", 2)
        (([2, 5], False), ([1, 1], True))
    """
    try:
        return [int(x) for x in answer.split(" ")[-k:]], False
    except ValueError:
        return [1] * k, True


class Tournament:
    """ListT5's tournament sort over one list of ``n`` passages (see the module docstring).

    ``generate(index)`` answers one pass: ``index`` is the input positions of its passages in
    the order shown (sorted, repeats allowed), the answer the model's text. ``cache`` maps the
    set of a pass's positions to its winners (a batch of first-round passes may fill it first).
    """

    def __init__(
        self,
        n: int,
        generate: Callable[[list[int]], str],
        *,
        m: int = PASSAGES_PER_PASS,
        r: int = TOP_R,
        top: int = RERANK_TOP,
        dummy: int = DUMMY_NUMBER,
        cache: dict[frozenset[int], list[int]] | None = None,
    ) -> None:
        self.n, self.m, self.r, self.top, self.dummy = n, m, r, top, dummy
        self._generate = generate
        self.cache = {} if cache is None else cache
        self.excluded: list[int] = []
        self.passes = 0
        self.unreadable = 0

    # The reference's get_out_k: a pass's top k, from the cache or the model.
    def out_k(self, index: list[int], *, use_cache: bool = True, k: int = -1) -> list[int]:
        if len(set(index)) == 1:
            return index[:k]
        index = sorted(index)
        if k == -1:
            k = self.r
        cached = self.cache.get(frozenset(index)) if use_cache else None
        if cached is not None:
            return cached[-k:]
        self.passes += 1
        relative, unreadable = top_indices(self._generate(index), k)
        self.unreadable += unreadable
        try:
            winners = [index[x - 1] for x in relative]
        except IndexError:
            winners = index[-k:]
        self.cache[frozenset(index)] = winners
        return winners

    # The reference's get_leftover_idx: k passages to fill a short group.
    def _leftover(self, exclude: list[int], k: int, full: list[int]) -> list[int]:
        out: list[int] = []
        excluded = set(exclude) | set(self.excluded)
        anyone = not (set(full) - excluded)  # nothing else left: repeat what there is
        i = 0
        while len(out) != k:
            if i == len(full):
                i = 0
            if anyone or full[i] not in excluded:
                out.append(full[i])
            i += 1
        return out

    # The reference's run_one_loop: the best passage of ``full`` by one tournament.
    def best(self, full: list[int]) -> int:
        m, r = self.m, self.r
        if r * 2 > m:
            full = list(dict.fromkeys(full))
        saved: list[int] = []
        for start in range(0, len(full), m):
            group = full[start : start + m]
            if len(group) < m:
                saved += self.out_k(group + self._leftover(group, m - len(group), full))
            elif len(set(group)) == 1:
                saved.append(group[0])
            else:
                saved += self.out_k(group)
        if len(saved) < m:
            return self.out_k(saved + self._leftover(saved, m - len(saved), full))[-1]
        if len(saved) > m:
            return self.best(saved)
        if len(saved) == 1:
            return saved[0]
        return self.out_k(saved)[-1]

    # The reference's check_valid_list: no excluded passage keeps a slot.
    def _replace_excluded(self, full: list[int]) -> list[int]:
        for gone in self.excluded:
            while gone in full:
                value = (gone + 1) % len(full)
                while value in self.excluded:
                    value = (value + 1) % len(full)
                full[full.index(gone)] = value
        return full

    def _one_pass_order(self) -> list[int]:
        """The reference's get_full_order_in_one_loop: a list of m or fewer, in one pass."""
        expanded = list(range(self.n))
        pointer = 0
        while len(expanded) != self.m:
            expanded.append(pointer % self.n)
            pointer += 1
        answer = self.out_k(expanded, use_cache=False, k=self.m)
        return list(dict.fromkeys(reversed(answer)))

    def ranking(self) -> list[int]:
        """Input positions, best first: the tournament's top :data:`RERANK_TOP`, then the rest
        in input order (the reference's ``full_rank``)."""
        if self.n <= 1:
            return list(range(self.n))
        if self.n <= self.m:
            found = self._one_pass_order()
        else:
            found = []
            full = list(range(self.n))
            for _ in range(min(self.top, self.n)):
                winner = self.best(full)
                slot = full.index(winner)
                self.excluded.append(winner)
                if self.n <= self.top and len(self.excluded) == self.n:
                    found.append(winner)
                    break
                if self.r * 2 <= self.m:
                    full[slot] = (winner + self.dummy) % len(full)
                full = self._replace_excluded(full)
                found.append(winner)
        found = list(dict.fromkeys(found))  # a winner found twice counts once
        return found + [i for i in range(self.n) if i not in found]


class ListT5Reranker:
    """A ListT5 checkpoint as a :class:`~hf_posbias.rerankers.base.ListwiseReranker`: each
    window is one tournament (``window_size`` None: the whole list the harness hands it). The
    first-round passes of every window of a call run as batches of ``batch_size`` (the
    reference's batch caching); a window's scores are ``n − rank``; ``appended`` counts the
    window's unreadable answers."""

    window_size: int | None = None

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        max_input_length: int = MAX_INPUT_LENGTH,
        batch_size: int = 8,
    ) -> None:
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.max_input_length, self.batch_size = max_input_length, batch_size

    def describe(self) -> dict[str, Any]:
        """What pins this reranker's output."""
        return {
            "name": self.name,
            "kind": "listt5",
            "passages_per_pass": PASSAGES_PER_PASS,
            "top_r": TOP_R,
            "rerank_top": RERANK_TOP,
            "max_input_length": self.max_input_length,
            "dtype": str(next(self.model.parameters()).dtype).removeprefix("torch."),
        }

    def answers(self, passes: Sequence[tuple[str, Sequence[Passage]]]) -> list[str]:
        """The decoded answer of each pass (a query and its m passages): Fusion-in-Decoder, the
        passages encoded one by one, their encodings concatenated for one greedy decoder."""
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        texts = [text for query, ps in passes for text in listt5_inputs(query, ps)]
        encoded = self.tokenizer(
            texts, padding="longest", truncation=True, max_length=self.max_input_length,
            return_tensors="pt",
        ).to(self.model.device)  # fmt: skip
        width = len(passes[0][1])
        with torch.inference_mode():
            hidden = self.model.get_encoder()(**encoded).last_hidden_state
            fused = hidden.reshape(len(passes), -1, hidden.shape[-1])
            mask = encoded["attention_mask"].reshape(len(passes), -1)
            out = self.model.generate(
                encoder_outputs=BaseModelOutput(last_hidden_state=fused),
                attention_mask=mask,
                max_length=width + 2,
            )
        return self.tokenizer.batch_decode(out, skip_special_tokens=True)

    def rank_windows(self, windows: Sequence[Window]) -> list[WindowRanking]:
        """One tournament per window (see the module docstring)."""
        tournaments = []
        first_round: list[tuple[Tournament, list[int], str, Sequence[Passage]]] = []
        for query, passages in windows:

            def generate(index: list[int], q: str = query, ps: Sequence[Passage] = passages) -> str:
                return self.answers([(q, [ps[i] for i in index])])[0]

            t = Tournament(len(passages), generate)
            tournaments.append(t)
            if len(passages) > PASSAGES_PER_PASS:
                for start in range(0, len(passages) - PASSAGES_PER_PASS + 1, PASSAGES_PER_PASS):
                    group = list(range(start, start + PASSAGES_PER_PASS))
                    first_round.append((t, group, query, passages))
        for start in range(0, len(first_round), self.batch_size):
            batch = first_round[start : start + self.batch_size]
            answers = self.answers([(q, [ps[i] for i in g]) for _, g, q, ps in batch])
            for (t, group, _, _), answer in zip(batch, answers):
                t.passes += 1
                relative, unreadable = top_indices(answer, t.r)
                t.unreadable += unreadable
                try:
                    t.cache[frozenset(group)] = [group[x - 1] for x in relative]
                except IndexError:
                    t.cache[frozenset(group)] = group[-t.r :]
        out = []
        for t, (_, passages) in zip(tournaments, windows):
            order = t.ranking()
            scores = [0.0] * len(passages)
            for rank, i in enumerate(order):
                scores[i] = float(len(passages) - rank)
            out.append(WindowRanking(order, scores, appended=t.unreadable))
        return out


def _is_listt5(name: str, options: RerankerOptions) -> bool:
    from hf_posbias.modeling.loaders import CROSS_ENCODER_PREFIX
    from hf_posbias.modeling.resolve import PACKAGED_CHAT_MODELS

    if name.startswith(LISTT5_PREFIX):
        return True
    if name in PACKAGED_CHAT_MODELS or name.startswith(CROSS_ENCODER_PREFIX):
        return False
    return "FiDT5" in _architectures(name)


def _load_listt5(
    name: str, options: RerankerOptions, corpus_texts: Iterable[str] | None
) -> ListwiseReranker:
    from hf_posbias.devices import default_device, device_info, resolve_inference_dtype
    from hf_posbias.modeling.seq2seq import load_fid_t5

    device = options.device or default_device()
    dtype = resolve_inference_dtype(options.dtype, device_info(device))
    model, tokenizer = load_fid_t5(name.removeprefix(LISTT5_PREFIX), dtype=dtype, device=device)
    return ListT5Reranker(
        model, tokenizer, name=name,
        max_input_length=options.passage_tokens or MAX_INPUT_LENGTH,
        batch_size=options.batch_size,
    )  # fmt: skip


def _listt5_identity(name: str, options: RerankerOptions) -> tuple[str, str]:
    """A local checkpoint's files are hashed; a Hub id is its own name."""
    from hf_posbias.hashing import folder_fingerprint
    from hf_posbias.modeling.resolve import model_display_name

    model = name.removeprefix(LISTT5_PREFIX)
    if Path(model).is_dir():
        return model_display_name(model), f"local-{folder_fingerprint(model)}"
    return model, "no_revision_available"


LISTT5 = RerankerKind(
    name="listt5",
    help=f"{LISTT5_PREFIX}<model> (or a checkpoint whose config.json names FiDT5): ListT5, a "
    "Fusion-in-Decoder T5 ranked by tournament sort (r = 2)",
    matches=_is_listt5,
    load=_load_listt5,
    identity=_listt5_identity,
    order=28,
)
