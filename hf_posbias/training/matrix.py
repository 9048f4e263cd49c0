"""Expand models × configurations (× poolings) into training runs; run them resumably.

YHP26's matrix (§4) is 8 bases × 4 configurations = 32 runs (``scripts/run_matrix.py``); the
pooling ablation is ModernBERT-base × 4 poolings × 4 configurations (a study with a pooling axis:
``studies/yhp26-pooling.yaml``). ``posbias study run`` (:mod:`hf_posbias.study.run`) trains
through this runner and evaluates and reports too.
Each run is one ``accelerate launch -m hf_posbias.training.train …`` into its own folder
``<out>/posbias-<model>-<config>[-<pooling>]``. A run whose folder holds the final model, the card
and the ``posbias_training.json`` marker (written last) is finished and skipped on rerun, so a
killed matrix resumes where it stopped. ``--shard i/n`` (0-based) takes runs i, i+n, … for one
node of n. Each run is one :class:`~hf_posbias.training.training_settings.TrainingSettings`
object, built before anything is launched (the scripts' extra flags go to every run); its command
line is rendered from it only where a run is launched or printed.

``--dry-run`` prints each launch command and, under it, the settings the run will use after the
memory preflight (estimated for ``--plan-for DEVICE``, default this machine's device) and its
projected wall time from ``benchmarks/train_throughput.py``'s figures (``--throughput FILE``);
see :mod:`hf_posbias.training.planning`.

Example:
    >>> from hf_posbias.training.matrix import expand_runs, PAPER_CONFIGS
    >>> runs = expand_runs(["bert-base"], PAPER_CONFIGS, "ckpts")
    >>> [r.name for r in runs][:2]
    ['posbias-bert-base-begin', 'posbias-bert-base-middle']
    >>> settings = runs[0].settings("out/train", max_steps=3)
    >>> runs[0].launch_command(settings)[4:]  # doctest: +NORMALIZE_WHITESPACE
    ['--model', 'bert-base', '--config', 'begin', '--data', 'out/train',
     '--out', 'ckpts/posbias-bert-base-begin', '--max-steps', '3']
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.devices import KNOWN_GPUS
from hf_posbias.errors import InputError, PosbiasError
from hf_posbias.progress import progress
from hf_posbias.sampling.configs import PAPER_CONFIG_NAMES
from hf_posbias.setting_values import at_least
from hf_posbias.settings import (
    Settings,
    add_settings_arguments,
    setting,
    setting_label,
    settings_from_args,
)

if TYPE_CHECKING:
    from hf_posbias.training.training_settings import TrainingSettings

PAPER_CONFIGS: tuple[str, ...] = PAPER_CONFIG_NAMES  # hf_posbias.sampling.configs.PAPER_CONFIGS
FINISHED_FILES: tuple[str, ...] = ("posbias_training.json", "README.md", "modules.json")


def _slug(text: str) -> str:
    name = Path(text).name if ("/" in text or Path(text).exists()) else text
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-").lower()


RUN_FIELDS: tuple[str, ...] = ("model", "config", "data", "out", "pooling")
"""The training settings that make one run of a matrix; its command line spells them first."""


@dataclass(frozen=True)
class Run:
    """One training run of the matrix."""

    model: str
    config: str
    out_dir: str
    pooling: str | None = None

    @classmethod
    def of(cls, settings: TrainingSettings) -> Run:
        """The run that ``settings`` trains."""
        return cls(settings.model, settings.config, settings.out, settings.pooling)

    @property
    def name(self) -> str:
        """Folder name: ``posbias-<model>-<config>[-<pooling>]``."""
        return Path(self.out_dir).name

    def settings(self, data: str, **shared: Any) -> TrainingSettings:
        """This run's training settings: its model, configuration, folder and pooling, trained
        on ``data``, with ``shared`` (the settings every run of the matrix gets, by name).

        Example:
            >>> Run("bert-base", "begin", "o/posbias-bert-base-begin").settings("d", seed=3).seed
            3
        """
        from hf_posbias.training.training_settings import TrainingSettings

        run = {"model": self.model, "config": self.config, "data": data, "out": self.out_dir}
        return TrainingSettings(**run, pooling=self.pooling, **shared)

    def train_args(self, settings: TrainingSettings, named: Sequence[str] = ()) -> list[str]:
        """The flags of ``hf_posbias.training.train`` that reproduce ``settings``: the run's
        own (:data:`RUN_FIELDS`), then ``named`` (spelled out even at their defaults, in that
        order), then every other setting that is not its default.

        Example:
            >>> run = Run("bert-base", "begin", "o")
            >>> run.train_args(run.settings("d", seed=42, max_steps=3), ["seed"])
            ['--model', 'bert-base', '--config', 'begin', '--data', 'd', '--out', 'o', \
'--seed', '42', '--max-steps', '3']
        """
        from hf_posbias.settings import settings_to_argv

        return settings_to_argv(settings, first=(*RUN_FIELDS, *named))

    def launch_command(
        self,
        settings: TrainingSettings,
        named: Sequence[str] = (),
        num_processes: int | None = None,
    ) -> list[str]:
        """The ``accelerate launch`` command line of this run (:meth:`train_args`)."""
        launch = ["accelerate", "launch"]
        if num_processes and num_processes > 1:
            launch += ["--multi_gpu", "--num_processes", str(num_processes)]
        return [*launch, "-m", "hf_posbias.training.train", *self.train_args(settings, named)]

    def parse_settings(self, data: str, flags: Sequence[str] = ()) -> TrainingSettings:
        """This run's settings on ``data`` with ``flags``, a user's command-line flags of
        ``posbias train`` (the matrix scripts pass theirs on to every run); a bad or unknown
        flag is one :class:`~hf_posbias.errors.InputError` line.

        Example:
            >>> Run("bert-base", "begin", "o").parse_settings("d", ["--max-steps", "3"]).max_steps
            3
        """
        from hf_posbias.training.training_settings import parse_settings

        return parse_settings([*self._flags(data), *flags])

    def _flags(self, data: str) -> list[str]:
        args = ["--model", self.model, "--config", self.config, "--data", data]
        args += ["--out", self.out_dir]
        return args + (["--pooling", self.pooling] if self.pooling else [])

    def is_finished(self) -> bool:
        """Final model, card and marker all present."""
        return all((Path(self.out_dir) / name).is_file() for name in FINISHED_FILES)


def run_name(model: str, config: str, pooling: str | None = None) -> str:
    """The folder name of a run: ``posbias-<model>-<config>[-<pooling>]``.

    Example:
        >>> run_name("org/My Model", "50:25:25", "mean")
        'posbias-my-model-50-25-25-mean'
    """
    name = f"posbias-{_slug(model)}-{_slug(config)}"
    return f"{name}-{pooling}" if pooling else name


def expand_runs(
    models: Sequence[str],
    configs: Sequence[str],
    out_root: str | Path,
    poolings: Sequence[str | None] = (None,),
) -> list[Run]:
    """All runs, model-major (model, then configuration, then pooling)."""
    runs = []
    for model in models:
        for config in configs:
            for pooling in poolings:
                name = run_name(model, config, pooling)
                runs.append(Run(model, config, str(Path(out_root) / name), pooling))
    return runs


def select_shard(runs: Sequence[Run], shard: str | None) -> list[Run]:
    """Runs ``i, i+n, …`` for ``shard="i/n"`` (0-based); all runs for ``None``."""
    if not shard:
        return list(runs)
    match = re.fullmatch(r"(\d+)/(\d+)", shard)
    if not match or not 0 <= int(match[1]) < int(match[2]):
        raise InputError(f"{setting_label('shard')} must be i/n with 0 <= i < n, got {shard!r}")
    i, n = int(match[1]), int(match[2])
    return list(runs[i::n])


@dataclass
class MatrixReport:
    """What a matrix invocation did."""

    commands: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    """Dry run: one settings/time line per run (same order as ``commands``)."""
    projected_seconds: float | None = None
    """Dry run: the projected wall time of all runs (None unless every run has one)."""


def _rows_per_bin(data: str, config: str) -> dict[str, int] | None:
    """Rows per length bin of a local training folder's config (None if not readable here)."""
    if not Path(data).expanduser().is_dir():
        return None
    from hf_posbias.training.train import load_training_rows

    try:
        counts = load_training_rows(data, config).counts()
    except PosbiasError:
        return None
    return {b: sum(row.values()) for b, row in counts.items()}


def plan_runs(
    runs: Sequence[TrainingSettings],
    *,
    num_processes: int | None = None,
    plan_for: str | None = None,
    throughput: str | None = None,
) -> list[Any]:
    """The :class:`~hf_posbias.training.planning.RunPlan` of each run's settings (memory
    settings, steps, projected seconds with ``throughput``), for ``plan_for`` (default: this
    machine).
    """
    if not runs:  # nothing to plan: no device to probe (an evaluation-only study)
        return []
    from hf_posbias.devices import described_device, device_info
    from hf_posbias.training.planning import load_throughput, plan_run

    device = described_device(plan_for) if plan_for else device_info()
    figures = load_throughput(throughput) if throughput else None
    # Each configuration's data is read once, not once per base model that trains on it.
    rows_per_bin = {(s.data, s.config): _rows_per_bin(s.data, s.config) for s in runs}
    # No bar: a plan is made in seconds, and a bar's ETA next to the projected hours of
    # training would read as the time the study takes.
    return [
        plan_run(
            settings,
            device,
            num_processes or 1,
            rows_per_bin=rows_per_bin[settings.data, settings.config],
            throughput=figures,
        )
        for settings in runs
    ]


def run_matrix(
    runs: Sequence[TrainingSettings],
    named: Sequence[str] = (),
    *,
    dry_run: bool = False,
    num_processes: int | None = None,
    in_process: bool = False,
    plan_for: str | None = None,
    throughput: str | None = None,
) -> MatrixReport:
    """Train ``runs`` (one settings object each) one after another, skipping finished ones.

    The settings are built before anything is launched, so a bad value stops the matrix before
    the first run. ``named``: the settings each launch command spells out even at their
    defaults (:meth:`Run.train_args`); the command line is rendered only where a run is
    launched or printed. ``dry_run`` only lists the launch commands and plans
    (:func:`plan_runs`). ``in_process`` calls the trainer in this Python process with the
    settings themselves instead of ``accelerate launch`` (single process; used by tests and on
    laptops).
    """
    settings = list(runs)
    report = MatrixReport()
    if dry_run:
        report.commands = [
            shlex.join(Run.of(s).launch_command(s, named, num_processes)) for s in settings
        ]
        plans = plan_runs(
            settings, num_processes=num_processes, plan_for=plan_for, throughput=throughput
        )
        report.plans = [plan.summary() for plan in plans]
        seconds = [plan.projected_seconds for plan in plans]
        if all(s is not None for s in seconds):
            report.projected_seconds = float(sum(seconds))  # type: ignore[arg-type]
        return report
    for run_settings in progress(settings, total=len(settings), desc="matrix",
                                 disable=len(settings) < 2):  # fmt: skip
        run = Run.of(run_settings)
        command = run.launch_command(run_settings, named, num_processes)
        report.commands.append(shlex.join(command))
        if run.is_finished():
            report.skipped.append(run.name)
            continue
        if in_process:
            from hf_posbias.training.train import train_model

            train_model(run_settings)
        else:
            # `accelerate launch` of this interpreter, not the first `accelerate` on PATH: a
            # worker (a Ray task, a Slurm job) may not have the environment's bin folder on it.
            launch = [sys.executable, "-m", "accelerate.commands.launch", *command[2:]]
            proc = subprocess.run(launch, check=False)
            if proc.returncode != 0:
                raise PosbiasError(
                    f"run {run.name} failed (exit {proc.returncode}); rerun to resume: "
                    f"{len(report.ran)} runs finished in this invocation"
                )
        report.ran.append(run.name)
    return report


@dataclass(kw_only=True)
class LaunchSettings(Settings):
    """How the training runs of a matrix are launched, shared out and planned: the flags that
    ``posbias study run`` and ``scripts/run_matrix.py`` have in common.

    Example:
        >>> LaunchSettings(shard="4/4")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: shard must be i/n with 0 <= i < n, got '4/4'
    """

    shard: str | None = setting("i/n: this node's share of the runs (0-based)", default=None)
    dry_run: bool = setting(
        "print every run, its settings after the memory plan and its projected time; run nothing",
        default=False,
    )
    in_process: bool = setting(
        "train in this process instead of `accelerate launch`", default=False
    )
    num_processes: int | None = setting(
        "accelerate processes per run (DDP)", default=None, range=at_least(1)
    )
    plan_for: str | None = setting(
        f"dry run: plan for this GPU ({', '.join(KNOWN_GPUS)}, cpu)",
        default=None,
        metavar="GPU",
        unset="this machine's device",
    )
    throughput: str | None = setting(
        "seconds per step measured by benchmarks/train_throughput.py --json: a dry run's "
        "projected hours (posbias study run also starts the longest runs first)",
        default=None,
        metavar="JSON",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        select_shard([], self.shard)  # validates i/n before anything runs


@dataclass(kw_only=True)
class MatrixSettings(LaunchSettings):
    """Flags of ``scripts/run_matrix.py`` (training only; ``posbias study run`` also evaluates and
    reports); unknown flags (e.g. ``--max-steps 100 --global-batch 64``) go to every run."""

    data: str = setting("training-set repo/folder (<out>/train)")
    out: str = setting("root folder of the checkpoints")
    models: list[str] | None = setting("default: YHP26's eight bases (Table 2)", default=None)
    configs: list[str] | None = setting("default: begin middle end uniform", default=None)


def build_matrix_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The matrix scripts' parser, generated from :class:`MatrixSettings`."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_settings_arguments(parser, MatrixSettings)
    return parser


def matrix_main(
    argv: Sequence[str] | None,
    prog: str,
    description: str,
    default_models: Sequence[str],
    default_configs: Sequence[str] = PAPER_CONFIGS,
    poolings: Sequence[str | None] = (None,),
) -> int:
    """Entry point of the matrix scripts; returns the exit status."""
    parser = build_matrix_parser(prog, description)
    namespace, extra = parser.parse_known_args(argv)
    try:
        args = settings_from_args(MatrixSettings, namespace)  # checks --shard, --num-processes
        runs = expand_runs(
            args.models or default_models, args.configs or default_configs, args.out, poolings
        )
        runs = select_shard(runs, args.shard)
        # The pass-through flags are this script's own command line: parsed once per run here,
        # so a bad flag stops the matrix before the first run.
        report = run_matrix(
            [run.parse_settings(args.data, extra) for run in runs],
            dry_run=args.dry_run,
            num_processes=args.num_processes,
            in_process=args.in_process,
            plan_for=args.plan_for,
            throughput=args.throughput,
        )
    except PosbiasError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        for command, plan in zip(report.commands, report.plans):
            print(command)
            print(f"  # {plan}")
        what = f"# {len(runs)} run{'s' if len(runs) != 1 else ''}"
        if report.projected_seconds is not None:
            print(f"{what}: projected {report.projected_seconds / 3600:.1f} h in all")
        elif args.throughput:
            print(f"{what}: no projected total (runs without figures are marked above)")
        else:
            print(
                f"{what}: pass --throughput FILE (benchmarks/train_throughput.py "
                "--json FILE) for a projected time"
            )
    else:
        print(f"{len(report.ran)} runs trained, {len(report.skipped)} already finished (skipped)")
    return 0
