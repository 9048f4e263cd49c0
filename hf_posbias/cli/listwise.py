"""``posbias listwise …``: listwise LLM rerankers under controlled input position (Q26).

Verbs:

    posbias listwise test          --reranker R --task DIR --out OUT [--k 20] [--positions 1,5,20]
    posbias listwise shuffle-eval  --reranker R --task DIR --out OUT [--shuffles m] [--aggregate m]
    posbias listwise propensity    --reranker R --task DIR --out OUT --shuffles n [--smoothing a]
    posbias listwise augment       --data IN --groups n --out OUT [--seed S]
    posbias listwise build-train   --task DIR --split train --out OUT [--teacher first-stage|CE]
    posbias listwise convert       --data FILE|HUB_ID --out OUT   (RankZephyr / FIRST data)
    posbias listwise rerank        --reranker R --requests FILE --out FILE   (rank_llm JSON)
    posbias listwise train         --model M --data DIR --out DIR [--propensity FILE]
                                   [--pos-aug n] [--max-steps N] [--passage-tokens N] …
    posbias listwise compare       RUN_A RUN_B [--out DIR]   (two test folders, same queries)
    posbias listwise demo          --task VAL --train-task TRAIN --out OUT   (before/after)

``train`` takes the flags of ``accelerate launch -m hf_posbias.listwise.train`` (generated from
:class:`~hf_posbias.listwise.settings.ListwiseTrainingSettings` when the verb parses, so
``posbias --help`` imports no transformers) and runs the same training in one process.

``test`` and ``propensity`` (and ``shuffle-eval``) resume an interrupted run from the finished
queries in OUT; ``--overwrite`` starts again.

Example:
    >>> import argparse
    >>> from hf_posbias.cli.listwise import register
    >>> parser = argparse.ArgumentParser(); sub = parser.add_subparsers()
    >>> register(sub)
    >>> args = parser.parse_args(["listwise", "test", "--reranker", "bm25", "--task", "t",
    ...                           "--out", "o"])
    >>> args.k, args.positions, args.mode, args.dtype
    (20, None, 'first', 'auto')
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from hf_posbias.devices import INFERENCE_DTYPES
from hf_posbias.errors import InputError
from hf_posbias.settings import add_settings_arguments

_RUN_OUTPUTS = (
    "manifest.json",
    "first_stage.json",
    "per_query.jsonl",
    "positions.json",
    "positions.png",
    "rankings.jsonl",
    "propensity.json",
    "propensity.png",
    "shuffle_eval.json",
)


def _echo(text: str) -> None:
    print(text, flush=True)


def _add_reranker(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reranker",
        required=True,
        help="smollm2-135m (packaged), a causal-LM folder or Hub id (FIRST scoring), bm25 or "
        "cross-encoder:NAME (the pointwise control), or a served model name with --base-url",
    )
    p.add_argument(
        "--mode",
        choices=("first", "generate"),
        default="first",
        help="first: identifier logits of the first answer token (default); generate: the model "
        "writes the permutation, missing identifiers appended in input order and counted",
    )
    p.add_argument(
        "--dtype",
        choices=INFERENCE_DTYPES,
        default="auto",
        help="auto: bf16 on GPUs and on CPUs with native bf16 kernels, else float32",
    )
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    p.add_argument("--batch-size", type=int, default=8, help="windows per forward pass")
    p.add_argument(
        "--passage-tokens",
        type=int,
        default=None,
        help="cut each passage to this many tokens (words for an endpoint)",
    )
    p.add_argument(
        "--identifiers",
        choices=("letters", "numbers"),
        default="letters",
        help="[A]…[T] (default) or [1]…[20]",
    )
    p.add_argument("--window", type=int, default=20, help="sliding-window size (20)")
    p.add_argument("--step", type=int, default=None, help="sliding-window step (window/2)")
    p.add_argument(
        "--base-url",
        default=None,
        help="OpenAI-compatible endpoint (vLLM, TGI …) serving --reranker",
    )
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the endpoint's API key",
    )


def _add_task(p: argparse.ArgumentParser, *, split_default: str | None = None) -> None:
    p.add_argument(
        "--task",
        required=True,
        help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/) or a project task folder",
    )
    p.add_argument(
        "--split",
        default=split_default,
        help="qrels split (BEIR default: test; a project folder: its own split)",
    )
    p.add_argument("--k", type=int, default=20, help="first-stage depth (default 20)")
    p.add_argument(
        "--max-queries",
        type=int,
        default=None,
        help="a seeded sample of this many judged queries (default: all)",
    )
    p.add_argument(
        "--first-stage", default="bm25", help="bm25 (default) or a sentence-transformers model"
    )
    p.add_argument("--seed", type=int, default=0, help="query sample / shuffle seed")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="discard a previous run in OUT instead of resuming it",
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _options(args: argparse.Namespace) -> Any:
    from hf_posbias.listwise.loading import RerankerOptions

    if args.batch_size < 1:
        raise InputError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.passage_tokens is not None and args.passage_tokens < 1:
        raise InputError(f"--passage-tokens must be at least 1, got {args.passage_tokens}")
    if args.step is not None and not 0 < args.step <= args.window:
        raise InputError(f"--step must lie in 1..--window ({args.window}), got {args.step}")
    return RerankerOptions(
        mode=args.mode,
        dtype=args.dtype,
        device=args.device,
        batch_size=args.batch_size,
        passage_tokens=args.passage_tokens,
        identifiers=args.identifiers,
        window=args.window,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
    )


def _prepare_out(out: Path, overwrite: bool) -> None:
    if overwrite:
        shutil.rmtree(out / "shards", ignore_errors=True)
        for name in _RUN_OUTPUTS:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)


def _task_and_reranker(args: argparse.Namespace) -> tuple[Any, Any]:
    """Validate, read the task, then load the reranker (the first heavy step)."""
    from hf_posbias.listwise.firststage import check_k
    from hf_posbias.listwise.loading import load_reranker
    from hf_posbias.listwise.taskio import load_rerank_task

    options = _options(args)
    if args.max_queries is not None and args.max_queries < 1:
        raise InputError(f"--max-queries must be at least 1, got {args.max_queries}")
    task = load_rerank_task(args.task, args.split)
    check_k(args.k, len(task.corpus))
    texts = (p.content() for p in task.corpus.values())
    reranker = load_reranker(args.reranker, options, corpus_texts=texts)
    return task, reranker


def _test(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.controlled import (
        ControlledTestConfig,
        parse_positions,
        run_controlled_test,
    )

    config = ControlledTestConfig(
        k=args.k,
        positions=parse_positions(args.positions, args.k),
        max_queries=args.max_queries,
        seed=args.seed,
        first_stage=args.first_stage,
        window=args.window,
        step=args.step,
        n_resamples=args.n_resamples,
    )
    task, reranker = _task_and_reranker(args)
    out = Path(args.out)
    _prepare_out(out, args.overwrite)
    summary = run_controlled_test(reranker, task, out, config, show_progress=not args.no_progress)
    _echo(
        f"{summary['reranker']} on {summary['task']} ({summary['split']}), k={summary['k']}, "
        f"{summary['queries']} queries ({summary['relevant_injected']} relevant injected)"
    )
    _echo("position  nDCG@10  95% CI")
    for row in summary["positions"]:
        _echo(
            f"{row['position']:>8}  {row['ndcg_at_10']:.4f}  "
            f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]"
        )
    psi = "undefined" if summary["psi"] is None else f"{summary['psi']:.4f}"
    _echo(f"mean {summary['mean']:.4f}  PSI {psi}  fallback rate {summary['fallback_rate']:.4f}")
    _echo(f"wrote {out / 'positions.json'}, per_query.jsonl, positions.png")
    return 0


def _shuffle_eval(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.shuffle import ShuffleEvalConfig, run_shuffle_eval

    if args.shuffles < 1:
        raise InputError(f"--shuffles must be at least 1, got {args.shuffles}")
    if args.aggregate < 0 or args.aggregate == 1:
        raise InputError(f"--aggregate needs at least 2 shuffles (0: off), got {args.aggregate}")
    config = ShuffleEvalConfig(
        k=args.k,
        shuffles=args.shuffles,
        aggregate=args.aggregate,
        max_queries=args.max_queries,
        seed=args.seed,
        first_stage=args.first_stage,
        window=args.window,
        step=args.step,
        method=args.test,
        n_resamples=args.n_resamples,
    )
    task, reranker = _task_and_reranker(args)
    out = Path(args.out)
    _prepare_out(out, args.overwrite)
    payload = run_shuffle_eval(reranker, task, out, config, show_progress=not args.no_progress)
    _echo(f"{payload['reranker']} on {payload['task']}: nDCG@10 over {payload['queries']} queries")
    for name, value in payload["ndcg_at_10"].items():
        _echo(f"  {name:<12} {value:.4f}")
    for name, t in payload["tests"].items():
        _echo(
            f"  {name}: Δ {t['delta']:+.4f} [{t['ci_low']:+.4f}, {t['ci_high']:+.4f}] "
            f"p={t['p_value']:.4g} ({t['method']})"
        )
    _echo(f"wrote {out / 'shuffle_eval.json'}")
    return 0


def _propensity(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.propensity import PropensityConfig, run_propensity

    if args.smoothing < 0:
        raise InputError(f"--smoothing must be >= 0, got {args.smoothing}")
    if args.shuffles < 1:
        raise InputError(f"--shuffles must be at least 1, got {args.shuffles}")
    task, reranker = _task_and_reranker(args)
    out = Path(args.out)
    _prepare_out(out, args.overwrite)
    config = PropensityConfig(
        k=args.k,
        shuffles=args.shuffles,
        max_queries=args.max_queries,
        seed=args.seed,
        first_stage=args.first_stage,
        smoothing=args.smoothing,
        window=args.window,
        step=args.step,
    )
    payload = run_propensity(reranker, task, out, config, show_progress=not args.no_progress)
    _echo(
        f"ω of {payload['reranker']}: k={payload['k']}, n={payload['n']}, "
        f"{payload['queries']} queries, smoothing {payload['smoothing']}"
    )
    _echo(
        f"diagonal mass {payload['diagonal_mass']:.4f} (uniform: {1 / payload['k']:.4f}); "
        f"empty cells {payload['empty_cells']}"
    )
    if payload["empty_cells"]:
        _echo("note: empty cells make 1/ω infinite for IPS training; re-run with --smoothing > 0")
    _echo(f"wrote {out / 'propensity.json'}, propensity.png")
    return 0


def _augment(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.augment import augment_rows
    from hf_posbias.listwise.trainset import read_train_set, write_train_set

    rows = read_train_set(args.data)
    augmented = augment_rows(rows, args.groups, seed=args.seed)
    write_train_set(
        args.out,
        augmented,
        {
            "source": str(args.data),
            "pos_aug_groups": args.groups,
            "seed": args.seed,
            "source_rows": len(rows),
        },
    )
    _echo(
        f"Pos-Aug: {len(rows)} rows × {args.groups} rotations = {len(augmented)} rows → "
        f"{Path(args.out) / 'train.parquet'}"
    )
    return 0


def _build_train(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.firststage import check_k
    from hf_posbias.listwise.taskio import load_rerank_task
    from hf_posbias.listwise.trainset import build_train_rows, write_train_set

    if args.max_queries is not None and args.max_queries < 1:
        raise InputError(f"--max-queries must be at least 1, got {args.max_queries}")
    task = load_rerank_task(args.task, args.split)
    check_k(args.k, len(task.corpus))
    out = Path(args.out)
    _prepare_out(out, args.overwrite)
    rows, info = build_train_rows(
        task,
        k=args.k,
        first_stage=args.first_stage,
        teacher=args.teacher,
        max_queries=args.max_queries,
        seed=args.seed,
        out_dir=out,
        show_progress=not args.no_progress,
    )
    write_train_set(out, rows, info)
    _echo(
        f"{len(rows)} listwise rows (k={args.k}, teacher {args.teacher}; "
        f"{info['relevant_injected']} relevant injected) → {out / 'train.parquet'}"
    )
    return 0


def _convert(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.trainset import (
        load_conversations,
        rows_from_conversations,
        write_train_set,
    )

    records = load_conversations(args.data, split=args.hf_split)
    if args.max_rows is not None:
        records = records[: args.max_rows]
    rows, counts = rows_from_conversations(records, style=args.identifiers)
    if not rows:
        raise InputError(
            f"{args.data}: no conversation could be read ({counts['skipped']} skipped)"
        )
    write_train_set(args.out, rows, {"source": str(args.data), "format": "rankzephyr", **counts})
    _echo(
        f"{counts['rows']} of {counts['records']} records → {Path(args.out) / 'train.parquet'}"
        f" ({counts['skipped']} skipped, {counts['answers_with_appended']} answers with "
        f"identifiers appended in input order)"
    )
    return 0


def _rerank(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.exchange import read_requests, rerank_requests, write_results
    from hf_posbias.listwise.loading import load_reranker

    options = _options(args)
    requests = read_requests(args.requests)
    if not requests:
        raise InputError(f"{args.requests}: no requests")
    if args.k is not None:
        short = [r.query.qid for r in requests if len(r.candidates) < args.k]
        if short:
            raise InputError(
                f"--k {args.k} is larger than the first-stage list of query {short[0]!r} "
                f"({len(short)} request(s) have fewer candidates)"
            )
    texts = sorted({c.passage().content() for r in requests for c in r.candidates})
    reranker = load_reranker(args.reranker, options, corpus_texts=texts)
    results = rerank_requests(reranker, requests, top_k=args.k, window=args.window, step=args.step)
    write_results(args.out, results)
    _echo(f"reranked {len(results)} request(s) with {reranker.name} → {args.out}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.settings import ListwiseTrainingSettings
    from hf_posbias.listwise.train import report, train_listwise
    from hf_posbias.settings import settings_from_args

    settings = settings_from_args(ListwiseTrainingSettings, args)
    result = train_listwise(settings, echo=_echo)
    _echo(report(result))
    if result.card_path:
        _echo(f"model card: {result.card_path}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.compare import compare_runs, write_comparison
    from hf_posbias.tables import as_table

    labels = (args.label_a, args.label_b)
    payload = compare_runs(
        args.run_a,
        args.run_b,
        method=args.test,
        n_resamples=args.n_resamples,
        seed=args.seed,
        labels=labels,
        common_queries=args.common_queries,
    )
    _echo(
        f"{labels[1]} vs {labels[0]} on {payload['task']}: k={payload['k']}, "
        f"{payload['queries']} queries, paired {args.test} test (Δ = {labels[1]} − {labels[0]})"
    )
    left_out = payload["queries_left_out"]
    if any(left_out.values()):
        _echo(
            f"--common-queries: left out {left_out['a']} query(ies) only {labels[0]} scored and "
            f"{left_out['b']} only {labels[1]} scored; both curves recomputed on the shared ones"
        )
    _echo(as_table(payload["table"]).to_markdown())
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        _echo(f"wrote {write_comparison(args.out, payload)}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from hf_posbias.listwise.demo import ListwiseDemoSettings, run_listwise_demo

    fields = ListwiseDemoSettings.__dataclass_fields__
    values = {name: getattr(args, name) for name in fields if hasattr(args, name)}
    run_listwise_demo(ListwiseDemoSettings(**values, progress=not args.no_progress), echo=_echo)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias listwise`` and its verbs."""
    top = subparsers.add_parser(
        "listwise",
        help="listwise LLM rerankers under controlled input position (DebiasFirst, Q26)",
        description="The 1…k controlled position test, original vs shuffled order, position "
        "propensities, Pos-Aug and listwise training data, rank_llm exchange.",
    )
    verbs = top.add_subparsers(dest="listwise_command", metavar="VERB")

    p = verbs.add_parser("test", help="nDCG@10 with the relevant passage at each input slot 1…k")
    _add_reranker(p)
    _add_task(p)
    p.add_argument("--positions", default=None, help="comma-separated slots (default 1..k)")
    p.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples")
    p.set_defaults(func=_test)

    p = verbs.add_parser("shuffle-eval", help="first-stage order vs m seeded shuffles")
    _add_reranker(p)
    _add_task(p)
    p.add_argument("--shuffles", type=int, default=5, help="shuffles per query (m)")
    p.add_argument(
        "--aggregate",
        type=int,
        default=0,
        help="also aggregate this many shuffles by Borda and Kemeny (0: off)",
    )
    p.add_argument(
        "--test",
        choices=("randomization", "bootstrap"),
        default="randomization",
        help="paired test between the variants",
    )
    p.add_argument("--n-resamples", type=int, default=1000, help="test resamples")
    p.set_defaults(func=_shuffle_eval)

    p = verbs.add_parser("propensity", help="position propensities ω (Eq. 5) and heatmap")
    _add_reranker(p)
    _add_task(p)
    p.add_argument("--shuffles", type=int, default=10, help="Fisher–Yates shuffles per query (n)")
    p.add_argument(
        "--smoothing",
        type=float,
        default=0.0,
        help="add α to every transition count before normalising (0: Eq. 5 exactly)",
    )
    p.set_defaults(func=_propensity)

    p = verbs.add_parser("augment", help="Pos-Aug: n rotated permutations per training row")
    p.add_argument("--data", required=True, help="training-set folder, .parquet or .jsonl")
    p.add_argument("--groups", type=int, required=True, help="number of groups n (divides k)")
    p.add_argument("--out", required=True, help="output training-set folder")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed")
    p.set_defaults(func=_augment)

    p = verbs.add_parser("build-train", help="a listwise training set from a task's train split")
    _add_task(p, split_default="train")
    p.add_argument(
        "--teacher",
        default="first-stage",
        help="order after the relevant documents: first-stage (default) or a "
        "cross-encoder name (stand-in for GPT-4 labels)",
    )
    p.set_defaults(func=_build_train)

    p = verbs.add_parser("convert", help="RankZephyr / FIRST training data → training set")
    p.add_argument("--data", required=True, help="a .jsonl/.json file or a Hub dataset id")
    p.add_argument("--hf-split", default="train", help="split of a Hub dataset")
    p.add_argument(
        "--identifiers",
        choices=("letters", "numbers"),
        default=None,
        help="identifier style (default: detected per record)",
    )
    p.add_argument("--max-rows", type=int, default=None, help="convert only the first N records")
    p.add_argument("--out", required=True, help="output training-set folder")
    p.set_defaults(func=_convert)

    p = verbs.add_parser("rerank", help="rerank rank_llm Request JSON into rank_llm Results")
    _add_reranker(p)
    p.add_argument("--requests", required=True, help="rank_llm requests (.json or .jsonl)")
    p.add_argument("--k", type=int, default=None, help="rerank the top k (default: all)")
    p.add_argument("--out", required=True, help="results file (.json or .jsonl)")
    p.set_defaults(func=_rerank)

    from hf_posbias.listwise.settings import ListwiseTrainingSettings

    p = verbs.add_parser(
        "train",
        help="DebiasFirst fine-tune of a causal LM: λ·L_Rank(-IPS) + L_LM (Q26)",
        description="Fine-tune a causal LM as a FIRST-style listwise reranker with the "
        "DebiasFirst loss, on one process (multi-GPU: accelerate launch -m "
        "hf_posbias.listwise.train with the same flags). --global-batch counts windows per "
        "step (Q26: 8).",
    )
    add_settings_arguments(p, ListwiseTrainingSettings)
    p.set_defaults(func=_train)

    p = verbs.add_parser("compare", help="paired test between two test runs (same queries)")
    p.add_argument("run_a", help="posbias listwise test folder A (e.g. the base model)")
    p.add_argument("run_b", help="posbias listwise test folder B (e.g. the fine-tune)")
    p.add_argument("--label-a", default="A", help="name of run A in the table")
    p.add_argument("--label-b", default="B", help="name of run B in the table")
    p.add_argument(
        "--test",
        choices=("randomization", "bootstrap"),
        default="randomization",
        help="paired test (per query, shared by all positions)",
    )
    p.add_argument("--n-resamples", type=int, default=1000, help="test resamples")
    p.add_argument("--seed", type=int, default=0, help="resampling seed")
    p.add_argument(
        "--common-queries",
        action="store_true",
        help="compare the queries both runs scored (counted), both curves recomputed on them",
    )
    p.add_argument("--out", default=None, help="folder for comparison.json")
    p.set_defaults(func=_compare)

    from hf_posbias.listwise.demo import ListwiseDemoSettings

    d = ListwiseDemoSettings(task="", train_task="", out="")
    p = verbs.add_parser(
        "demo",
        help="a reranker's 1…k curve before and after a short DebiasFirst fine-tune",
        description="test → propensity → build-train → train → test → compare, each a "
        "posbias listwise verb in its own folder under --out (a rerun resumes). Smoke-sized "
        "defaults: about 15 minutes on a 2-core CPU (make demo-listwise builds SciFact's task "
        "folders first).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--task", required=True, help="evaluation task folder (SciFact validation)")
    p.add_argument("--train-task", required=True, help="training task folder (SciFact train)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--model", default=d.model, help="base causal LM")
    p.add_argument("--k", type=int, default=d.k, help="list length")
    p.add_argument("--queries", type=int, default=d.queries, help="test queries")
    p.add_argument("--positions", default=d.positions, help="input positions tested")
    p.add_argument("--propensity-queries", type=int, default=d.propensity_queries, help="ω queries")
    p.add_argument("--shuffles", type=int, default=d.shuffles, help="ω shuffles per query")
    p.add_argument("--smoothing", type=float, default=d.smoothing, help="ω smoothing α")
    p.add_argument("--train-queries", type=int, default=d.train_queries, help="training windows")
    p.add_argument("--pos-aug", type=int, default=d.pos_aug, help="Pos-Aug rotations")
    p.add_argument("--steps", type=int, default=d.steps, help="training steps")
    p.add_argument("--global-batch", type=int, default=d.global_batch, help="windows per step")
    p.add_argument("--lr", type=float, default=d.lr, help="learning rate")
    p.add_argument("--lambda", dest="lam", type=float, default=d.lam, help="λ of L_Rank-IPS")
    p.add_argument("--passage-tokens", type=int, default=d.passage_tokens, help="passage cut")
    p.add_argument("--seed", type=int, default=d.seed, help="seed of every step")
    p.add_argument("--n-resamples", type=int, default=d.n_resamples, help="bootstrap/test")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.set_defaults(func=_demo)

    top.set_defaults(func=lambda args: top.print_help() or 1)
