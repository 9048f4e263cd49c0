"""The memory preflight: before the first optimiser step, make sure a step fits on the device.

A step of the cached InfoNCE loss (GradCache) embeds the batch in mini-batches, so its peak
memory is the static part (fp32 weights, gradients, AdamW's two moments, DDP buckets) plus the
activations of *one* mini-batch. The longest length bin is the worst case. The preflight:

1. lists candidate settings: gradient checkpointing off/on (``--gradient-checkpointing``) ×
   mini-batch sizes (``--mini-batch-size``/``--mini-batch-tokens``; ``auto`` = token budgets of
   ``r × longest sequence`` for ``r`` = the per-device batch, then halves down to 1 row);
2. measures the peak of each candidate it needs — on CUDA a real forward + backward of the loss
   on the longest bin's batch (:func:`cuda_trial`, ``torch.cuda.max_memory_allocated``, an
   out-of-memory error counts as "does not fit"); without a GPU (planning on a login node) an
   analytic estimate (:func:`estimate_trial_peak`) — and adds what the trial cannot allocate yet
   (AdamW states, DDP buckets);
3. keeps, for each checkpointing choice, the largest mini-batch that fits in the budget
   (:func:`usable_bytes`: 90% of the device minus 1 GiB for the CUDA context and allocator
   fragmentation), found by bisection since memory grows with the mini-batch;
4. picks the fastest by a small cost model: checkpointing costs one more forward (×1.25 on
   forward + backward), and a mini-batch of ``t`` tokens runs at ``t / (t + 8192)`` of the
   saturated speed (below a few thousand tokens per call a GPU is launch-bound — the bf16
   mini-batch-32 runs measured on an H100, docs/contributing-notes.md, were slower than fp32 for
   that reason). The model is a heuristic: it only ranks candidates that the measurement says fit.

Fixed settings that do not fit stop the run with a one-line
:class:`~hf_posbias.errors.BudgetError` naming the option to change; a user never sees a CUDA
out-of-memory traceback. On CPU there is no device budget to protect: ``auto`` keeps the former
defaults (no checkpointing, 32-row mini-batches), so CPU runs are not slowed down.

Example:
    >>> from hf_posbias.trainer_base.memory import MiniBatching, choose_memory_plan
    >>> from hf_posbias.trainer_base.compute import ComputeSettings
    >>> gib = 2**30
    >>> def fake_trial(checkpointing, mini):  # 1 GiB per 4k tokens, a quarter with checkpointing
    ...     per_token = gib / 4096 / (4 if checkpointing else 1)
    ...     return int(2 * gib + mini.tokens_on(2048) * per_token)
    >>> plan = choose_memory_plan(ComputeSettings(global_batch=256), measure=fake_trial,
    ...     budget_bytes=10 * gib, state_bytes=gib, per_device_batch=256, longest_tokens=2048,
    ...     method="measured")
    >>> plan.checkpointing, plan.mini_batching.describe()
    (True, '65536 tokens')
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import BudgetError, InputError, PosbiasError
from hf_posbias.settings import flag_name

if TYPE_CHECKING:
    from hf_posbias.trainer_base.compute import ComputeSettings
    from hf_posbias.trainer_base.shapes import ModelShape

GIB = 2**30
HEADROOM = 0.10
"""Share of device memory kept free for allocator fragmentation and non-PyTorch allocations."""
RESERVED_BYTES = GIB
"""CUDA context and library workspaces, which ``max_memory_allocated`` does not see."""
SATURATION_TOKENS = 8192
"""Tokens per forward call at which a GPU runs at half its saturated speed (cost model)."""
CHECKPOINTING_COST = 1.25
"""Forward + backward time with checkpointing relative to without (one extra forward of three)."""
ESTIMATE_MARGIN = 1.2
"""Factor on estimated activations: the formula alone came out 5–18% below the three peaks
measured on an H100 (docs/contributing-notes.md; bert-base bf16 128 rows: 27.4 GiB;
modernbert-base bf16 64 rows + checkpointing: 15.0 GiB; qwen3-0.6b bf16 32 rows +
checkpointing: 19.7 GiB), taking 2,000 tokens per row of the longest bin."""

Measure = Callable[[bool, "MiniBatching"], "int | None"]
"""``measure(checkpointing, mini_batching)`` → peak bytes of a trial step, None = out of memory."""


@dataclass(frozen=True)
class MiniBatching:
    """How the cached loss cuts a batch for embedding: by rows or by a token budget."""

    rows: int | None = None
    tokens: int | None = None

    def tokens_on(self, longest_tokens: int) -> int:
        """Tokens of one mini-batch on the longest bin (rows of ``longest_tokens`` each)."""
        if self.tokens is not None:
            return max(self.tokens, longest_tokens)
        return int(self.rows or 1) * longest_tokens

    def describe(self) -> str:
        """``"32 rows"`` or ``"16384 tokens"``."""
        return f"{self.tokens} tokens" if self.tokens is not None else f"{self.rows} rows"


@dataclass(frozen=True)
class Trial:
    """One measured (or estimated) candidate: its trial peak, None when out of memory."""

    checkpointing: bool
    mini_batching: MiniBatching
    peak_bytes: int | None


@dataclass
class MemoryPlan:
    """The memory settings a run uses and how they were found."""

    checkpointing: bool
    mini_batching: MiniBatching
    loss_chunk_rows: int
    """Rows per chunk of the loss stage (``mini_batch_size`` of the loss)."""
    method: str
    """``measured`` (trial steps on the GPU), ``estimated`` (analytic), or ``cpu`` (no budget)."""
    peak_bytes: int | None = None
    """Projected peak of a training step on the longest bin, optimiser states included."""
    budget_bytes: int | None = None
    trials: list[Trial] = field(default_factory=list)

    def summary(self) -> str:
        """One line for logs, the card and ``run_matrix.py --dry-run``.

        Example:
            >>> MemoryPlan(False, MiniBatching(rows=32), 32, "cpu").summary()
            'checkpointing off, mini-batches of 32 rows (cpu: no device-memory preflight)'
        """
        text = (
            f"checkpointing {'on' if self.checkpointing else 'off'}, "
            f"mini-batches of {self.mini_batching.describe()}"
        )
        if self.method == "cpu":
            return text + " (cpu: no device-memory preflight)"
        if self.peak_bytes is not None and self.budget_bytes is not None:
            what = "trial step" if self.method == "measured" else "candidate"
            text += (
                f"; {self.method} peak {self.peak_bytes / GIB:.1f} of "
                f"{self.budget_bytes / GIB:.1f} GiB usable ({len(self.trials)} {what}"
                f"{'s' if len(self.trials) != 1 else ''})"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        """Plain facts for ``posbias_training.json`` and the card."""
        return {
            "gradient_checkpointing": self.checkpointing,
            "mini_batch_rows": self.mini_batching.rows,
            "mini_batch_tokens": self.mini_batching.tokens,
            "loss_chunk_rows": self.loss_chunk_rows,
            "method": self.method,
            "peak_gib": None if self.peak_bytes is None else round(self.peak_bytes / GIB, 2),
            "budget_gib": None if self.budget_bytes is None else round(self.budget_bytes / GIB, 2),
            "trials": len(self.trials),
            "summary": self.summary(),
        }


def usable_bytes(capacity_bytes: int, cap_gib: float | None = None) -> int:
    """The part of a device's memory a step may use (see the module docstring).

    Example:
        >>> usable_bytes(80 * GIB) / GIB
        71.0
    """
    capacity = capacity_bytes if cap_gib is None else min(capacity_bytes, int(cap_gib * GIB))
    return int(capacity * (1 - HEADROOM)) - RESERVED_BYTES


def optimizer_state_bytes(n_params: int, world_size: int = 1) -> int:
    """Memory a trial step has not allocated yet: AdamW's two fp32 moments (+ DDP buckets)."""
    return 8 * n_params + (4 * n_params if world_size > 1 else 0)


def _cost(checkpointing: bool, tokens: int) -> float:
    return (CHECKPOINTING_COST if checkpointing else 1.0) * (1 + SATURATION_TOKENS / tokens)


def candidate_mini_batches(
    settings: ComputeSettings, per_device_batch: int, longest_tokens: int
) -> list[MiniBatching]:
    """Mini-batchings to try, largest first (one when the user fixed the size).

    Example:
        >>> from hf_posbias.trainer_base.compute import ComputeSettings
        >>> [m.describe() for m in candidate_mini_batches(ComputeSettings(), 6, 100)]
        ['600 tokens', '400 tokens', '200 tokens', '100 tokens']
    """
    if settings.mini_batch_tokens is not None:
        return [MiniBatching(tokens=settings.mini_batch_tokens)]
    if settings.mini_batch_rows is not None:
        return [MiniBatching(rows=min(settings.mini_batch_rows, per_device_batch))]
    rows = [per_device_batch]
    power = 1
    while power * 2 < per_device_batch:
        power *= 2
    while power >= 1:
        if power < rows[-1]:
            rows.append(power)
        power //= 2
    return [MiniBatching(tokens=r * longest_tokens) for r in rows]


def check_checkpointing(settings: ComputeSettings, checkpointing_supported: bool) -> None:
    """One-line error when ``--gradient-checkpointing on`` meets a model without it.

    Example:
        >>> from hf_posbias.trainer_base.compute import ComputeSettings
        >>> try:
        ...     check_checkpointing(ComputeSettings(gradient_checkpointing="on"), False)
        ... except InputError as err:
        ...     print(err)  # doctest: +ELLIPSIS
        --gradient-checkpointing on: this model does not support gradient checkpointing; use ...
    """
    if settings.checkpointing_request is True and not checkpointing_supported:
        flag = flag_name("gradient_checkpointing")
        raise InputError(
            f"{flag} on: this model does not support gradient checkpointing; use {flag} off or auto"
        )


def choose_memory_plan(
    settings: ComputeSettings,
    *,
    measure: Measure,
    budget_bytes: int,
    state_bytes: int,
    per_device_batch: int,
    longest_tokens: int,
    method: str,
    device: str = "the device",
    checkpointing_supported: bool = True,
) -> MemoryPlan:
    """Pick checkpointing and mini-batching that fit ``budget_bytes`` (see the module docstring).

    ``measure`` runs (or estimates) a trial step; ``state_bytes`` is added to each trial peak.
    Raises a one-line :class:`~hf_posbias.errors.BudgetError` when nothing allowed fits.
    """
    request = settings.checkpointing_request
    check_checkpointing(settings, checkpointing_supported)
    options = [request] if request is not None else [False, True]
    if not checkpointing_supported:
        options = [False]
    candidates = candidate_mini_batches(settings, per_device_batch, longest_tokens)
    trials: list[Trial] = []
    measured: dict[tuple[bool, MiniBatching], int | None] = {}

    def peak_of(ckpt: bool, mini: MiniBatching) -> int | None:
        if (ckpt, mini) not in measured:
            peak = measure(ckpt, mini)
            measured[(ckpt, mini)] = peak
            trials.append(Trial(ckpt, mini, peak))
        peak = measured[(ckpt, mini)]
        return None if peak is None else peak + state_bytes

    def fits(ckpt: bool, mini: MiniBatching) -> bool:
        peak = peak_of(ckpt, mini)
        return peak is not None and peak <= budget_bytes

    best: tuple[float, bool, MiniBatching] | None = None
    biggest = candidates[0].tokens_on(longest_tokens)
    for ckpt in options:
        if best is not None and best[0] <= _cost(ckpt, biggest):
            continue  # even its largest mini-batch could not beat what already fits
        # Bisection for the first (largest) fitting candidate: memory falls with the size.
        lo, hi = 0, len(candidates)
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(ckpt, candidates[mid]):
                hi = mid
            else:
                lo = mid + 1
        if lo < len(candidates):
            mini = candidates[lo]
            cost = _cost(ckpt, mini.tokens_on(longest_tokens))
            if best is None or cost < best[0]:
                best = (cost, ckpt, mini)
    if best is None:
        raise BudgetError(_does_not_fit(settings, trials, state_bytes, budget_bytes, device))
    _, ckpt, mini = best
    return MemoryPlan(
        checkpointing=ckpt,
        mini_batching=mini,
        loss_chunk_rows=_loss_chunk_rows(settings, mini, per_device_batch),
        method=method,
        peak_bytes=peak_of(ckpt, mini),
        budget_bytes=budget_bytes,
        trials=trials,
    )


def _loss_chunk_rows(settings: ComputeSettings, mini: MiniBatching, per_device_batch: int) -> int:
    # Rows per chunk of the loss stage: the embedding mini-batch when it is counted in rows; with
    # a token budget the score matrix is small (rows × global batch), so one chunk for the batch.
    if mini.rows is not None:
        return mini.rows
    return min(settings.mini_batch_rows or per_device_batch, per_device_batch)


def _does_not_fit(
    settings: ComputeSettings,
    trials: Sequence[Trial],
    state_bytes: int,
    budget_bytes: int,
    device: str,
) -> str:
    smallest = trials[-1] if trials else None
    if smallest is not None and smallest.peak_bytes is not None:
        need = f"needs {(smallest.peak_bytes + state_bytes) / GIB:.1f} GiB"
    else:
        need = "runs out of memory"
    what = (
        f"checkpointing {'on' if smallest and smallest.checkpointing else 'off'}, "
        f"mini-batches of {smallest.mini_batching.describe()}"
        if smallest
        else "the smallest setting"
    )
    fixes = []
    if settings.mini_batch_tokens is not None:
        fixes.append("lower --mini-batch-tokens")
    elif settings.mini_batch_rows is not None and settings.mini_batch_rows > 1:
        fixes.append("lower --mini-batch-size (or set it to auto)")
    if settings.gradient_checkpointing == "off":
        fixes.append("use --gradient-checkpointing on (or auto)")
    if not fixes:
        fixes.append("lower --max-length, use --precision bf16, or a GPU with more memory")
    return (
        f"memory preflight: a step on the longest bin does not fit in the "
        f"{budget_bytes / GIB:.1f} GiB usable on {device} ({what} {need}): " + "; ".join(fixes)
    )


def cpu_plan(
    settings: ComputeSettings, per_device_batch: int, *, default_rows: int | None = None
) -> MemoryPlan:
    """The memory settings on CPU/MPS (no device-memory preflight): the user's, or for ``auto``
    mini-batches of ``default_rows`` rows (the bi-encoder's former default,
    ``CPU_MINI_BATCH_ROWS``, when ``None``; the listwise trainer passes 1, one window of up to
    k passages per pass), at most the per-device batch. Every trainer of hf-posbias plans its
    CPU memory here.

    Example:
        >>> from hf_posbias.trainer_base.compute import ComputeSettings
        >>> cpu_plan(ComputeSettings(), 8).mini_batching.describe()
        '8 rows'
        >>> cpu_plan(ComputeSettings(), 8, default_rows=1).mini_batching.describe()
        '1 rows'
    """
    from hf_posbias.trainer_base.compute import CPU_MINI_BATCH_ROWS

    if settings.mini_batch_tokens is not None:
        mini = MiniBatching(tokens=settings.mini_batch_tokens)
    else:
        rows = settings.mini_batch_rows or default_rows or CPU_MINI_BATCH_ROWS
        mini = MiniBatching(rows=min(rows, per_device_batch))
    return MemoryPlan(
        checkpointing=bool(settings.checkpointing_request),
        mini_batching=mini,
        loss_chunk_rows=_loss_chunk_rows(settings, mini, per_device_batch),
        method="cpu",
    )


# --------------------------------------------------------------------------- estimate


def estimate_trial_peak(
    shape: ModelShape,
    *,
    precision: str,
    checkpointing: bool,
    mini_batch_tokens: int,
    longest_tokens: int,
    attn_implementation: str,
) -> int:
    """Analytic peak of a trial step (weights, gradients, one mini-batch's activations).

    Per token and layer the backward pass keeps (after Korthikanti et al. 2022, generalised to
    GQA and gated MLPs): two fp32 layer-norm inputs (8h bytes), the half-precision inputs and
    outputs of the projections ``p·(2h + 2·q + 2·kv + m·I)`` with ``m`` = 2 (plain MLP) or 3
    (gated), dropout masks (2h), and with eager/windowed attention the score and probability
    matrices ``heads · span · (2p + 1)``. Checkpointing keeps one fp32 hidden state per layer
    and one layer's activations. Half precision adds autocast's cached weight copies.
    Activations are multiplied by :data:`ESTIMATE_MARGIN`.
    """
    p = 4 if precision == "fp32" else 2
    h, inter, layers = shape.hidden, shape.intermediate, shape.n_layers
    q = shape.n_heads * shape.head_dim
    kv = shape.n_kv_heads * shape.head_dim
    per_layer = 8 * h + p * (2 * h + 2 * q + 2 * kv + (3 if shape.gated_mlp else 2) * inter)
    per_layer += 2 * h
    if attn_implementation == "eager" or shape.attention_window:
        span = min(longest_tokens, shape.attention_window or longest_tokens)
        per_layer += shape.n_heads * span * (2 * p + 1)
    tokens = mini_batch_tokens
    if checkpointing:
        activations = tokens * (layers * 4 * h + per_layer)
    else:
        activations = tokens * (layers * per_layer + 4 * h)
    static = 8 * shape.n_params + (2 * shape.non_embedding_params if p == 2 else 0)
    return int(static + ESTIMATE_MARGIN * activations)


# --------------------------------------------------------------------------- CUDA trial


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is the device running out of memory (allocator or cuBLAS workspace).

    Example:
        >>> is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
        True
        >>> is_out_of_memory(ValueError("shape mismatch"))
        False
    """
    text = str(err)
    return isinstance(err, RuntimeError) and (
        "out of memory" in text.lower() or "CUBLAS_STATUS_ALLOC_FAILED" in text
    )


def out_of_memory_error(plan: MemoryPlan, device: str) -> BudgetError:
    """The one-line error for an out-of-memory during training (after the preflight passed):
    a batch needed more than the longest bin's trial, or another process took memory."""
    fixes = "set --device-memory-gib below the GPU's size to leave more headroom"
    if plan.mini_batching.tokens is not None:
        fixes += f", or --mini-batch-tokens below {plan.mini_batching.tokens}"
    else:
        fixes += f", or --mini-batch-size below {plan.mini_batching.rows}"
    if not plan.checkpointing:
        fixes += ", or --gradient-checkpointing on"
    return BudgetError(f"out of memory during training on {device} ({plan.summary()}): {fixes}")


def cuda_trial(trainer: Any, loss: Any, rows: Sequence[int]) -> Measure:
    """A ``measure`` function: one real forward + backward of ``loss`` on dataset ``rows``.

    The batch is collated by the trainer's own collator (prompts, padding, sorting as in
    training) and run under the trainer's autocast; the peak is
    ``torch.cuda.max_memory_allocated``. Gathering across devices is switched off for the trial
    so that an out-of-memory on one process cannot desynchronise the collectives of the others.
    """
    from hf_posbias.trainer_base.attention import set_activation_checkpointing

    model = trainer.model
    features = [trainer.train_dataset[int(i)] for i in rows]

    def measure(checkpointing: bool, mini: MiniBatching) -> int | None:
        from accelerate.utils import send_to_device

        set_activation_checkpointing(model, checkpointing)
        loss.mini_batch_size = mini.rows or len(rows)
        loss.mini_batch_num_tokens = mini.tokens
        gather = bool(getattr(loss, "gather_across_devices", False))
        if gather:
            loss.gather_across_devices = False

        def step() -> None:
            inputs = send_to_device(trainer.data_collator(features), trainer.args.device)
            with trainer.accelerator.autocast():
                trainer.compute_loss(model, inputs).backward()

        try:
            return cuda_peak_bytes(model, step)
        finally:
            if gather:
                loss.gather_across_devices = True

    return measure


def cuda_peak_bytes(model: Any, step: Callable[[], None]) -> int | None:
    """Peak CUDA memory of one trial ``step`` (forward + backward) of ``model``, from a clean
    slate (gradients dropped, caches emptied, peak statistics reset); ``None`` when the step
    runs out of memory. The memory preflights of every trainer measure their candidates with it.
    """
    import torch

    model.train()
    model.zero_grad(set_to_none=True)
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    try:
        step()  # its activations and loss are freed when it returns
        torch.cuda.synchronize()
        return int(torch.cuda.max_memory_allocated())
    except RuntimeError as err:  # torch.cuda.OutOfMemoryError is a RuntimeError
        if is_out_of_memory(err):
            return None
        raise
    finally:
        model.zero_grad(set_to_none=True)
        gc.collect()
        torch.cuda.empty_cache()


def shared_plan(plan_or_error: MemoryPlan | PosbiasError, world_size: int) -> MemoryPlan:
    """Every rank takes rank 0's preflight outcome: its plan, or its error raised on every rank
    (a rank left out would wait for the others forever).

    Example:
        >>> plan = MemoryPlan(False, MiniBatching(rows=8), 8, "measured")
        >>> shared_plan(plan, world_size=1) is plan
        True
    """
    if world_size > 1:
        from accelerate.utils import broadcast_object_list

        shared = [plan_or_error]
        broadcast_object_list(shared, from_process=0)
        plan_or_error = shared[0]
    if isinstance(plan_or_error, PosbiasError):
        raise plan_or_error
    return plan_or_error
