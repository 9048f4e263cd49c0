"""Expand models × configurations (× poolings) into training runs; run them resumably.

The paper's matrix is 8 bases × 4 configurations = 32 runs (``scripts/run_matrix.py``); the
pooling ablation is ModernBERT-base × 4 poolings × 4 configurations
(``scripts/pooling_ablation.py``).
Each run is one ``accelerate launch -m hf_posbias.training.train …`` into its own folder
``<out>/posbias-<model>-<config>[-<pooling>]``. A run whose folder holds the final model, the card
and the ``posbias_training.json`` marker (written last) is finished and skipped on rerun, so a
killed matrix resumes where it stopped. ``--shard i/n`` (0-based) takes runs i, i+n, … for one
node of n.

Example:
    >>> from hf_posbias.training.matrix import expand_runs, PAPER_CONFIGS
    >>> runs = expand_runs(["bert-base"], PAPER_CONFIGS, "ckpts")
    >>> [r.name for r in runs][:2]
    ['posbias-bert-base-begin', 'posbias-bert-base-middle']
    >>> runs[0].launch_command("out/train")[:4]
    ['accelerate', 'launch', '-m', 'hf_posbias.training.train']
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

from hf_posbias.errors import InputError, PosbiasError
from hf_posbias.sampling import PAPER_CONFIG_NAMES

PAPER_CONFIGS: tuple[str, ...] = PAPER_CONFIG_NAMES  # hf_posbias.sampling.PAPER_CONFIGS
ABLATION_POOLINGS: tuple[str, ...] = ("cls", "mean", "max", "lasttoken")
FINISHED_FILES: tuple[str, ...] = ("posbias_training.json", "README.md", "modules.json")


def _slug(text: str) -> str:
    name = Path(text).name if ("/" in text or Path(text).exists()) else text
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-").lower()


@dataclass(frozen=True)
class Run:
    """One training run of the matrix."""

    model: str
    config: str
    out_dir: str
    pooling: str | None = None

    @property
    def name(self) -> str:
        """Folder name: ``posbias-<model>-<config>[-<pooling>]``."""
        return Path(self.out_dir).name

    def train_args(self, data: str, extra: Sequence[str] = ()) -> list[str]:
        """Arguments of ``hf_posbias.training.train`` for this run."""
        args = ["--model", self.model, "--config", self.config, "--data", data]
        args += ["--out", self.out_dir]
        if self.pooling:
            args += ["--pooling", self.pooling]
        return args + list(extra)

    def launch_command(
        self, data: str, extra: Sequence[str] = (), num_processes: int | None = None
    ) -> list[str]:
        """The ``accelerate launch`` command line of this run."""
        launch = ["accelerate", "launch"]
        if num_processes and num_processes > 1:
            launch += ["--multi_gpu", "--num_processes", str(num_processes)]
        return [*launch, "-m", "hf_posbias.training.train", *self.train_args(data, extra)]

    def is_finished(self) -> bool:
        """Final model, card and marker all present."""
        return all((Path(self.out_dir) / name).is_file() for name in FINISHED_FILES)


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
                name = f"posbias-{_slug(model)}-{_slug(config)}"
                if pooling:
                    name += f"-{pooling}"
                runs.append(Run(model, config, str(Path(out_root) / name), pooling))
    return runs


def select_shard(runs: Sequence[Run], shard: str | None) -> list[Run]:
    """Runs ``i, i+n, …`` for ``shard="i/n"`` (0-based); all runs for ``None``."""
    if not shard:
        return list(runs)
    match = re.fullmatch(r"(\d+)/(\d+)", shard)
    if not match or not 0 <= int(match[1]) < int(match[2]):
        raise InputError(f"--shard must be i/n with 0 <= i < n, got {shard!r}")
    i, n = int(match[1]), int(match[2])
    return list(runs[i::n])


@dataclass
class MatrixReport:
    """What a matrix invocation did."""

    commands: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def run_matrix(
    runs: Sequence[Run],
    data: str,
    extra: Sequence[str] = (),
    dry_run: bool = False,
    num_processes: int | None = None,
    in_process: bool = False,
) -> MatrixReport:
    """Run ``runs`` one after another, skipping finished ones.

    ``dry_run`` only lists the launch commands. ``in_process`` calls the trainer in this Python
    process instead of ``accelerate launch`` (single process; used by tests and on laptops).
    """
    from tqdm.auto import tqdm

    report = MatrixReport()
    for run in tqdm(runs, desc="matrix", disable=dry_run or len(runs) < 2):
        command = run.launch_command(data, extra, num_processes)
        report.commands.append(shlex.join(command))
        if dry_run:
            continue
        if run.is_finished():
            report.skipped.append(run.name)
            continue
        if in_process:
            from hf_posbias.training.train import build_arg_parser, config_from_args, train_model

            args = build_arg_parser().parse_args(run.train_args(data, extra))
            train_model(config_from_args(args))
        else:
            proc = subprocess.run(command, check=False)
            if proc.returncode != 0:
                raise PosbiasError(
                    f"run {run.name} failed (exit {proc.returncode}); rerun to resume: "
                    f"{len(report.ran)} runs finished in this invocation"
                )
        report.ran.append(run.name)
    return report


def build_matrix_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """Flags shared by ``scripts/run_matrix.py`` and ``scripts/pooling_ablation.py``.

    Unknown flags (e.g. ``--max-steps 100 --batch-size 64``) are passed on to every run.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--data", required=True, help="training-set repo/folder (<out>/train)")
    parser.add_argument("--out", required=True, help="root folder of the checkpoints")
    parser.add_argument("--models", nargs="+", default=None, help="default: the paper's bases")
    parser.add_argument(
        "--configs", nargs="+", default=None, help="default: begin middle end uniform"
    )
    parser.add_argument("--shard", default=None, help="i/n: this node's share of the runs")
    parser.add_argument("--num-processes", type=int, default=None, help="accelerate processes")
    parser.add_argument("--dry-run", action="store_true", help="print the launch commands only")
    parser.add_argument("--in-process", action="store_true", help="no accelerate subprocess")
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
    args, extra = parser.parse_known_args(argv)
    try:
        runs = expand_runs(
            args.models or default_models, args.configs or default_configs, args.out, poolings
        )
        runs = select_shard(runs, args.shard)
        report = run_matrix(
            runs, args.data, extra, args.dry_run, args.num_processes, args.in_process
        )
    except PosbiasError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        print("\n".join(report.commands))
    else:
        print(f"{len(report.ran)} runs trained, {len(report.skipped)} already finished (skipped)")
    return 0
