"""``posbias compare RUN_A RUN_B``: paired test of two evaluation runs of the same task.

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(
    ...     ["compare", "runs/a", "runs/b", "--method", "randomization"])
    >>> (args.run_a, args.method, args.resamples)
    ('runs/a', 'randomization', 1000)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hf_posbias.cli.common import add_verb
from hf_posbias.evaluation.evaluation_settings import CompareSettings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare`` verb."""
    add_verb(
        subparsers,
        "compare",
        CompareSettings,
        run_compare,
        help="paired test of two evaluate runs: Δ per position, mean, PSI",
        description="Compare two `posbias evaluate` run folders of the same task on their shared "
        "queries: Δ = B − A per bucket, for the mean and for PSI, with percentile intervals and "
        "two-sided p-values (paired bootstrap or paired randomization).",
    )


def run_compare(s: CompareSettings) -> None:
    """Handler of ``posbias compare``."""
    import json

    from hf_posbias.evaluation.compare import compare_runs, difference_rows, significant
    from hf_posbias.shards import write_text_atomic
    from hf_posbias.tables import as_table

    results = compare_runs(s.run_a, s.run_b, method=s.method, n_resamples=s.resamples, seed=s.seed)
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
    if s.out:
        out = Path(s.out)
        out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out / "compare.md", text + "\n")
        write_text_atomic(
            out / "compare.json",
            json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False) + "\n",
        )
        print(f"wrote {out / 'compare.md'} and {out / 'compare.json'}")
