"""The skeleton both trainers share: one run from the checked settings to the saved checkpoint.

The bi-encoder trainer (:func:`hf_posbias.training.train.train_model`) and the DebiasFirst
trainer (:func:`hf_posbias.listwise.training.train.train_listwise`) differ in their data, their
model, their loss and their card; everything around those is here, in the order a run uses it:

1. :func:`output_folder` — the checkpoint folder, created and checked writable before any
   model loads;
2. :func:`seeded_model` — every random generator seeded (``--seed``), then the model built, so
   a new head's initial weights follow the seed;
3. :func:`training_arguments` — the ``TrainingArguments`` of the shared schedule (AdamW, linear
   decay after ``--warmup-ratio``, no intermediate checkpoint, ``--logging-steps``, no bar of
   transformers' own), precision and device from
   :class:`~hf_posbias.trainer_base.compute.ResolvedCompute`, and the Accelerate processes
   checked against ``WORLD_SIZE``;
4. :func:`agreed_memory_plan` — the memory preflight's outcome (plan or one-line error) shared
   by every process; :func:`announce` — one ``rank=… world_size=…`` line per process;
5. :func:`fit` — ``trainer.train()`` timed, with the progress of
   :class:`~hf_posbias.trainer_base.callbacks.TrainingProgressCallback` (step/total, loss, ETA;
   ``--no-progress`` silences it) in place of transformers' bar and log dicts, a CUDA
   out-of-memory error turned into a one-line error naming the options to change, the
   measured facts (:class:`Fitted`);
6. :func:`finish` — the checkpoint saved by the main process only (the others wait), with
   :func:`save_card`: the card then the facts file, written last (it marks a finished run, so a
   matrix or a demo that is run again skips it), or the facts alone with ``--no-card``;
7. :func:`trainer_main` — the module entry point of ``python -m …`` and
   ``accelerate launch -m …`` (flags parsed from the settings dataclass, one ``error:`` line
   and exit status 2 for a user mistake, the report printed on rank 0), which leaves the
   process group once the run has succeeded (:func:`leave_process_group`).

Nothing heavy is imported at module import (transformers loads inside the functions).

Example:
    >>> import tempfile
    >>> output_folder(tempfile.mkdtemp() + "/ckpt").name
    'ckpt'
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from hf_posbias.errors import BackendError, InputError, PosbiasError

if TYPE_CHECKING:
    from hf_posbias.cards.checkpoint import CheckpointCardKind
    from hf_posbias.trainer_base.compute import ResolvedCompute
    from hf_posbias.trainer_base.memory import MemoryPlan

M = TypeVar("M")
S = TypeVar("S")


class ScheduleSettings(Protocol):
    """The settings every trainer's schedule reads (both trainers' settings have them)."""

    seed: int
    epochs: float
    max_steps: int | None
    warmup_ratio: float
    logging_steps: int


def output_folder(out: str | Path) -> Path:
    """The output folder, created if missing; a folder that cannot be written is a one-line
    :class:`~hf_posbias.errors.InputError` (before the model loads, not after training).

    Example:
        >>> output_folder("/proc/posbias-cannot-write")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: output dir '/proc/posbias-cannot-write' is not writable: ...
    """
    path = Path(out).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as err:
        reason = err.strerror or err
        raise InputError(f"output dir {str(out)!r} is not writable: {reason}") from None
    return path


def seeded_model(seed: int, load: Callable[[], M]) -> M:
    """Seed Python, NumPy and torch (``transformers.set_seed``), then ``load()`` the model."""
    from transformers import set_seed

    set_seed(seed)
    return load()


def training_arguments(
    settings: ScheduleSettings,
    compute: ResolvedCompute,
    out: Path,
    *,
    lr: float,
    per_device_batch: int,
    arguments_class: type | None = None,
    **extra: Any,
) -> Any:
    """The run's ``TrainingArguments`` (or ``arguments_class``, e.g. sentence-transformers').

    ``extra`` are the trainer's own arguments. transformers' own bar stays off: :func:`fit`
    reports progress in the package's convention. Raises :class:`~hf_posbias.errors.BackendError`
    when Accelerate started another number of processes than ``WORLD_SIZE`` says.
    """
    if arguments_class is None:
        from transformers import TrainingArguments as arguments_class
    args = arguments_class(
        output_dir=str(out),
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps or -1,
        per_device_train_batch_size=per_device_batch,
        learning_rate=lr,
        warmup_steps=settings.warmup_ratio,  # transformers 5: a float < 1 is a ratio
        lr_scheduler_type="linear",
        optim="adamw_torch",
        weight_decay=0.0,
        seed=settings.seed,
        data_seed=settings.seed,
        save_strategy="no",
        eval_strategy="no",
        logging_steps=settings.logging_steps,
        report_to="none",
        disable_tqdm=True,  # fit() installs TrainingProgressCallback instead
        # Pinned memory only helps host→GPU copies; on CPU torch warns about it on every run.
        dataloader_pin_memory=compute.device.kind == "cuda",
        **compute.training_arguments(),
        **extra,
    )
    if int(args.world_size) != compute.world_size:
        raise BackendError(
            f"{args.world_size} processes started but WORLD_SIZE says {compute.world_size}"
        )
    return args


def agreed_memory_plan(choose: Callable[[], MemoryPlan], world_size: int) -> MemoryPlan:
    """``choose()`` on every process, then rank 0's outcome on all of them
    (:func:`~hf_posbias.trainer_base.memory.shared_plan`): its plan, or its one-line error raised
    everywhere (a rank left out of the error would wait for the others forever).

    Example:
        >>> from hf_posbias.trainer_base.memory import MemoryPlan, MiniBatching
        >>> agreed_memory_plan(lambda: MemoryPlan(False, MiniBatching(rows=1), 1, "cpu"), 1).method
        'cpu'
        >>> def too_big():
        ...     raise InputError("does not fit")
        >>> agreed_memory_plan(too_big, 1)
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: does not fit
    """
    from hf_posbias.trainer_base.memory import shared_plan

    outcome: MemoryPlan | PosbiasError
    try:
        outcome = choose()
    except PosbiasError as err:
        outcome = err
    return shared_plan(outcome, world_size)


def announce(args: Any, name: str, **facts: Any) -> None:
    """One line per process on stderr, ``<name> rank=R world_size=W k=v…`` (a logged INFO line
    would repeat on every rank's stderr)."""
    more = "".join(f" {key}={value}" for key, value in facts.items())
    line = f"{name} rank={args.process_index} world_size={args.world_size}{more}"
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Fitted:
    """What a finished ``trainer.train()`` measured, with the decisions it ran under."""

    out_dir: str
    steps: int
    train_loss: float
    train_seconds: float
    world_size: int
    precision: str
    attn_implementation: str
    per_device_batch: int
    memory: MemoryPlan
    device: str

    def as_fields(self) -> dict[str, Any]:
        """The fields as keyword arguments of a trainer's result (no copies)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def fit(
    trainer: Any,
    model: Any,
    out: Path,
    compute: ResolvedCompute,
    plan: MemoryPlan,
    *,
    progress: bool = True,
) -> Fitted:
    """Run ``trainer.train()`` and time it; a CUDA out-of-memory error becomes one line.

    ``progress`` (``--progress/--no-progress``): step/total, loss and ETA while it trains
    (:class:`~hf_posbias.trainer_base.callbacks.TrainingProgressCallback`, replacing transformers'
    printer of raw log dicts).
    """
    from transformers import PrinterCallback, ProgressCallback

    from hf_posbias.trainer_base.attention import attn_implementation_of
    from hf_posbias.trainer_base.callbacks import TrainingProgressCallback
    from hf_posbias.trainer_base.memory import is_out_of_memory, out_of_memory_error

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(TrainingProgressCallback(disable=not progress))
    started = time.perf_counter()
    try:
        output = trainer.train()
    except RuntimeError as err:
        if compute.device.kind == "cuda" and is_out_of_memory(err):
            raise out_of_memory_error(plan, compute.device.describe()) from None
        raise
    return Fitted(
        out_dir=str(out),
        steps=int(trainer.state.global_step),
        train_loss=float(output.training_loss),
        train_seconds=time.perf_counter() - started,
        world_size=int(trainer.args.world_size),
        precision=compute.precision,
        attn_implementation=attn_implementation_of(model),
        per_device_batch=compute.per_device_batch,
        memory=plan,
        device=compute.device.describe(),
    )


def finish(trainer: Any, save: Callable[[], None]) -> None:
    """``save()`` on the main process while the others wait for it."""
    if trainer.is_world_process_zero():
        save()
    trainer.accelerator.wait_for_everyone()


def save_card(kind: CheckpointCardKind, out: Path, facts: Any, *, card: bool) -> str | None:
    """The model card then the facts (``card``), or the facts alone; the card's path or None."""
    from hf_posbias.cards.checkpoint import save_card_facts, write_checkpoint_card

    if card:
        return str(write_checkpoint_card(kind, out, facts))
    save_card_facts(kind, out, facts)
    return None


def trainer_main(
    argv: Sequence[str] | None,
    module: ModuleType,
    settings_cls: type[S],
    run: Callable[[S], Any],
    report: Callable[[Any], str],
) -> int:
    """The body of a trainer module's ``main()``, for ``python -m <module>`` and
    ``accelerate launch -m <module>`` alike: ``module`` is the running module
    (``sys.modules[__name__]``, which is ``__main__`` under ``-m``); its import name makes the
    help's ``prog`` and its docstring's first line the description (see
    :func:`hf_posbias.settings.launch_main` for the rest)."""
    from hf_posbias.settings import launch_main

    def run_then_leave(settings: S) -> Any:
        out = getattr(settings, "out", None)
        made = out is not None and not Path(out).exists()
        try:
            result = run(settings)
        except BaseException:
            if made:  # a run that failed before it wrote anything leaves no empty folder
                with contextlib.suppress(OSError):
                    Path(out).rmdir()
            raise
        leave_process_group()
        return result

    name = getattr(module.__spec__, "name", None) or module.__name__
    description = (module.__doc__ or "").split("\n")[0]
    return launch_main(
        argv,
        settings_cls,
        prog=f"python -m {name}",
        description=description,
        run=run_then_leave,
        report=report,
    )


def leave_process_group() -> None:
    """Destroy the default process group, if this process has one (``accelerate launch``).

    A process that exits with its gloo group alive can abort in the interpreter's teardown
    (``terminate called without an active exception``, exit -6, after the checkpoint is saved):
    PyTorch asks each trainer process to call ``destroy_process_group`` at the end of its main.
    Only the process entry point calls this, and only after a successful run: a library call
    (``train_model`` in a user's own distributed script) keeps the caller's group, and a failed
    rank does not wait here on ranks that are still in a collective."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
