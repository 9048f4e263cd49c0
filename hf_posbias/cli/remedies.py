"""``posbias analyze remedies``: every inference-time remedy of a bi-encoder against the plain
model (``posbias remedies``, its former name, stays as a hidden alias).

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(
    ...     ["analyze", "remedies", "--model", "m", "--task", "t", "--out", "o"])
    >>> (args.model, args.passage_tokens, args.stride, args.segments)
    ('m', 128, 64, 4)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hf_posbias.cli.common import add_verb
from hf_posbias.evaluation.settings import RemediesSettings


def register_remedies(verbs: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``remedies`` verb (``posbias analyze remedies``); returns its parser."""
    return add_verb(
        verbs,
        "remedies",
        RemediesSettings,
        run_remedies,
        help="the plain model and each inference-time remedy on the same queries, with costs",
        description="Run the plain bi-encoder (remedy none) and each remedy (maxp, firstp, sump, "
        "chunk-mean, segment-balanced) on the same position tasks and write, per task, "
        "<out>/<task>/remedies.json (remedy, mean, psi, harmonic_mean, delta_mean, p_value, "
        "encoded_tokens, seconds), remedies.md and a PNG of PSI against cost; Δ and p are "
        "paired against none on the same queries. Every run is a `posbias evaluate` folder "
        "under <out>/runs/; a rerun reuses every run that finished with the same settings "
        "(a killed comparison resumes, an added remedy costs only itself).",
        with_args=True,
    )


def run_remedies(s: RemediesSettings, args: argparse.Namespace) -> None:
    """Handler of ``posbias remedies``."""
    import warnings

    from hf_posbias.cli.evaluate import _quiet
    from hf_posbias.evaluation.runs.remedy_table import compare_remedies
    from hf_posbias.tables import as_table

    _quiet(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        results = compare_remedies(s, echo=print)
    for task, rows in results.items():
        print(f"{task}:")
        print(as_table(rows).to_markdown())
    print(f"wrote {Path(s.out)}/<task>/remedies.json")
