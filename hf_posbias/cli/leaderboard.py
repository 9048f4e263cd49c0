"""``posbias leaderboard RUN ... --out DIR``: one ranked table per task, ties marked; with
``--from-hub TASK_REPO [MODEL_REPO ...]``, the board of a Hub benchmark's ``.eval_results``.

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(["leaderboard", "runs/a", "runs/b", "--out", "lb"])
    >>> (args.runs, args.out, args.sort_by)
    (['runs/a', 'runs/b'], 'lb', 'mean')
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from hf_posbias.cli.common import add_verb

if TYPE_CHECKING:
    from hf_posbias.evaluation.reports.leaderboard import LeaderboardSettings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``leaderboard`` verb."""
    from hf_posbias.evaluation.reports.leaderboard import LeaderboardSettings

    add_verb(
        subparsers,
        "leaderboard",
        LeaderboardSettings,
        run_leaderboard,
        help="rank evaluate runs per task (mean, PSI, slope), ties marked",
        description="One table per task over `posbias evaluate` run folders: mean nDCG@10, PSI, "
        "harmonic mean and position slope with their intervals, sorted; neighbours a paired "
        "bootstrap on the shared queries cannot separate are marked tied. With --from-hub "
        "TASK_REPO, the same board from the models' .eval_results on that Hub benchmark (the "
        "model repos given, else those on its Hub leaderboard). Writes "
        "leaderboard.md/.csv/.parquet and hub/ (a Hub dataset repo folder with a card).",
    )


def run_leaderboard(settings: LeaderboardSettings) -> None:
    """Handler of ``posbias leaderboard``."""
    from pathlib import Path

    from hf_posbias.evaluation.reports.leaderboard import markdown, write_leaderboard

    notes: list[str] = []
    tables = write_leaderboard(settings, notes)
    print(markdown(tables, settings))
    for note in notes:
        print(f"note: {note}")
    print(f"wrote {Path(settings.out) / 'leaderboard.md'} and {Path(settings.out) / 'hub'}")
