"""The study on N GPUs, simulated: static ``--shard`` round-robin against the executors' order.

For a study spec (default ``studies/yhp26.yaml``: 8 bases × 4 configurations, 32 runs and 40
models to evaluate) this builds the study's units of work (:func:`hf_posbias.study.units.
study_units`: the same graph the executors run) with each training run's projected cost, and for
each N prints three makespans, as ratios to the lower bound:

- **static**: ``--shard i/N`` for i = 0…N-1 (runs ``i, i+N, …`` and bases ``i, i+N, …``, each
  shard one GPU working through its share in order: :func:`hf_posbias.study.run.select_models`);
- **executor**: N GPUs that each take the first ready unit of
  :func:`hf_posbias.executors.units.schedule_order` when they free up (longest projected chain
  first, evaluations after their training: :func:`hf_posbias.executors.units.simulate`);
- **lower bound**: max(longest run, total / N).

Costs: with ``--throughput FILE`` (``benchmarks/train_throughput.py --json`` on your GPU) each
run's projected seconds from the training planner (the hours ``posbias study run --dry-run
--throughput FILE`` prints). Without it, each run's model FLOPs (the planner's steps per bin ×
global batch × :func:`hf_posbias.trainer_base.shapes.sequence_flops` of the bin's mid-length
document, capped at the model's length): the ratios hold, hours are not shown. Evaluations are
not projected by the planner and cost 0 here, so the figures are the training schedule.

Run:
    .venv/bin/python benchmarks/study_scheduling.py                      # yhp26, N = 8 16 32
    .venv/bin/python benchmarks/study_scheduling.py --throughput t.json --gpus 8
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def flops_costs(spec, models) -> dict[str, float]:
    """Each run's model FLOPs over all its steps (see the module docstring)."""
    from hf_posbias.modeling.bases import get_model_spec
    from hf_posbias.study.layout import run_settings
    from hf_posbias.trainer_base.shapes import ModelShape, sequence_flops
    from hf_posbias.training.builder import max_seq_length
    from hf_posbias.training.planning import (
        CHARS_PER_TOKEN,
        PAPER_BINS,
        PAPER_ROWS_PER_BIN,
        model_shape_config,
        steps_per_bin,
    )

    shapes: dict[str, tuple[ModelShape, int]] = {}
    costs = {}
    for model in (m for m in models if m.trained):
        settings = run_settings(spec, model)
        if model.base not in shapes:
            model_spec = get_model_spec(model.base)
            config = model_shape_config(model_spec)
            limit = max_seq_length(config, model_spec, settings.max_length)
            shapes[model.base] = (ModelShape.from_config(config), limit)
        shape, limit = shapes[model.base]
        rows = {b: PAPER_ROWS_PER_BIN.get(settings.config, 8189) for b in PAPER_BINS}
        steps = steps_per_bin(rows, settings.global_batch, settings.epochs, settings.max_steps)
        total = 0.0
        for bin_name, n_steps in steps.items():
            low, high = (int(x) for x in bin_name.split("-"))
            tokens = min(limit, math.ceil((low + high) / 2 / CHARS_PER_TOKEN))
            total += n_steps * settings.global_batch * sequence_flops(shape, tokens)
        costs[model.name] = total
    return costs


def static_makespan(units, models, n: int) -> float:
    """``--shard i/n`` for every i: each shard runs its own units one after another."""
    from hf_posbias.study.run import select_models

    cost = {u.id: u.cost or 0.0 for u in units}
    spans = []
    for i in range(n):
        names = {m.name for m in select_models(models, f"{i}/{n}")}
        spans.append(sum(c for uid, c in cost.items() if uid.split("/")[1] in names))
    return max(spans)


def schedule_table(spec, costs: dict, gpus: list[int], unit: str) -> list[str]:
    """The markdown table of makespans for each N (ratios to the lower bound)."""
    from hf_posbias.executors.units import simulate
    from hf_posbias.study.layout import study_models
    from hf_posbias.study.units import StudyWork, dry_run_tasks, study_units

    models = study_models(spec, "study")
    tasks = dry_run_tasks(spec)
    work = StudyWork(save_base=print, evaluate=print, complete=print)  # never called here
    units = study_units(spec, "study", models, tasks, work, costs=costs)
    total = sum(u.cost or 0.0 for u in units)
    longest = max(u.cost or 0.0 for u in units)
    lines = [
        f"{sum(m.trained for m in models)} runs, {len(models)} models × {len(tasks)} tasks; "
        f"total {total:.4g} {unit}, longest run {longest:.4g} {unit}",
        "",
        "| GPUs | lower bound | static --shard | executor order | static / bound | "
        "executor / bound | static / executor |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in gpus:
        bound = max(longest, total / n)
        static = static_makespan(units, models, n)
        ours = simulate(units, n)
        lines.append(
            f"| {n} | {bound:.4g} | {static:.4g} | {ours:.4g} | {static / bound:.3f} | "
            f"{ours / bound:.3f} | {static / ours:.3f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default=str(REPO / "studies" / "yhp26.yaml"))
    parser.add_argument("--gpus", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--throughput", default=None, help="train_throughput.py --json file")
    parser.add_argument("--plan-for", default="h100", help="the GPU the planner plans for")
    parser.add_argument("--bases", nargs="+", default=None, help="override the spec's bases")
    args = parser.parse_args(argv)
    from hf_posbias.study.layout import study_models
    from hf_posbias.study.spec import load_spec
    from hf_posbias.study.units import projected_costs

    spec = load_spec(args.spec, {"bases": args.bases})
    models = study_models(spec, "study")
    if args.throughput:
        seconds = projected_costs(spec, models, args.throughput, args.plan_for)
        missing = sorted(name for name, s in seconds.items() if s is None)
        if missing:
            print(f"no throughput figures for {', '.join(missing)}", file=sys.stderr)
            return 2
        costs = {name: s / 3600 for name, s in seconds.items() if s is not None}
        unit = "GPU-hours (planner, --throughput)"
    else:
        costs = flops_costs(spec, models)
        unit = "model FLOPs (no --throughput: ratios only)"
    print(f"# {Path(args.spec).name}: makespans in {unit}")
    for line in schedule_table(spec, costs, args.gpus, unit.split(" (")[0]):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
