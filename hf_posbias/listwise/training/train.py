"""DebiasFirst fine-tuning (Q26 Eq. 2, 4, 6), the listwise kind's Accelerate entry point.

``accelerate launch -m hf_posbias.listwise.training.train`` (``python -m`` on one process),
mirroring :mod:`hf_posbias.training.train`: the same names for the same roles
(:class:`RunInputs`, :func:`prepare_run`, :func:`memory_preflight`, :func:`card_info`,
:class:`TrainResult`).

One function, :func:`train_listwise`, does the work for the module entry point (also under
``accelerate launch``), for ``posbias listwise train`` and for the demo; its settings are one
dataclass, :class:`~hf_posbias.listwise.training.finetune_settings.ListwiseTrainingSettings` (flags
generated from it, the hardware ones shared with every trainer of hf-posbias).

The run: a causal LM is fine-tuned with the transformers ``Trainer`` on listwise windows —
prompt (the exact FIRST scoring prompt) + the target permutation ``"[C] > [A] > …"`` — with
the loss λ·L_Rank(-IPS) + L_LM (:func:`hf_posbias.listwise.training.losses.model_loss`): L_LM is the
next-token loss on the answer tokens only, L_Rank reads the identifier logits at the answer's
``[``, where FIRST scoring reads them, and with ``--propensity`` each pair is divided by
ω[i, r_i]·ω[j, r_j] (Eq. 4). NEFTune is the Trainer's ``neftune_noise_alpha``.

**Pos-Aug on the fly.** ``--pos-aug n`` turns every window into its n rotated permutations
(:func:`hf_posbias.listwise.training.augment.augment_rows`, the function behind ``posbias listwise
augment``, seeded by ``--seed``) when the run starts; data already written by ``augment``
(rows with ``rotation``) is refused with ``--pos-aug`` (that would rotate the rotations), and
its n is read from the folder's ``info.json`` for the card. Either way the same rows are
trained on.

**Checks before the model loads** (:func:`prepare_run`): precision and attention
kernel against the hardware, the global batch against the processes, the training set, Pos-Aug
divisibility, the propensity matrix (shape = the windows' k, Σω = 1, no zero on a visited
(input position, target rank) cell — naming ``--smoothing``), and, with the tokenizer alone,
the identifier tokens, the answer encoding and every sequence's length. Each is a one-line
:class:`~hf_posbias.errors.InputError`.

**Memory.** Windows per forward pass (``--mini-batch-size``) and gradient checkpointing come
from :mod:`hf_posbias.trainer_base.memory`: on a GPU its preflight measures forward + backward
passes of the longest windows (:func:`cuda_window_trial`); on a CPU ``auto`` is one window per
pass, no checkpointing. The rest of each process's share of ``--global-batch`` is gradient
accumulation.

The checkpoint folder gets the model, the tokenizer, ``posbias_listwise_training.json`` (the
facts; written last, it marks a finished run) and the model card (``README.md`` from
``model_cards/listwise.md.j2``); ``posbias listwise test --reranker OUT`` scores with it.

The trainer is :class:`~hf_posbias.listwise.training.trainer.DebiasFirstTrainer`; what is not
particular to listwise windows — output folder, seeding, the schedule's arguments, the memory
preflight's agreement between processes, timing, saving on rank 0, the card, the entry point —
is the skeleton both trainers share, :mod:`hf_posbias.trainer_base.scaffold`.

Example (tiny model; see tests/listwise/test_listwise_train.py for the data folder)::

    from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings
    from hf_posbias.listwise.training.train import train_listwise
    result = train_listwise(ListwiseTrainingSettings(
        model="smollm2-135m", data="lw/train", out="ckpt/debiasfirst", global_batch=8,
        propensity="lw/omega/propensity.json", pos_aug=4, max_steps=100, passage_tokens=48))
    print(result.steps, result.train_loss, result.rank_loss, result.lm_loss)
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.training.finetune_settings import MAX_WINDOW_FLAG, ListwiseTrainingSettings
from hf_posbias.settings import flag_name

if TYPE_CHECKING:
    import numpy as np

    from hf_posbias.listwise.training.card import ListwiseCardInfo
    from hf_posbias.listwise.training.collate import ListwiseCollator
    from hf_posbias.trainer_base.compute import ResolvedCompute
    from hf_posbias.trainer_base.memory import Measure, MemoryPlan

logger = logging.getLogger("hf_posbias.listwise.training.train")


@dataclass
class RunInputs:
    """What a run checked and computed before any model weight is loaded."""

    compute: ResolvedCompute
    out: Path
    model_folder: str
    rows: list[dict[str, Any]]
    source_rows: int
    data_info: dict[str, Any]
    pos_aug: int
    """Rotations per window of the trained rows (1: none)."""
    pos_aug_source: str
    omega: np.ndarray | None
    propensity_info: dict[str, Any] | None
    collator: ListwiseCollator
    encoded: list[dict[str, Any]]
    longest_tokens: int
    attn_implementation: str | None
    window_sizes: list[int] = field(default_factory=list)


@dataclass
class TrainResult:
    """What a run produced and measured."""

    out_dir: str
    model: str
    steps: int
    train_loss: float
    rank_loss: float
    """Mean L_Rank(-IPS) over the run's forward passes (before λ)."""
    lm_loss: float
    """Mean L_LM (answer tokens) over the run's forward passes."""
    train_seconds: float
    n_rows: int
    world_size: int
    precision: str
    attn_implementation: str
    per_device_batch: int
    micro_batch: int
    accumulation: int
    memory: MemoryPlan
    device: str
    card_path: str | None = None
    log_history: list[dict[str, Any]] = field(default_factory=list)
    epochs_trained: float = 0.0
    """Passes over the training windows the run made (the Trainer's epoch counter at the end)."""

    @property
    def seconds_per_step(self) -> float:
        """Wall time per optimisation step."""
        return self.train_seconds / self.steps if self.steps else 0.0


# --------------------------------------------------------------------------- checks


def _data_info(data: str) -> dict[str, Any]:
    from hf_posbias.listwise.training.trainset import INFO_FILE
    from hf_posbias.rows.readers import read_json

    path = Path(data) / INFO_FILE
    if not path.is_file():
        return {}
    info = read_json(path)
    if not isinstance(info, dict):
        raise InputError(f"{path}: expected a JSON object, got {type(info).__name__}")
    return info


def _pos_aug_rows(
    settings: ListwiseTrainingSettings, rows: list[dict[str, Any]], info: dict[str, Any]
) -> tuple[list[dict[str, Any]], int, str]:
    """The rows to train on, their rotations per window, and where the rotations come from."""
    from hf_posbias.listwise.training.augment import augment_rows

    in_data = int(info.get("pos_aug_groups") or 0)
    already = any("rotation" in row for row in rows)
    method = settings.augmentation_method
    if method != "none":
        n = int(settings.pos_aug or 1)
        if already:
            groups = f" ({flag_name('groups')} {in_data})" if in_data else ""
            raise InputError(
                f"{settings.data} was already augmented by posbias listwise augment{groups}: "
                f"drop {flag_name('pos_aug')} {n}, or pass the un-augmented set"
            )
        augmented = augment_rows(
            rows, n, seed=settings.seed, flag=flag_name("pos_aug"), method=method
        )
        if method == "rand-aug":
            return augmented, n, "RandAug: n seeded random shuffles per window (--augmentation)"
        return augmented, n, "on the fly (--pos-aug)"
    if already:
        return rows, in_data or 1, "in the data (posbias listwise augment)"
    return rows, 1, "none"


def _propensity(
    settings: ListwiseTrainingSettings, rows: Sequence[dict[str, Any]], sizes: list[int]
) -> tuple[Any, dict[str, Any] | None]:
    from hf_posbias.listwise.experiments.propensity import check_propensity_support, load_propensity
    from hf_posbias.listwise.training.finetune_settings import DEFAULT_IPS_NORMALIZATION
    from hf_posbias.listwise.training.losses import mean_ips_weight, normalize_propensity
    from hf_posbias.listwise.training.trainset import target_ranks
    from hf_posbias.rows.readers import read_json

    path = settings.propensity_file
    if path is None:
        return None, None
    if len(sizes) != 1:
        raise InputError(
            f"{flag_name('propensity')} needs training windows of one size (the matrix is k×k); "
            f"{settings.data} holds windows of {', '.join(map(str, sizes))} passages"
        )
    omega = load_propensity(path, sizes[0])
    ranks = [target_ranks(row) for row in rows]
    check_propensity_support(omega, ranks, where=f"the training data {settings.data}")
    raw = read_json(path)  # load_propensity read and checked it a moment ago
    keys = ("k", "n", "queries", "smoothing", "diagonal_mass", "empty_cells", "reranker", "task")
    details = {key: raw[key] for key in keys if isinstance(raw, dict) and key in raw}
    how = settings.ips_normalization or DEFAULT_IPS_NORMALIZATION
    details["ips_normalization"] = how
    details["mean_ips_weight"] = mean_ips_weight(omega, ranks)
    return normalize_propensity(omega, ranks, how), {"file": str(path), **details}


def prepare_run(settings: ListwiseTrainingSettings, *, show_progress: bool = True) -> RunInputs:
    """Every check that needs no model weights (see the module docstring)."""
    from hf_posbias.listwise.training.collate import ListwiseCollator
    from hf_posbias.listwise.training.trainset import read_train_set
    from hf_posbias.modeling.causal_lm import causal_lm_folder, context_length
    from hf_posbias.modeling.loaders import load_tokenizer_config
    from hf_posbias.progress import progress
    from hf_posbias.trainer_base.attention import model_attn_implementation
    from hf_posbias.trainer_base.scaffold import output_folder

    compute = settings.resolve()
    out = output_folder(settings.out)
    source = read_train_set(settings.data)
    info = _data_info(settings.data)
    sizes = sorted({len(row["doc_ids"]) for row in source})
    if sizes[-1] > settings.window:
        raise InputError(
            f"{settings.data} holds windows of {sizes[-1]} passages, more than "
            f"{MAX_WINDOW_FLAG} {settings.window}"
        )
    rows, pos_aug, pos_aug_source = _pos_aug_rows(settings, source, info)
    omega, propensity_info = _propensity(settings, rows, sizes)

    folder = causal_lm_folder(settings.model)
    tokenizer, config = load_tokenizer_config(folder, settings.model, pad_with_eos=True)
    collator = ListwiseCollator(
        tokenizer,
        style=settings.identifiers,
        passage_tokens=settings.passage_tokens,
        max_window=settings.window,
        max_length=settings.max_length or context_length(config),
    )
    encoded = [
        collator.encode_row(row)
        for row in progress(
            rows,
            total=len(rows),
            desc="encoding windows",
            unit="window",
            disable=not show_progress or len(rows) < 200,
        )
    ]
    longest = max(len(e["input_ids"]) for e in encoded)
    attn = model_attn_implementation(
        config, compute.attn_implementation, requested=compute.attn_requested
    )
    return RunInputs(
        compute=compute,
        out=out,
        model_folder=folder,
        rows=rows,
        source_rows=len(source),
        data_info=info,
        pos_aug=pos_aug,
        pos_aug_source=pos_aug_source,
        omega=omega,
        propensity_info=propensity_info,
        collator=collator,
        encoded=encoded,
        longest_tokens=longest,
        attn_implementation=attn,
        window_sizes=sizes,
    )


# --------------------------------------------------------------------------- memory


def windows_per_pass(plan: MemoryPlan, longest_tokens: int) -> int:
    """Windows per forward pass a memory plan stands for (a token budget ÷ the longest window).

    Example:
        >>> from hf_posbias.trainer_base.memory import MemoryPlan, MiniBatching
        >>> windows_per_pass(MemoryPlan(False, MiniBatching(tokens=5000), 1, "cpu"), 1200)
        4
    """
    mini = plan.mini_batching
    if mini.rows is not None:
        return max(1, mini.rows)
    return max(1, int(mini.tokens or 0) // max(1, longest_tokens))


def split_batch(per_device_batch: int, windows: int) -> tuple[int, int]:
    """``(windows per forward pass, accumulation steps)``: the largest divisor of the
    per-device batch that is at most ``windows``, and the passes that make up the step.

    Example:
        >>> split_batch(8, 3), split_batch(6, 4), split_batch(4, 16)
        ((2, 4), (3, 2), (4, 1))
    """
    cap = max(1, min(windows, per_device_batch))
    micro = max(d for d in range(1, cap + 1) if per_device_batch % d == 0)
    return micro, per_device_batch // micro


def memory_preflight(
    settings: ListwiseTrainingSettings,
    compute: ResolvedCompute,
    *,
    longest_tokens: int,
    measure: Measure | None = None,
    n_params: int = 0,
    checkpointing_supported: bool = True,
) -> MemoryPlan:
    """Checkpointing and windows per pass: the GPU preflight (``measure``), or the CPU rule.

    Example:
        >>> from hf_posbias.devices import DeviceInfo
        >>> s = ListwiseTrainingSettings(model="m", data="d", out="o", global_batch=8)
        >>> plan = memory_preflight(s, s.resolve(DeviceInfo("cpu", "cpu"), 1), longest_tokens=900)
        >>> plan.checkpointing, plan.mini_batching.rows
        (False, 1)
    """
    from hf_posbias.trainer_base.memory import (
        check_checkpointing,
        choose_memory_plan,
        cpu_plan,
        optimizer_state_bytes,
        usable_bytes,
    )

    if compute.device.kind != "cuda" or measure is None:
        check_checkpointing(settings, checkpointing_supported)
        return cpu_plan(settings, compute.per_device_batch, default_rows=1)
    return choose_memory_plan(
        settings,
        measure=measure,
        budget_bytes=usable_bytes(
            int(compute.device.total_memory or 0), settings.device_memory_gib
        ),
        state_bytes=optimizer_state_bytes(n_params, compute.world_size),
        per_device_batch=compute.per_device_batch,
        longest_tokens=longest_tokens,
        method="measured",
        device=compute.device.describe(),
        checkpointing_supported=checkpointing_supported,
    )


def cuda_window_trial(
    model: Any,
    run: RunInputs,
    *,
    lam: float,
    propensity: Any,
    precision: str,
) -> Measure:
    """A ``measure`` for the preflight: forward + backward of the longest windows on the GPU.

    ``measure(checkpointing, mini_batching)`` pads as many of the longest encoded windows as
    the candidate holds, runs :func:`~hf_posbias.listwise.training.losses.model_loss` under
    autocast in
    ``precision`` and backpropagates; the peak is ``torch.cuda.max_memory_allocated`` (None on
    an out-of-memory error).
    """
    import torch

    from hf_posbias.listwise.training.losses import model_loss
    from hf_posbias.trainer_base.attention import set_activation_checkpointing
    from hf_posbias.trainer_base.memory import cuda_peak_bytes

    longest = sorted(run.encoded, key=lambda e: -len(e["input_ids"]))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)

    def measure(checkpointing: bool, mini: Any) -> int | None:
        rows = windows_per_pass(_plan_of(mini), run.longest_tokens)
        batch = run.collator.pad(longest[: min(rows, len(longest))])
        set_activation_checkpointing(model, checkpointing)

        def step() -> None:
            with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
                parts = model_loss(model, batch, lam=lam, propensity=propensity)
            parts.loss.backward()

        return cuda_peak_bytes(model, step)

    return measure


def _plan_of(mini: Any) -> MemoryPlan:
    from hf_posbias.trainer_base.memory import MemoryPlan

    return MemoryPlan(False, mini, 1, "measured")


# --------------------------------------------------------------------------- training


def train_listwise(
    settings: ListwiseTrainingSettings,
    callbacks: Sequence[Any] = (),
    *,
    echo: Callable[[str], None] | None = None,
) -> TrainResult:
    """Fine-tune, save the checkpoint with its card, return what was measured.

    ``callbacks`` are ``transformers.TrainerCallback`` objects; ``echo`` prints progress lines.
    """
    run = prepare_run(settings, show_progress=settings.progress)
    compute = run.compute

    import torch

    from hf_posbias.listwise.training.trainer import DebiasFirstTrainer
    from hf_posbias.modeling.causal_lm import load_causal_lm
    from hf_posbias.trainer_base.attention import (
        set_activation_checkpointing,
        supports_activation_checkpointing,
    )
    from hf_posbias.trainer_base.scaffold import (
        agreed_memory_plan,
        announce,
        finish,
        fit,
        seeded_model,
        training_arguments,
    )

    say = echo or (lambda line: None)
    model, tokenizer = seeded_model(
        settings.seed, lambda: load_causal_lm(run.model_folder, dtype="float32", device="cpu")
    )
    if run.attn_implementation is not None and hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(run.attn_implementation)
    model.config.use_cache = False  # no KV cache in training (and none with checkpointing)
    propensity = None if run.omega is None else torch.as_tensor(run.omega, dtype=torch.float32)
    args = training_arguments(
        settings,
        compute,
        run.out,
        lr=settings.lr,
        per_device_batch=1,  # set below from the memory plan
        remove_unused_columns=False,
        neftune_noise_alpha=settings.neftune_alpha,
    )
    supported = supports_activation_checkpointing(model)

    def choose() -> MemoryPlan:
        measure = None
        if compute.device.kind == "cuda":
            model.to(args.device)
            measure = cuda_window_trial(
                model,
                run,
                lam=settings.lam,
                propensity=propensity,
                precision=compute.precision,
            )
        return memory_preflight(
            settings,
            compute,
            longest_tokens=run.longest_tokens,
            measure=measure,
            n_params=sum(p.numel() for p in model.parameters()),
            checkpointing_supported=supported,
        )

    plan = agreed_memory_plan(choose, compute.world_size)
    set_activation_checkpointing(model, plan.checkpointing)
    micro, accumulation = split_batch(
        compute.per_device_batch, windows_per_pass(plan, run.longest_tokens)
    )
    args.per_device_train_batch_size = micro
    args.gradient_accumulation_steps = accumulation

    announce(args, "posbias-listwise-train")
    augmentation = "RandAug" if settings.augmentation_method == "rand-aug" else "Pos-Aug"
    say(
        f"  {len(run.rows)} windows ({run.source_rows} in the data, {augmentation} "
        f"n={run.pos_aug}), "
        f"longest {run.longest_tokens} tokens; {compute.precision} on "
        f"{compute.device.describe()}; {micro} window(s) per pass × {accumulation} × "
        f"{compute.world_size} process(es) = {settings.global_batch} per step"
    )
    trainer = DebiasFirstTrainer(
        model=model,
        args=args,
        train_dataset=run.encoded,
        data_collator=run.collator.pad,
        callbacks=list(callbacks),
        lam=settings.lam,
        propensity=propensity,
        with_lm=settings.lm_loss,
    )
    fitted = fit(trainer, model, run.out, compute, plan, progress=settings.progress)
    rank_total, lm_total, passes = trainer.run_totals
    result = TrainResult(
        **fitted.as_fields(),
        model=settings.model,
        epochs_trained=float(trainer.state.epoch or 0.0),
        rank_loss=rank_total / passes if passes else float("nan"),
        lm_loss=lm_total / passes if passes else float("nan"),
        n_rows=len(run.rows),
        micro_batch=micro,
        accumulation=accumulation,
        log_history=list(trainer.state.log_history),
    )
    finish(
        trainer,
        lambda: save_checkpoint(
            trainer.accelerator.unwrap_model(model), tokenizer, settings, run, result
        ),
    )
    return result


def card_info(
    settings: ListwiseTrainingSettings, run: RunInputs, result: TrainResult
) -> ListwiseCardInfo:
    """The card's facts from the settings, the checked inputs and the measured result."""
    from hf_posbias.listwise.training.card import ListwiseCardInfo, describe_base

    base, on_hub, description = describe_base(settings.model)
    return ListwiseCardInfo(
        base_model=base,
        base_model_on_hub=on_hub,
        base_description=description,
        data=str(settings.data),
        data_rows=len(run.rows),
        source_rows=run.source_rows,
        data_labels=str(run.data_info.get("labels") or run.data_info.get("format") or ""),
        lam=settings.lam,
        propensity=run.propensity_info,
        pos_aug=run.pos_aug,
        pos_aug_source=run.pos_aug_source,
        augmentation=settings.augmentation_method,
        with_lm=settings.lm_loss,
        neftune_alpha=settings.neftune_alpha,
        identifiers=settings.identifiers,
        passage_tokens=settings.passage_tokens,
        window_sizes=list(run.window_sizes),
        seed=settings.seed,
        precision=result.precision,
        attn_implementation=result.attn_implementation,
        gradient_checkpointing=result.memory.checkpointing,
        memory=(
            f"measured preflight: {result.memory.summary()}"
            if result.memory.method == "measured"
            else f"{result.micro_batch} window(s) per forward pass, no device-memory preflight "
            f"({result.memory.method})"
        ),
        global_batch=settings.global_batch,
        per_device_batch=result.per_device_batch,
        micro_batch=result.micro_batch,
        accumulation=result.accumulation,
        world_size=result.world_size,
        lr=settings.lr,
        epochs=settings.epochs,
        epochs_trained=result.epochs_trained,
        max_steps=settings.max_steps,
        warmup_ratio=settings.warmup_ratio,
        steps=result.steps,
        train_loss=result.train_loss,
        rank_loss=result.rank_loss,
        lm_loss=result.lm_loss,
        train_seconds=result.train_seconds,
        device=result.device,
        longest_tokens=run.longest_tokens,
    )


def save_checkpoint(
    model: Any,
    tokenizer: Any,
    settings: ListwiseTrainingSettings,
    run: RunInputs,
    result: TrainResult,
) -> None:
    """Save model + tokenizer, then the card and the facts (the facts file last)."""
    from hf_posbias.listwise.training.card import LISTWISE_CARD
    from hf_posbias.trainer_base.scaffold import save_card

    model.config.use_cache = True  # inference wants it back
    model.save_pretrained(str(run.out))
    tokenizer.save_pretrained(str(run.out))
    info = card_info(settings, run, result)
    result.card_path = save_card(LISTWISE_CARD, run.out, info, card=settings.card)


# --------------------------------------------------------------------------- CLI


def listwise_train_report(result: TrainResult) -> str:
    """One line per run for the terminal.

    Example:
        >>> from hf_posbias.trainer_base.memory import MemoryPlan, MiniBatching
        >>> r = TrainResult("o", "m", 2, 1.5, 0.2, 1.48, 4.0, 8, 1, "fp32", "sdpa",
        ...     2, 1, 2, MemoryPlan(False, MiniBatching(rows=1), 1, "cpu"), "cpu (cpu)")
        >>> listwise_train_report(r)  # doctest: +ELLIPSIS
        'trained m (DebiasFirst): 2 steps, loss 1.5000 (L_Rank 0.2000, L_LM 1.4800), 2.00 s/step...'
    """
    return (
        f"trained {result.model} (DebiasFirst): {result.steps} steps, loss "
        f"{result.train_loss:.4f} (L_Rank {result.rank_loss:.4f}, L_LM {result.lm_loss:.4f}), "
        f"{result.seconds_per_step:.2f} s/step, {result.n_rows} windows, world size "
        f"{result.world_size}, {result.precision}, {result.micro_batch} window(s) per pass × "
        f"{result.accumulation} → {result.out_dir}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Module entry point; user mistakes print one ``error:`` line and return 2."""
    from hf_posbias.trainer_base.scaffold import trainer_main

    return trainer_main(
        argv, sys.modules[__name__], ListwiseTrainingSettings, train_listwise, listwise_train_report
    )


if __name__ == "__main__":
    sys.exit(main())
