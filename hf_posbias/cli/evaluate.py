"""``posbias evaluate`` and ``posbias analyze audit``: position-wise retrieval scores and PSI.

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(
    ...     ["evaluate", "--model", "bm25", "--task", "t", "--out", "o"])
    >>> (args.model, args.task, args.top_k, args.progress)
    ('bm25', ['t'], 100, True)
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from hf_posbias.cli.common import add_verb

if TYPE_CHECKING:
    from hf_posbias.evaluation.evaluation_settings import EvaluateSettings, ModelAuditSettings

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``evaluate`` verb."""
    from hf_posbias.evaluation.evaluation_settings import EvaluateSettings

    add_verb(
        subparsers,
        "evaluate",
        EvaluateSettings,
        run_evaluate,
        help="per-position nDCG@10, mean and PSI of a model on position tasks",
        description="Evaluate a retriever on position tasks through mteb and write "
        "<out>/summary.json (one task: a dict; several: a list) with per-bucket ndcg_at_10, "
        "their mean and PSI with bootstrap intervals, summary.md/summary.csv, the per-query "
        "table (per_query/<task>.parquet), the TREC run (runs/<task>.trec) and mteb's result "
        "files.",
        with_args=True,
    )


def _quiet(args: argparse.Namespace) -> None:
    """Keep the terminal for the results: no per-subset bars of datasets unless asked (the
    libraries' log lines and notices: :func:`hf_posbias.cli.main`, for every verb)."""
    if getattr(args, "verbose", False):
        return
    import os
    import sys

    # Through the environment while datasets is not loaded yet: a mistake found before any
    # model is needed stays an instant error line (no heavy import for it).
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
    else:
        os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"


def _library_bars(args: argparse.Namespace, progress: bool) -> bool:
    """mteb's and sentence-transformers' carriage-return bars: progress on a terminal, or ``-v``;
    a log file gets the plain progress lines of :mod:`hf_posbias.progress` only."""
    from hf_posbias.progress import is_interactive

    return bool(getattr(args, "verbose", False)) or (progress and is_interactive())


def _print_summaries(summaries: list) -> None:
    from hf_posbias.evaluation.reports.report import with_interval

    for s in summaries:
        scores = ", ".join(
            f"{b}={'empty' if v is None else with_interval(v, s.interval(b))}"
            for b, v in s.ndcg_at_10.items()
        )
        psi = "n/a" if s.psi is None else with_interval(s.psi, s.interval(what="psi"))
        mean = with_interval(s.mean, s.interval(what="mean"))
        print(f"{s.task}: mean nDCG@10 {mean}, PSI {psi} ({scores})")
        print(f"  {s.protocol_line()}")
        if s.scoring == "posir" and s.query_mean is not None:
            # PosIR's headline is the mean over queries; the line above gives the bin mean.
            trends = "; ".join(
                f"{stratum} slope {t['slope']:.4f}, tau {t['kendall_tau']:.3f}"
                for stratum, t in s.bin_trend.items()
                if t.get("slope") is not None and t.get("kendall_tau") is not None
            )
            print(
                f"  PosIR headline nDCG@10 (mean over queries) {s.query_mean:.4f}; mean above = "
                f"mean of the bin means" + (f"; trend over bin means: {trends}" if trends else "")
            )
        for note in s.warnings:
            print(f"warning: {note}")


def run_evaluate(s: EvaluateSettings, args: argparse.Namespace) -> None:
    """Handler of ``posbias evaluate``."""
    import warnings

    from hf_posbias.evaluation.runs.runner import evaluate_model

    _quiet(args)
    token = None
    if s.push_results:  # a missing token fails before the run, not after it
        from hf_posbias.hub import resolve_token

        token = resolve_token(
            s.hub_token, purpose=f"--push-results {s.push_results}", flag="--hub-token"
        )
    with warnings.catch_warnings():
        # The summaries carry the warnings; they are printed once below.
        warnings.simplefilter("ignore", UserWarning)
        summaries = evaluate_model(
            s.model,
            s.task,
            **s.evaluate_kwargs(),
            show_progress=_library_bars(args, s.progress),
        )
        if s.plot:
            from hf_posbias.evaluation.reports.report import plot_position_curves

            for summary in summaries:
                safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in summary.task)
                plot_position_curves([summary], Path(s.out) / "plots" / f"{safe}.png")
    _print_summaries(summaries)
    print(f"wrote {Path(s.out) / 'summary.json'}")
    if s.push_results:
        from hf_posbias.evaluation.reports.hub_results import push_results

        url = push_results(
            summaries,
            s.push_results,
            command=evaluate_command(s),
            folder=Path(s.out) / "hub-results",
            token=token,
        )
        print(f"pushed the results to {s.push_results} → {url}")


def evaluate_command(s: EvaluateSettings) -> str:
    """The ``posbias evaluate`` command line of ``s``, without what only sends the results
    (``--push-results``, the token): the source the pushed entries name.

    Example:
        >>> from hf_posbias.evaluation.evaluation_settings import EvaluateSettings
        >>> evaluate_command(EvaluateSettings(model="bm25", task=("T",), out="o", top_k=20,
        ...     push_results="me/bm25", hub_token="hf_x"))
        'posbias evaluate --model bm25 --task T --out o --top-k 20'
    """
    import dataclasses
    import shlex

    from hf_posbias.settings import settings_to_argv

    bare = dataclasses.replace(s, push_results=None, hub_token=None)
    return "posbias evaluate " + shlex.join(settings_to_argv(bare, first=("model", "task", "out")))


def run_audit(s: ModelAuditSettings, args: argparse.Namespace) -> None:
    """Handler of ``posbias analyze audit``."""
    from hf_posbias.analysis.audit import audit_model

    _quiet(args)
    ctx, md_path, html_path = audit_model(s, show_progress=_library_bars(args, s.progress))
    _print_summaries(ctx.summaries)
    for r in ctx.reversals:
        delta = "n/a" if r.delta_rev is None else f"{r.delta_rev:+.4f}"
        print(f"{r.task}: mirror reversal Δrev {delta} (front {r.n_front}, back {r.n_back})")
    for name, why in ctx.reversal_skipped.items():
        print(f"{name}: mirror reversal skipped ({why})")
    print(f"wrote {md_path} and {html_path}")
