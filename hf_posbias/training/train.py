"""Train a position-controlled bi-encoder: `python -m hf_posbias.training.train`, `posbias train`.

One function, :func:`train_model`, does the work for the module entry point (also under
``accelerate launch -m hf_posbias.training.train …``), the ``posbias train`` verb, the matrix
scripts and the demo; its settings are one dataclass,
:class:`~hf_posbias.training.training_settings.TrainingSettings` (flags generated from it).
The protocol is YHP26's (§4, App. D): SentenceTransformerTrainer, InfoNCE as
``CachedMultipleNegativesRankingLoss(scale=20)``, AdamW, batch 256, 3 epochs, linear schedule with
10% warm-up, seed 42, query prefix only, final checkpoint only, every batch from one length bin and
no positive document twice in a batch (:mod:`hf_posbias.training.batching`).

Speed and memory (beyond YHP26, the project's; same results): mixed precision (``--precision``, auto
= bf16 on GPUs that have it), the best attention kernel installed, rows sorted by length inside a
batch so the loss's mini-batches carry little padding, and a memory preflight
(:mod:`hf_posbias.trainer_base.memory`) that runs trial steps on the longest bin before the first
optimiser step and chooses gradient checkpointing and the mini-batch size so a step fits — or
stops with a one-line error naming the option to change.

Under DDP ``--global-batch`` rows make one step over all processes: each rank embeds
``global / W`` rows of the same bin, and the loss gathers the embeddings of all ranks
(``gather_across_devices``), so every query still has ``global_batch`` in-batch candidates.

What is not particular to a bi-encoder — output folder, seeding, the schedule's arguments, the
memory preflight's agreement between processes, timing, saving on rank 0, the card, the entry
point — is the skeleton both trainers share, :mod:`hf_posbias.trainer_base.scaffold`.

``--config ips`` (beyond YHP26, the project's) trains on the whole retained pool
(``--data <out>/pool``) instead of a controlled sample and corrects its position skew by
inverse-propensity weighting: every row gets ``w = 1 / share(target_position | length_bin)``
normalised to mean 1 over the rows, and the InfoNCE term of each query is multiplied by its weight
(:class:`hf_posbias.training.losses.WeightedCachedMNRL`). The weighted loss estimates the loss
of a pool whose positions are uniform within every bin, without throwing rows away.

Example:
    >>> from hf_posbias.training.training_settings import parse_settings
    >>> parse_settings(["--model", "bert-base", "--config", "uniform", "--data", "d",
    ...                 "--out", "o"]).global_batch
    256
"""

from __future__ import annotations

import logging
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError, PosbiasError, first_line
from hf_posbias.positions import POSITIONS
from hf_posbias.sampling.configs import config_label
from hf_posbias.settings import setting_label
from hf_posbias.training.card import TRAINING_INFO
from hf_posbias.training.training_settings import TrainingSettings

if TYPE_CHECKING:
    from hf_posbias.modeling.bases import ModelSpec
    from hf_posbias.trainer_base.compute import ResolvedCompute
    from hf_posbias.trainer_base.memory import MemoryPlan
    from hf_posbias.training.builder import TruncationReport

logger = logging.getLogger("hf_posbias.training")

REQUIRED_COLUMNS = ("query", "positive", "doc_id", "length_bin", "target_position")
DONE_MARKER = TRAINING_INFO
"""Written last into the output folder: training info; its presence marks a finished run."""


@dataclass
class TrainingRows:
    """The rows of one training configuration, as plain lists in the dataset's order."""

    queries: list[str]
    positives: list[str]
    doc_ids: list[str]
    bins: list[str]
    positions: list[str]
    weights: list[float] | None = None
    repo_config: str = ""
    n_source_rows: int = 0

    def __len__(self) -> int:
        return len(self.queries)

    def counts(self) -> dict[str, dict[str, int]]:
        """Rows per length bin × target position (bins in numeric order)."""
        from hf_posbias.corpus.documents import bin_position_counts

        return bin_position_counts(
            {"length_bin": b, "target_position": p}
            for b, p in zip(self.bins, self.positions, strict=True)
        )


@dataclass
class TrainResult:
    """What a run produced and measured."""

    out_dir: str
    model: str
    config: str
    steps: int
    train_loss: float
    train_seconds: float
    seconds_per_step: float
    n_rows: int
    world_size: int
    counts: dict[str, dict[str, int]]
    card_path: str | None = None
    hub_url: str | None = None
    batches: list[list[int]] = field(default_factory=list)
    rows: TrainingRows | None = None
    precision: str = "fp32"
    attn_implementation: str = ""
    per_device_batch: int = 0
    memory: MemoryPlan | None = None
    device: str = ""


# --------------------------------------------------------------------------- data


def distribution_label(config: str, positions: Sequence[str]) -> str:
    """``"uniform (33:33:33)"``: the configuration name and the measured begin:middle:end shares.

    Example:
        >>> distribution_label("begin", ["begin"] * 4)
        'begin (100:0:0)'
    """
    counts = Counter(positions)
    total = sum(counts.values()) or 1
    shares = ":".join(str(round(100 * counts.get(p, 0) / total)) for p in POSITIONS)
    return f"{config} ({shares})"


def ips_weights(bins: Sequence[str], positions: Sequence[str]) -> list[float]:
    """Inverse-propensity weights: ``1 / share(position | bin)``, normalised to mean 1.

    Example:
        >>> ips_weights(["s", "s", "s", "s"], ["begin", "begin", "begin", "end"])
        [0.6666666666666666, 0.6666666666666666, 0.6666666666666666, 2.0]
    """
    per_bin = Counter(bins)
    per_cell = Counter(zip(bins, positions, strict=True))
    raw = [per_bin[b] / per_cell[(b, p)] for b, p in zip(bins, positions, strict=True)]
    mean = sum(raw) / len(raw) if raw else 1.0
    return [w / mean for w in raw]


def _available_configs(data: str) -> list[str]:
    local = Path(data).expanduser()
    if local.is_file():
        raise InputError(
            f"{setting_label('data')} {data} is a file; it takes a training-set folder (the train/ "
            "folder of `posbias data build`, or `posbias data sample`'s output: one data/<config>/ "
            "per position configuration) or a Hub dataset repo id"
        )
    if not local.exists() and data.startswith((".", "/", "~")):
        raise InputError(f"{setting_label('data')}: folder {data} does not exist")
    if local.is_dir():
        # A repo folder's configs: its card's, else its data/<config>/ folders, else the one
        # `default` datasets makes of a plain folder (read without importing datasets).
        from hf_posbias.rows.readers import available_configs

        data_dirs = sorted(p.name for p in (local / "data").glob("*") if p.is_dir())
        return available_configs(local) or data_dirs or ["default"]
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise InputError(f"training data {data!r} is not a local folder (offline: no Hub access)")
    from datasets import get_dataset_config_names

    try:
        return list(get_dataset_config_names(data))
    except Exception as err:  # a missing repo fails in many ways; all mean "cannot read it"
        raise InputError(f"cannot read training data {data!r}: {first_line(err, 200)}") from None


def resolve_repo_config(data: str, config: str) -> str:
    """The data-repo configuration that holds ``config`` (``ips`` reads the pool's ``default``).

    A position configuration in any spelling (``uniform``, ``U``, ``50:25:25``, ``r50-25-25``)
    is looked up by its canonical name
    (:class:`hf_posbias.sampling.configs.PositionConfig`), the name
    ``posbias data sample``/``build`` gave it; any other name must be a config of ``data`` as is.
    """
    from hf_posbias.sampling.configs import PositionConfig

    available = _available_configs(data)
    if config == "ips":
        if "default" in available:
            return "default"
        hint = "; --config ips needs the pool repo (<out>/pool, config default)"
    elif config in available:
        return config
    else:
        try:
            canonical = PositionConfig.parse(config).name
        except InputError:
            canonical, hint = None, ""
        else:
            hint = (
                f"; create it with `posbias data sample --config {config}` (or data build --config)"
            )
        if canonical in available:
            return str(canonical)
    from hf_posbias.suggestions import suggest

    raise InputError(
        f"config {config!r} is not in {data}{suggest(config, available)}: available "
        f"{', '.join(available) or 'none'}{hint}"
    )


def _local_rows(data: str, repo_config: str) -> int | None:
    """Rows in a local folder's ``data/<config>/`` parquet files (None if not such a folder)."""
    files = sorted((Path(data) / "data" / repo_config).glob("**/*.parquet"))
    if not files:
        return None
    from hf_posbias.rows.readers import parquet_num_rows

    return sum(parquet_num_rows(f) for f in files)


def load_training_rows(data: str, config: str) -> TrainingRows:
    """Read ``config`` of the data repo/folder ``data`` and check the contract columns.

    ``ips`` reads the pool (config ``default``), keeps ``retained`` rows and attaches weights.
    """
    from hf_posbias.rows.readers import read_dataset

    repo_config = resolve_repo_config(data, config)
    if _local_rows(data, repo_config) == 0:
        # datasets 5 cannot even open a zero-row parquet file; say what is actually wrong.
        raise InputError(f"{data} config {repo_config!r} has no rows to train on")
    try:
        # read_dataset, not a bare load_dataset: datasets caches local folders by name only and
        # would hand a rebuilt train/ folder's old rows to the trainer.
        ds = read_dataset(data, repo_config, split="train")
    except PosbiasError:
        raise
    except Exception as err:  # see _available_configs
        raise InputError(
            f"cannot load {data!r} config {repo_config!r}: {first_line(err, 200)}"
        ) from None
    required = REQUIRED_COLUMNS + (("retained",) if config == "ips" else ())
    missing = [c for c in required if c not in ds.column_names]
    if missing:
        raise InputError(
            f"{data} config {repo_config!r} lacks column(s) {', '.join(missing)} "
            f"(has {', '.join(ds.column_names)})"
        )
    n_source = len(ds)
    columns = {c: ds[c] for c in required}
    keep = range(n_source)
    if config == "ips":
        keep = [i for i, r in enumerate(columns["retained"]) if r]
    rows = TrainingRows(
        queries=[str(columns["query"][i]) for i in keep],
        positives=[str(columns["positive"][i]) for i in keep],
        doc_ids=[str(columns["doc_id"][i]) for i in keep],
        bins=[str(columns["length_bin"][i]) for i in keep],
        positions=[str(columns["target_position"][i]) for i in keep],
        repo_config=repo_config,
        n_source_rows=n_source,
    )
    if not len(rows):
        what = "retained rows" if config == "ips" else "rows"
        raise InputError(f"{data} config {repo_config!r} has no {what} to train on")
    unknown = sorted(set(rows.positions) - set(POSITIONS))
    if unknown:
        raise InputError(f"unknown target_position value(s) {unknown} in {data} {repo_config!r}")
    if config == "ips":
        rows.weights = ips_weights(rows.bins, rows.positions)
    return rows


# --------------------------------------------------------------------------- checks


def _hub_token(cfg: TrainingSettings) -> str:
    from hf_posbias.hub import resolve_token

    return resolve_token(cfg.hub_token, purpose=f"--push-to-hub {cfg.push_to_hub}", flag=None)


def push_checkpoint(out_dir: str | Path, repo_id: str, token: str) -> str:
    """Upload the checkpoint folder (model + card) as it is to the model repo ``repo_id``."""
    from hf_posbias.hub import upload_folder

    return upload_folder(
        out_dir,
        repo_id,
        repo_type="model",
        token=token,
        commit_message="posbias train: checkpoint and model card",
    )


# --------------------------------------------------------------------------- training


@dataclass
class RunInputs:
    """What a run checked and computed before any model is loaded."""

    spec: ModelSpec
    compute: ResolvedCompute
    out: Path
    token: str | None
    rows: TrainingRows
    max_seq_length: int
    truncation: TruncationReport
    row_lengths: list[int]
    longest_tokens: int
    attn_implementation: str | None


def prepare_run(cfg: TrainingSettings) -> RunInputs:
    """Every check that needs no model: one-line errors before the weights are loaded.

    Precision and attention kernel against the hardware, global batch against the number of
    processes, output folder, Hub token, training data, and — with the tokenizer only — the
    token lengths (truncation report, ``--mini-batch-tokens`` against the longest sequence).
    """
    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.trainer_base.attention import model_attn_implementation
    from hf_posbias.trainer_base.scaffold import output_folder
    from hf_posbias.training.builder import count_truncated, load_text_setup

    spec = get_model_spec(cfg.model)
    # The training data first: a wrong --data or --config is one line before torch loads and
    # before the output folder is made.
    rows = load_training_rows(cfg.data, cfg.config)
    compute = cfg.resolve()
    token = _hub_token(cfg) if cfg.push_to_hub else None
    out = output_folder(cfg.out)
    config, tokenizer, max_seq_length = load_text_setup(spec, cfg.max_length)
    doc_text = dict(zip(rows.doc_ids, rows.positives, strict=True))
    truncation = count_truncated(
        tokenizer, max_seq_length, list(doc_text.values()), prefix=spec.document_prefix
    )
    queries = count_truncated(
        tokenizer, max_seq_length, rows.queries, prefix=spec.query_prefix, warn=False
    )
    doc_tokens = dict(zip(doc_text, truncation.lengths, strict=True))
    row_lengths = [min(doc_tokens[d], max_seq_length) for d in rows.doc_ids]
    longest = min(max(truncation.longest, queries.longest), max_seq_length)
    if cfg.mini_batch_tokens is not None and cfg.mini_batch_tokens < longest:
        raise InputError(
            f"{setting_label('mini_batch_tokens')} {cfg.mini_batch_tokens} is smaller than the "
            f"longest training sequence ({longest} tokens): use at least {longest}"
        )
    attn = model_attn_implementation(
        config, compute.attn_implementation, requested=compute.attn_requested
    )
    return RunInputs(
        spec, compute, out, token, rows, max_seq_length, truncation, row_lengths, longest, attn
    )


def train_model(cfg: TrainingSettings, callbacks: Sequence[Any] = ()) -> TrainResult:
    """Train one model on one position configuration and save the final checkpoint + card.

    ``callbacks`` are ``transformers.TrainerCallback`` objects (e.g. the throughput benchmark's
    step timer).

    Example (tiny model, two steps; see tests/training for the data folder)::

        from hf_posbias.training.training_settings import TrainingSettings
        from hf_posbias.training.train import train_model
        result = train_model(TrainingSettings(model="bert-base", config="uniform",
                                              data="out/train", out="ckpt/bert-uniform"))
        print(result.steps, result.train_loss, result.memory.summary())
    """
    run = prepare_run(cfg)
    spec, compute, rows = run.spec, run.compute, run.rows

    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.training_args import (
        SentenceTransformerTrainingArguments,
    )

    from hf_posbias.output_folders import finish_current_run
    from hf_posbias.trainer_base.scaffold import (
        announce,
        finish,
        fit,
        save_card,
        seeded_model,
        training_arguments,
    )
    from hf_posbias.training.batching import SingleBinBatchSamplerFactory
    from hf_posbias.training.builder import build_sentence_transformer
    from hf_posbias.training.card import BI_ENCODER_CARD
    from hf_posbias.training.losses import build_loss

    model = seeded_model(
        cfg.seed,
        lambda: build_sentence_transformer(
            spec,
            pooling=cfg.pooling,
            max_length=cfg.max_length,
            attn_implementation=run.attn_implementation,
        ),
    )
    lr = cfg.lr if cfg.lr is not None else spec.lr

    # Only text (+ the numeric IPS weight as "label") reaches the collator: everything else
    # would be tokenised as a third text column. Bins, doc ids and lengths go to the sampler.
    columns: dict[str, list[Any]] = {"query": rows.queries, "positive": rows.positives}
    if rows.weights is not None:
        columns["label"] = rows.weights
    dataset = Dataset.from_dict(columns)

    args = training_arguments(
        cfg,
        compute,
        run.out,
        lr=lr,
        per_device_batch=compute.per_device_batch,
        arguments_class=SentenceTransformerTrainingArguments,
        prompts={"query": spec.query_prefix},
        dataloader_drop_last=False,
    )
    record: list[list[int]] | None = [] if cfg.record_batches else None
    args.batch_sampler = SingleBinBatchSamplerFactory(
        rows.bins,
        rows.doc_ids,
        world_size=compute.world_size,
        record=record,
        lengths=run.row_lengths,
    )
    announce(args, "posbias-train", rows=len(rows))

    loss = build_loss(
        model,
        cfg.scale,
        cfg.mini_batch_rows or compute.per_device_batch,
        weighted=rows.weights is not None,
        gather_across_devices=compute.gather_across_devices,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=dataset, loss=loss, callbacks=list(callbacks)
    )
    memory = memory_preflight(cfg, run, trainer, loss)
    apply_memory_plan(memory, model, loss)
    logger.info("memory: %s", memory.summary())
    fitted = fit(trainer, model, run.out, compute, memory, progress=cfg.progress)

    result = TrainResult(
        **fitted.as_fields(),
        model=spec.name,
        config=cfg.config,
        seconds_per_step=fitted.train_seconds / fitted.steps if fitted.steps else 0.0,
        n_rows=len(rows),
        counts=rows.counts(),
        batches=record or [],
        rows=rows,
    )

    def save() -> None:
        model.save_pretrained(str(run.out))
        info = card_info(cfg, spec, rows, result, run.truncation, lr, model)
        result.card_path = save_card(BI_ENCODER_CARD, run.out, info, card=cfg.card)
        # The checkpoint is the run's output: an upload that fails after it keeps it.
        finish_current_run()
        if cfg.push_to_hub and run.token:
            result.hub_url = push_checkpoint(run.out, cfg.push_to_hub, run.token)

    finish(trainer, save)
    return result


def apply_memory_plan(plan: MemoryPlan, model: Any, loss: Any) -> None:
    """Set checkpointing on the model and the mini-batching of the cached loss."""
    from hf_posbias.trainer_base.attention import set_activation_checkpointing

    set_activation_checkpointing(model, plan.checkpointing)
    loss.mini_batch_size = plan.mini_batching.rows or plan.loss_chunk_rows
    loss.mini_batch_num_tokens = plan.mini_batching.tokens


def memory_preflight(cfg: TrainingSettings, run: RunInputs, trainer: Any, loss: Any) -> MemoryPlan:
    """The memory plan: trial steps on the GPU (every rank takes rank 0's decision), or CPU's."""
    from hf_posbias.trainer_base.memory import (
        choose_memory_plan,
        cpu_plan,
        cuda_trial,
        optimizer_state_bytes,
        usable_bytes,
    )
    from hf_posbias.trainer_base.scaffold import agreed_memory_plan

    compute = run.compute
    if compute.device.kind != "cuda":
        return cpu_plan(cfg, compute.per_device_batch)
    from hf_posbias.trainer_base.attention import supports_activation_checkpointing
    from hf_posbias.training.batching import plan_batches

    plan = plan_batches(
        run.rows.bins,
        run.rows.doc_ids,
        cfg.global_batch,
        seed=cfg.seed,
        world_size=compute.world_size,
        lengths=run.row_lengths,
    )
    # The worst case is the batch with the most tokens (the longest bin's full batch).
    worst = max(plan.batches, key=lambda b: sum(run.row_lengths[i] for i in b))
    n_params = sum(p.numel() for p in trainer.model.parameters())
    return agreed_memory_plan(
        lambda: choose_memory_plan(
            cfg,
            measure=cuda_trial(trainer, loss, worst),
            budget_bytes=usable_bytes(int(compute.device.total_memory), cfg.device_memory_gib),
            state_bytes=optimizer_state_bytes(n_params, compute.world_size),
            per_device_batch=compute.per_device_batch,
            longest_tokens=run.longest_tokens,
            method="measured",
            device=compute.device.describe(),
            checkpointing_supported=supports_activation_checkpointing(trainer.model),
        ),
        compute.world_size,
    )


def card_info(cfg, spec, rows, result, truncation, lr, model) -> Any:  # noqa: ANN001
    from hf_posbias.modeling.resolve import hub_model_id
    from hf_posbias.training.card import TrainingCardInfo

    if cfg.config == "ips":
        description = (
            f"ips — whole retained pool, {distribution_label('pool', rows.positions)}, "
            "inverse-propensity weighted to uniform positions within each length bin"
        )
    else:
        description = distribution_label(cfg.config, rows.positions)
    from hf_posbias.training.planning import steps_per_bin

    rows_per_bin = {b: sum(by_position.values()) for b, by_position in rows.counts().items()}
    per_epoch = sum(steps_per_bin(rows_per_bin, cfg.global_batch, 1.0).values())
    return TrainingCardInfo(
        base_model=hub_model_id(cfg.model) or hub_model_id(spec.checkpoint) or spec.checkpoint,
        base_model_on_hub=bool(hub_model_id(cfg.model) or hub_model_id(spec.checkpoint)),
        model_name=spec.name,
        kind=spec.kind,
        positional_encoding=spec.positional_encoding,
        config=cfg.config,
        distribution=description,
        nominal_ratio=config_label(cfg.config),
        dataset=cfg.data,
        dataset_on_hub=not Path(cfg.data).expanduser().exists(),
        dataset_config=rows.repo_config,
        n_rows=len(rows),
        n_source_rows=rows.n_source_rows,
        counts=rows.counts(),
        batch_size=cfg.global_batch,
        lr=lr,
        epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        steps=result.steps,
        steps_per_epoch=per_epoch,
        epochs_trained=result.steps / per_epoch if per_epoch else 0.0,
        warmup_ratio=cfg.warmup_ratio,
        seed=cfg.seed,
        scale=cfg.scale,
        mini_batch_size=result.memory.mini_batching.rows if result.memory else None,
        mini_batch_tokens=result.memory.mini_batching.tokens if result.memory else None,
        gradient_checkpointing=bool(result.memory and result.memory.checkpointing),
        memory_preflight=result.memory.summary() if result.memory else "",
        precision=result.precision,
        attn_implementation=result.attn_implementation,
        per_device_batch=result.per_device_batch,
        device=result.device,
        pooling=model[1].pooling_mode if len(model) > 1 else spec.pooling,
        max_length=int(model.max_seq_length),
        query_prefix=spec.query_prefix,
        document_prefix=spec.document_prefix,
        world_size=result.world_size,
        train_loss=result.train_loss,
        train_seconds=result.train_seconds,
        truncated_documents=truncation.n_truncated,
        n_documents=truncation.n_documents,
        weighted=rows.weights is not None,
    )


# --------------------------------------------------------------------------- CLI


def train_report(result: TrainResult) -> str:
    """One line per run for the terminal."""
    memory = f", {result.memory.summary()}" if result.memory else ""
    return (
        f"trained {result.model} on {result.config}: {result.steps} steps, "
        f"loss {result.train_loss:.4f}, {result.seconds_per_step:.3f} s/step, "
        f"{result.n_rows} rows, world size {result.world_size}, {result.precision}"
        f"{memory} → {result.out_dir}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Module entry point; user mistakes print one ``error:`` line and return 2."""
    from hf_posbias.trainer_base.scaffold import trainer_main

    return trainer_main(argv, sys.modules[__name__], TrainingSettings, train_model, train_report)


if __name__ == "__main__":
    sys.exit(main())
