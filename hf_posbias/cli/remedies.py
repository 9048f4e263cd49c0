"""``posbias analyze remedies``: every inference-time remedy of a bi-encoder against the plain
model.

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

from hf_posbias.evaluation.evaluation_settings import RemediesSettings


def run_remedies(s: RemediesSettings, args: argparse.Namespace) -> None:
    """Handler of ``posbias analyze remedies``."""
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
