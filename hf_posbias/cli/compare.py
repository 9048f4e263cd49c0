"""``posbias compare RUN_A RUN_B``: paired test of two evaluation runs of the same task.

Example:
    >>> import argparse
    >>> from hf_posbias.cli.compare import register
    >>> parser = argparse.ArgumentParser(); sub = parser.add_subparsers()
    >>> register(sub)
    >>> args = parser.parse_args(["compare", "runs/a", "runs/b", "--method", "randomization"])
    >>> (args.run_a, args.method, args.resamples)
    ('runs/a', 'randomization', 1000)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hf_posbias.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare`` verb."""
    compare = subparsers.add_parser(
        "compare",
        help="paired test of two evaluate runs of the same task: Δ per bucket, mean, PSI",
        description="Compare two `posbias evaluate` run folders of the same task on their shared "
        "queries: Δ = B − A per bucket, for the mean and for PSI, with percentile intervals and "
        "two-sided p-values (paired bootstrap or paired randomization).",
    )
    compare.add_argument("run_a", help="run folder A (the reference, e.g. the base model)")
    compare.add_argument("run_b", help="run folder B")
    compare.add_argument(
        "--method", choices=("bootstrap", "randomization"), default="bootstrap", help="paired test"
    )
    compare.add_argument("--resamples", type=int, default=1000, help="resamples (default 1000)")
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument("--out", default=None, help="also write compare.json and compare.md here")
    compare.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    """Handler of ``posbias compare``."""
    import json

    from hf_posbias.evaluation.compare import compare_runs, difference_rows, significant
    from hf_posbias.tables import as_table

    if args.resamples < 1:
        raise InputError(f"--resamples must be >= 1, got {args.resamples}")
    results = compare_runs(
        args.run_a, args.run_b, method=args.method, n_resamples=args.resamples, seed=args.seed
    )
    parts = []
    for r in results:
        c = r.comparison
        found = significant(c)
        head = (
            f"## {r.task}: B = {r.label_b} vs A = {r.label_a} ({c.method}, {c.n_resamples} "
            f"resamples, {round(100 * c.confidence)}% intervals)"
        )
        table = as_table(difference_rows(c)).to_markdown()
        verdict = (
            f"differs significantly (p < 0.05) in: {', '.join(found)}"
            if found
            else "no significant difference at p < 0.05"
        )
        notes = [f"note: {n}" for n in c.notes]
        parts.append("\n".join([head, "", table, "", verdict, *notes]))
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(text + "\n")
        (out / "compare.json").write_text(
            json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False) + "\n"
        )
        print(f"wrote {out / 'compare.md'} and {out / 'compare.json'}")
    return 0
