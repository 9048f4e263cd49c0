"""``posbias leaderboard RUN ... --out DIR``: one ranked table per task, ties marked.

Example:
    >>> import argparse
    >>> from hf_posbias.cli.leaderboard import register
    >>> parser = argparse.ArgumentParser(); sub = parser.add_subparsers()
    >>> register(sub)
    >>> args = parser.parse_args(["leaderboard", "runs/a", "runs/b", "--out", "lb"])
    >>> (args.runs, args.out, args.sort_by)
    (['runs/a', 'runs/b'], 'lb', 'mean')
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``leaderboard`` verb."""
    from hf_posbias.evaluation.reports.leaderboard import LeaderboardSettings
    from hf_posbias.settings import add_settings_arguments

    parser = subparsers.add_parser(
        "leaderboard",
        help="rank evaluate runs per task (mean nDCG@10, PSI, harmonic mean, slope) with ties",
        description="One table per task over `posbias evaluate` run folders: mean nDCG@10, PSI, "
        "harmonic mean and position slope with their intervals, sorted; neighbours a paired "
        "bootstrap on the shared queries cannot separate are marked tied. Writes "
        "leaderboard.md/.csv/.parquet and hub/ (a Hub dataset repo folder with a card).",
    )
    add_settings_arguments(parser, LeaderboardSettings)
    parser.set_defaults(func=run_leaderboard)


def run_leaderboard(args: argparse.Namespace) -> int:
    """Handler of ``posbias leaderboard``."""
    from pathlib import Path

    from hf_posbias.evaluation.reports.leaderboard import (
        LeaderboardSettings,
        markdown,
        write_leaderboard,
    )
    from hf_posbias.settings import settings_from_args

    settings = settings_from_args(LeaderboardSettings, args)
    tables = write_leaderboard(settings)
    print(markdown(tables, settings))
    print(f"wrote {Path(settings.out) / 'leaderboard.md'} and {Path(settings.out) / 'hub'}")
    return 0
