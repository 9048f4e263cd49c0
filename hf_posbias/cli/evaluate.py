"""``posbias evaluate`` and ``posbias audit``: position-wise retrieval scores and PSI.

Example:
    >>> import argparse
    >>> from hf_posbias.cli.evaluate import register
    >>> parser = argparse.ArgumentParser(); sub = parser.add_subparsers()
    >>> register(sub)
    >>> args = parser.parse_args(["evaluate", "--model", "bm25", "--task", "t", "--out", "o"])
    >>> (args.model, args.task, args.top_k)
    ('bm25', ['t'], 100)
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

logger = logging.getLogger(__name__)


def _add_common(parser: argparse.ArgumentParser) -> None:
    from hf_posbias.evaluation.position_scoring import SCORING_SCHEMES
    from hf_posbias.evaluation.registry import card_names

    parser.add_argument(
        "--task",
        required=True,
        nargs="+",
        action="extend",
        metavar="TASK",
        help="task folder(s) from `posbias benchmark` or registered task name(s) "
        f"({', '.join(card_names())})",
    )
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--batch-size", type=int, default=32, help="encoding batch size")
    parser.add_argument(
        "--top-k", type=int, default=100, help="documents retrieved per query (default 100)"
    )
    parser.add_argument("--device", default=None, help="torch device (default: automatic)")
    parser.add_argument(
        "--scoring",
        choices=SCORING_SCHEMES,
        default="default",
        help="per-position protocol: default (pytrec_eval, each query in one bucket), "
        "zeng2025 (Z25's reference code) or posir (PosIR's 20 relative bins); see "
        "docs/evaluation.md",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="bootstrap resamples of the percentile intervals (queries resampled within "
        "buckets; default 1000)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument("--progress", action="store_true", help="show encoding progress bars")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``evaluate`` and ``audit`` verbs."""
    evaluate = subparsers.add_parser(
        "evaluate",
        help="per-position nDCG@10, mean and PSI of a model on position tasks",
        description="Evaluate a retriever on position tasks through mteb and write "
        "<out>/summary.json (one task: a dict; several: a list) with per-bucket ndcg_at_10, "
        "their mean and PSI with bootstrap intervals, summary.md/summary.csv, the per-query "
        "table (per_query/<task>.parquet), the TREC run (runs/<task>.trec) and mteb's result "
        "files.",
    )
    evaluate.add_argument(
        "--model",
        required=True,
        help="bm25, a local model folder, a packaged model (all-MiniLM-L6-v2) or a Hub id; "
        "with --first-stage, the cross-encoder that reranks it",
    )
    stage = evaluate.add_mutually_exclusive_group()
    stage.add_argument("--reranker", default=None, help="cross-encoder reranking --model's top-k")
    stage.add_argument(
        "--first-stage",
        default=None,
        help="retriever (bm25 or bi-encoder) whose top-k the cross-encoder --model reranks",
    )
    evaluate.add_argument(
        "--rerank-k", type=int, default=100, help="candidates per query for the reranker"
    )
    evaluate.add_argument(
        "--plot", action="store_true", help="also write per-task position curves (PNG)"
    )
    _add_common(evaluate)
    evaluate.set_defaults(func=run_evaluate)

    audit = subparsers.add_parser(
        "audit",
        help="all position measurements for one model → markdown + HTML report",
        description="Per-task per-position curves, the PSI table and mirror reversal (tasks "
        "with character evidence spans) for one model, as <out>/audit.md and a "
        "self-contained <out>/audit.html.",
    )
    audit.add_argument("model", help="bm25, a local model folder, a packaged model or a Hub id")
    audit.add_argument(
        "--no-reversal", action="store_true", help="skip the mirror-reversal diagnostic"
    )
    _add_common(audit)
    audit.set_defaults(func=run_audit)


def _check_positive(args: argparse.Namespace) -> None:
    from hf_posbias.errors import InputError

    for name in ("batch_size", "top_k", "rerank_k"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    from hf_posbias.evaluation.runner import bootstrap_setting

    bootstrap_setting(getattr(args, "bootstrap", None))


def _quiet(args: argparse.Namespace) -> None:
    """Keep the terminal for the results: no per-subset bars or library chatter unless asked."""
    import warnings

    if getattr(args, "verbose", False) or args.progress:
        return
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    # mteb calls a renamed sentence-transformers method; the notice is for mteb, not users.
    warnings.filterwarnings("ignore", category=FutureWarning, module="mteb")
    import datasets

    datasets.disable_progress_bars()


def _library_bars(args: argparse.Namespace) -> bool:
    """mteb's and sentence-transformers' carriage-return bars: asked for and on a terminal, or
    ``-v``; a log file gets the plain progress lines only."""
    from hf_posbias.progress import is_interactive

    return bool(getattr(args, "verbose", False)) or (bool(args.progress) and is_interactive())


def _print_summaries(summaries: list) -> None:
    from hf_posbias.evaluation.report import with_interval

    for s in summaries:
        scores = ", ".join(
            f"{b}={'empty' if v is None else with_interval(v, s.interval(b))}"
            for b, v in s.ndcg_at_10.items()
        )
        psi = "n/a" if s.psi is None else with_interval(s.psi, s.interval(what="psi"))
        mean = with_interval(s.mean, s.interval(what="mean"))
        print(f"{s.task}: mean nDCG@10 {mean}, PSI {psi} ({scores})")
        for note in s.warnings:
            print(f"warning: {note}")


def run_evaluate(args: argparse.Namespace) -> int:
    """Handler of ``posbias evaluate``."""
    import warnings

    from hf_posbias.evaluation.runner import evaluate_model

    _check_positive(args)
    _quiet(args)
    with warnings.catch_warnings():
        # The summaries carry the warnings; they are printed once below.
        warnings.simplefilter("ignore", UserWarning)
        summaries = evaluate_model(
            args.model,
            args.task,
            args.out,
            batch_size=args.batch_size,
            top_k=args.top_k,
            reranker=args.reranker,
            first_stage=args.first_stage,
            rerank_k=args.rerank_k,
            device=args.device,
            scoring=args.scoring,
            bootstrap=args.bootstrap,
            seed=args.seed,
            show_progress=_library_bars(args),
        )
    if args.plot:
        from hf_posbias.evaluation.report import plot_position_curves

        for s in summaries:
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in s.task)
            plot_position_curves([s], Path(args.out) / "plots" / f"{safe}.png")
    _print_summaries(summaries)
    print(f"wrote {Path(args.out) / 'summary.json'}")
    return 0


def run_audit(args: argparse.Namespace) -> int:
    """Handler of ``posbias audit``."""
    import warnings

    from hf_posbias.analysis.audit import evidence_moving_section
    from hf_posbias.errors import InputError
    from hf_posbias.evaluation.models import load_model
    from hf_posbias.evaluation.report import (
        AuditContext,
        register_audit_section,
        write_audit_report,
    )
    from hf_posbias.evaluation.reversal import mirror_reversal
    from hf_posbias.evaluation.runner import evaluate_model, load_tasks
    from hf_posbias.shards import write_json

    _check_positive(args)
    _quiet(args)
    out = Path(args.out)
    tasks = load_tasks(args.task, scoring=args.scoring, top_k=args.top_k)
    loaded = load_model(args.model, device=args.device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        summaries = evaluate_model(
            args.model,
            tasks,
            out,
            batch_size=args.batch_size,
            top_k=args.top_k,
            scoring=args.scoring,
            bootstrap=args.bootstrap,
            seed=args.seed,
            show_progress=_library_bars(args),
            loaded=loaded,
        )
    ctx = AuditContext(
        model=args.model,
        out_dir=out,
        summaries=summaries,
        loaded=loaded,
        tasks=tasks,
        progress=True,
    )
    if not args.no_reversal:
        for task in tasks:
            name = task.metadata.name
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
            try:
                ctx.reversals.append(
                    mirror_reversal(
                        loaded,
                        task,
                        out / "reversal" / safe,
                        batch_size=args.batch_size,
                        top_k=args.top_k,
                    )
                )
            except InputError as err:
                # A task without spans is a limitation of that task, not a failed audit.
                ctx.reversal_skipped[name] = str(err)
    write_json(out / "reversal.json", [r.to_dict() for r in ctx.reversals])
    register_audit_section(evidence_moving_section)
    md_path, html_path = write_audit_report(ctx)
    _print_summaries(summaries)
    for r in ctx.reversals:
        delta = "n/a" if r.delta_rev is None else f"{r.delta_rev:+.4f}"
        print(f"{r.task}: mirror reversal Δrev {delta} (front {r.n_front}, back {r.n_back})")
    for name, why in ctx.reversal_skipped.items():
        print(f"{name}: mirror reversal skipped ({why})")
    print(f"wrote {md_path} and {html_path}")
    return 0
