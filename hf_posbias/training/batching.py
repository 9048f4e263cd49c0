"""Chunk-aware batches: every batch from one length bin, no positive document twice in a batch.

YHP26 draws every batch from a single length bin so that in-batch negatives have the same length
as the positive (otherwise length alone separates them). Each document also appears with up to
three queries (one per target position); two of its rows in one batch make the document a false
negative for itself. sentence-transformers' ``no_duplicates`` sampler compares *texts*, and the
ICT positives of one document differ slightly, so the check here is on ``doc_id``.

Design — one batch sampler over one flat dataset, with the grouping keys kept *outside* the
dataset. The trainer's dataset holds only the text columns (``query``, ``positive``; plus a
numeric ``label`` for IPS weights), because every other column would be tokenised and fed to the
loss as text. The sampler gets ``length_bin``, ``doc_id`` and each row's token length as plain
lists in the same row order through :class:`SingleBinBatchSamplerFactory`, which the trainer
calls like any batch sampler (``SentenceTransformerTrainingArguments(batch_sampler=factory)``).
Per epoch (seeded by ``seed`` and the epoch number, so reruns are identical):

1. rows of each bin are shuffled and packed greedily into *global* batches of ``batch_size``
   rows (the in-batch negatives of one step over all processes), skipping a row whose ``doc_id``
   is already in the batch (it goes first into the next batch) — so no document appears twice
   among the rows the loss compares, across processes too;
2. under DDP (``world_size`` W > 1) a global batch is trimmed to a multiple of W (only a bin's
   short tail batch loses rows: at most W − 1, counted in :attr:`BatchPlan.dropped_rows`; the
   embeddings gathered across processes must have equal shapes) and dealt to the W ranks;
3. rows are sorted by length, longest first, inside every batch (the rank dealing is
   round-robin over the sorted rows, so every rank gets the same mix of lengths): the cached
   loss cuts a batch into consecutive mini-batches, each padded to its longest row, so sorted
   rows waste little padding;
4. steps of all bins are shuffled together and flattened, each step as W consecutive batches.

Accelerate gives rank r the batches r, r+W, r+2W, … of this sequence, so at every optimisation step
all ranks sit in the same bin (a DatasetDict + the multi-dataset sampler cannot guarantee that)
and hold the same number of rows.

The sampler reports ``batch_size = None``: batches have variable length (the tail of a bin), and
Accelerate's shard wrapper only keeps short batches in that mode.

Example:
    >>> from hf_posbias.training.batching import plan_batches
    >>> bins = ["short"] * 6 + ["long"] * 4
    >>> docs = ["a", "a", "b", "c", "d", "e", "f", "f", "g", "h"]
    >>> plan = plan_batches(bins, docs, batch_size=3, seed=42)
    >>> all(len({bins[i] for i in b}) == 1 for b in plan.batches)
    True
    >>> all(len({docs[i] for i in b}) == len(b) for b in plan.batches)
    True
    >>> sorted(i for b in plan.batches for i in b) == list(range(10))
    True
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class BatchPlan:
    """The batches of one epoch (``world_size`` consecutive per-rank batches per step)."""

    batches: list[list[int]]
    dropped_rows: int = 0
    bins: dict[str, int] = field(default_factory=dict)
    """Number of optimisation steps per bin."""


def _no_duplicate_batches(
    rows: Sequence[int], doc_ids: Sequence[Hashable], batch_size: int
) -> list[list[int]]:
    # One pass, O(n): a row whose document is already in the current batch is held back and
    # placed first in the next batch, so the shuffled order is disturbed as little as possible.
    queue: deque[int] = deque(rows)
    held: deque[int] = deque()
    batches: list[list[int]] = []
    while queue or held:
        pending, held = held, deque()
        batch: list[int] = []
        seen: set[Hashable] = set()
        while len(batch) < batch_size and (pending or queue):
            row = pending.popleft() if pending else queue.popleft()
            if doc_ids[row] in seen:
                held.append(row)
            else:
                seen.add(doc_ids[row])
                batch.append(row)
        held.extend(pending)
        batches.append(batch)
    return batches


def _deal(batch: list[int], world_size: int, lengths: Sequence[int] | None) -> list[list[int]]:
    """Sort ``batch`` longest first and deal it round-robin to ``world_size`` ranks."""
    if lengths is not None:
        batch = sorted(batch, key=lambda row: -lengths[row])  # stable: ties keep shuffled order
    return [batch[rank::world_size] for rank in range(world_size)]


def plan_batches(
    bins: Sequence[Hashable],
    doc_ids: Sequence[Hashable],
    batch_size: int,
    seed: int = 42,
    epoch: int = 0,
    world_size: int = 1,
    drop_last: bool = False,
    lengths: Sequence[int] | None = None,
) -> BatchPlan:
    """Plan one epoch of single-bin, duplicate-free, length-sorted batches (module docstring).

    Args:
        bins: the length bin of every row.
        doc_ids: the positive document of every row.
        batch_size: rows of one optimisation step over all ranks (the global batch).
        seed: base seed; the plan depends only on ``(seed, epoch)`` and the inputs.
        epoch: epoch number (a new shuffle each epoch).
        world_size: number of DDP ranks; each step is W per-rank batches of equal size.
        drop_last: drop global batches shorter than ``batch_size`` (their rows are counted).
        lengths: each row's length (tokens); batches are sorted by it, longest first.
    """
    if len(bins) != len(doc_ids) or (lengths is not None and len(lengths) != len(bins)):
        raise ValueError(
            f"{len(bins)} bins, {len(doc_ids)} doc ids and "
            f"{'no' if lengths is None else len(lengths)} lengths"
        )
    if batch_size < 1 or world_size < 1:
        raise ValueError("batch_size and world_size must be positive")
    rng = random.Random(f"posbias-batches:{seed}:{epoch}")
    by_bin: dict[Hashable, list[int]] = {}
    for row, bin_name in enumerate(bins):
        by_bin.setdefault(bin_name, []).append(row)
    steps: list[list[list[int]]] = []
    dropped = 0
    per_bin: dict[str, int] = {}
    for bin_name in sorted(by_bin, key=str):  # sorted: dict order must not depend on row order
        rows = by_bin[bin_name]
        rng.shuffle(rows)
        n_steps = 0
        for batch in _no_duplicate_batches(rows, doc_ids, batch_size):
            keep = len(batch) - len(batch) % world_size
            if drop_last and len(batch) < batch_size:
                keep = 0
            dropped += len(batch) - keep
            if keep:
                steps.append(_deal(batch[:keep], world_size, lengths))
                n_steps += 1
        per_bin[str(bin_name)] = n_steps
    rng.shuffle(steps)
    return BatchPlan([batch for step in steps for batch in step], dropped, per_bin)


class SingleBinBatchSampler:
    """A torch-compatible batch sampler yielding :func:`plan_batches` batches, epoch by epoch.

    ``batch_size`` is the global batch (all ranks); the sampler yields per-rank batches.

    It needs no torch import: the DataLoader only iterates it and asks its length. ``set_epoch``
    is called by the trainer at every epoch start. ``history`` (when ``record`` is set) keeps every
    batch yielded, which the tests use to inspect a real training run.
    """

    def __init__(
        self,
        bins: Sequence[Hashable],
        doc_ids: Sequence[Hashable],
        batch_size: int,
        seed: int = 42,
        world_size: int = 1,
        drop_last: bool = False,
        record: list[list[int]] | None = None,
        lengths: Sequence[int] | None = None,
    ) -> None:
        self.bins = list(bins)
        self.doc_ids = list(doc_ids)
        self.lengths = list(lengths) if lengths is not None else None
        self.nominal_batch_size = batch_size
        # None = "batches of dynamic length" for Accelerate's BatchSamplerShard (see module doc).
        self.batch_size = None
        self.drop_last = False
        self._drop_short = drop_last
        self.seed = seed
        self.world_size = world_size
        self.epoch = 0
        self.history = record
        self._plans: dict[int, BatchPlan] = {}

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose shuffle the next iteration uses."""
        self.epoch = int(epoch)

    def plan(self) -> BatchPlan:
        """The (cached) plan of the current epoch."""
        if self.epoch not in self._plans:
            self._plans = {
                self.epoch: plan_batches(
                    self.bins,
                    self.doc_ids,
                    self.nominal_batch_size,
                    seed=self.seed,
                    epoch=self.epoch,
                    world_size=self.world_size,
                    drop_last=self._drop_short,
                    lengths=self.lengths,
                )
            }
        return self._plans[self.epoch]

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.plan().batches:
            if self.history is not None:
                self.history.append(list(batch))
            yield list(batch)

    def __len__(self) -> int:
        return len(self.plan().batches)


@dataclass
class SingleBinBatchSamplerFactory:
    """Pass as ``SentenceTransformerTrainingArguments(batch_sampler=...)``.

    sentence-transformers calls it with ``(dataset, batch_size=, drop_last=, valid_label_columns=,
    generator=, seed=)`` where ``batch_size`` is the per-device batch; the global batch is
    ``batch_size × world_size``. The grouping keys and lengths come from here, not from the
    dataset, so they never reach the loss as text.
    """

    bins: Sequence[Hashable]
    doc_ids: Sequence[Hashable]
    world_size: int = 1
    record: list[list[int]] | None = None
    lengths: Sequence[int] | None = None

    def __call__(
        self,
        dataset: Any,
        batch_size: int,
        drop_last: bool = False,
        valid_label_columns: list[str] | None = None,
        generator: Any = None,
        seed: int = 42,
    ) -> SingleBinBatchSampler:
        if len(dataset) != len(self.bins):
            raise ValueError(
                f"the batch sampler was built for {len(self.bins)} rows, the dataset has "
                f"{len(dataset)}"
            )
        return SingleBinBatchSampler(
            self.bins,
            self.doc_ids,
            batch_size * self.world_size,
            seed=seed,
            world_size=self.world_size,
            drop_last=drop_last,
            record=self.record,
            lengths=self.lengths,
        )
