"""``posbias listwise …``: listwise LLM rerankers under controlled input position (Q26).

Verbs:

    posbias listwise test          --reranker R --task DIR --out OUT [--k 20] [--positions 1,5,20]
    posbias listwise reranker-remedies --reranker R --task DIR --out OUT [--shuffles 1,2,5,10,20]
                                   [--no-calibrate] [--checkpoints CKPT,…]
    posbias listwise shuffle-eval  --reranker R --task DIR --out OUT [--shuffles m] [--aggregate m]
    posbias listwise propensity    --reranker R --task DIR --out OUT --shuffles n [--smoothing a]
    posbias listwise augment       --data IN --groups n --out OUT [--seed S]
    posbias listwise build-train   --task DIR --split train --out OUT [--teacher first-stage|CE]
    posbias listwise convert       --data FILE|HUB_ID --out OUT   (RankZephyr / FIRST data)
    posbias listwise transitions   --data IN --out OUT [--augmentation pos-aug] [--groups n]
    posbias listwise table         --runs SHUFFLE_EVAL… --out OUT [--method t-test] [--alpha 0.01]
    posbias listwise curves        --runs TEST… --out OUT [--labels …]   (Fig. 4 / 6 overlay)
    posbias listwise rerank        --reranker R --requests FILE --out FILE   (rank_llm JSON)
    posbias listwise train         --model M --data DIR --out DIR [--propensity FILE]
                                   [--pos-aug n] [--max-steps N] [--passage-tokens N] …
    posbias listwise compare-tests RUN_A RUN_B [--out DIR]   (two test folders, same queries)
    posbias listwise demo          --task VAL --train-task TRAIN --out OUT   (before/after)

The reranker kinds ``--reranker`` takes, in the order they are tried: ``posbias list rerankers``.

Every verb's flags are generated from one settings dataclass
(:mod:`hf_posbias.listwise.experiments.experiment_settings`,
:mod:`hf_posbias.listwise.training.finetune_settings`), and that one object goes from argv to the
library (the window, for one, is set once and read by the reranker and the experiment alike).
``train`` takes the flags of ``accelerate launch -m hf_posbias.listwise.training.train``
(:class:`~hf_posbias.listwise.training.finetune_settings.ListwiseTrainingSettings`) and runs the
same training in one process.

``test``, ``shuffle-eval``, ``propensity`` and ``reranker-remedies`` resume an interrupted run from
the finished queries in OUT; a run with other settings is refused, and ``--overwrite`` replaces it
(:mod:`hf_posbias.output_folders`).

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(
    ...     ["listwise", "test", "--reranker", "bm25", "--task", "t", "--out", "o"])
    >>> args.k, args.positions, args.mode, args.dtype, args.window, args.progress
    (20, None, 'first', 'auto', 20, True)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.cli.common import Verb, add_group, echo, list_verbs
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.experiment_settings import (
    BuildTrainSettings,
    ConvertSettings,
    CurvesSettings,
    ListwiseCompareSettings,
    ListwiseRemediesSettings,
    ListwiseTestSettings,
    PropensitySettings,
    RerankSettings,
    ShuffleEvalSettings,
    ShuffleTableSettings,
)
from hf_posbias.listwise.experiments.runs import load_task_and_reranker
from hf_posbias.listwise.training.finetune_settings import (
    AugmentSettings,
    ListwiseTrainingSettings,
    TransitionsSettings,
)
from hf_posbias.output_folders import OutputFolder
from hf_posbias.settings import flag_name

if TYPE_CHECKING:
    from hf_posbias.listwise.demo import ListwiseDemoSettings


def _on_task(handler: Callable[..., None]) -> Callable[[Any], None]:
    """A handler of ``handler(settings, task, reranker, out)``: the verbs that rerank a task
    read it, load the reranker and prepare the output folder first
    (:func:`~hf_posbias.listwise.experiments.runs.load_task_and_reranker`)."""
    return lambda s: handler(s, *load_task_and_reranker(s))


@_on_task
def _test(s: ListwiseTestSettings, task: Any, reranker: Any, out: Path) -> None:
    from hf_posbias.listwise.experiments.controlled import run_controlled_test

    summary = run_controlled_test(reranker, task, out, s, show_progress=s.progress)
    echo(
        f"{summary['reranker']} on {summary['task']} ({summary['split']}), k={summary['k']}, "
        f"{summary['queries']} queries ({summary['relevant_injected']} relevant injected)"
    )
    echo("position  nDCG@10  95% CI")
    for row in summary["positions"]:
        echo(
            f"{row['position']:>8}  {row['ndcg_at_10']:.4f}  "
            f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]"
        )
    psi = "undefined" if summary["psi"] is None else f"{summary['psi']:.4f}"
    echo(f"mean {summary['mean']:.4f}  PSI {psi}  fallback rate {summary['fallback_rate']:.4f}")
    echo(f"wrote {out / 'positions.json'}, per_query.jsonl, positions.png")
    cal = summary.get("calibrated")
    if cal:
        psi = "undefined" if cal["psi"] is None else f"{cal['psi']:.4f}"
        echo(
            f"calibrated: mean {cal['mean']:.4f}  PSI {psi}  (+{cal['extra_windows']} content-free "
            f"window) → {out / cal['folder'] / 'positions.json'}, prior in calibration.json"
        )


@_on_task
def _shuffle_eval(s: ShuffleEvalSettings, task: Any, reranker: Any, out: Path) -> None:
    from hf_posbias.listwise.experiments.shuffle import run_shuffle_eval

    payload = run_shuffle_eval(reranker, task, out, s, show_progress=s.progress)
    echo(f"{payload['reranker']} on {payload['task']}: nDCG@10 over {payload['queries']} queries")
    for name, value in payload["ndcg_at_10"].items():
        echo(f"  {name:<12} {value:.4f}")
    for name, t in payload["tests"].items():
        echo(
            f"  {name}: Δ {t['delta']:+.4f} [{t['ci_low']:+.4f}, {t['ci_high']:+.4f}] "
            f"p={t['p_value']:.4g} ({t['method']})"
        )
    echo(f"wrote {out / 'shuffle_eval.json'}")


@_on_task
def _remedies(s: ListwiseRemediesSettings, task: Any, reranker: Any, out: Path) -> None:
    from hf_posbias.listwise.experiments.remedies import markdown_table, run_listwise_remedies
    from hf_posbias.rerankers.loading import load_reranker

    table = run_listwise_remedies(
        reranker,
        task,
        out,
        s,
        load_checkpoint=lambda path: load_reranker(path, s),
        show_progress=s.progress,
    )
    echo(f"{reranker.name} on {task.name} ({task.split}), k={s.k}: remedies on the 1…k harness")
    echo(markdown_table(table))
    echo(f"wrote {out / 'remedies.json'}, remedies.md, remedies.png, per_query.jsonl")


@_on_task
def _propensity(s: PropensitySettings, task: Any, reranker: Any, out: Path) -> None:
    from hf_posbias.listwise.experiments.propensity import run_propensity

    payload = run_propensity(reranker, task, out, s, show_progress=s.progress)
    echo(
        f"ω of {payload['reranker']}: k={payload['k']}, n={payload['n']}, "
        f"{payload['queries']} queries, smoothing {payload['smoothing']}"
    )
    echo(
        f"diagonal mass {payload['diagonal_mass']:.4f} (uniform: {1 / payload['k']:.4f}); "
        f"empty cells {payload['empty_cells']}"
    )
    if payload["empty_cells"]:
        echo("note: empty cells make 1/ω infinite for IPS training; re-run with --smoothing > 0")
    echo(f"wrote {out / 'propensity.json'}, propensity.png")


def _augment(s: AugmentSettings) -> None:
    from hf_posbias.listwise.training.augment import augment_rows
    from hf_posbias.listwise.training.trainset import read_train_set, write_train_set

    rows = read_train_set(s.data)
    augmented = augment_rows(rows, s.groups, seed=s.seed)
    write_train_set(
        s.out,
        augmented,
        {
            "source": str(s.data),
            "pos_aug_groups": s.groups,
            "seed": s.seed,
            "source_rows": len(rows),
        },
    )
    echo(
        f"Pos-Aug: {len(rows)} rows × {s.groups} rotations = {len(augmented)} rows → "
        f"{Path(s.out) / 'train.parquet'}"
    )


def _build_train(s: BuildTrainSettings) -> None:
    from hf_posbias.listwise.training.trainset import build_train_set

    rows, info, out = build_train_set(s)
    echo(
        f"{len(rows)} listwise rows (k={s.k}, teacher {s.teacher}; "
        f"{info['relevant_injected']} relevant injected) → {out / 'train.parquet'}"
    )


def _transitions(s: TransitionsSettings) -> None:
    from hf_posbias.listwise.training.transitions import (
        TRANSITIONS_FIGURE,
        TRANSITIONS_FILE,
        run_transitions,
    )

    payload, out = run_transitions(s)
    for name in ("original", "augmented"):
        if name in payload:
            panel = payload[name]
            echo(
                f"{name}: {panel['rows']} rows, k={payload['k']}, diagonal mass "
                f"{panel['diagonal_mass']:.4f} (uniform {1 / payload['k']:.4f}), TV from "
                f"uniform {panel['tv_from_uniform']:.4f}"
            )
    echo(f"wrote {out / TRANSITIONS_FILE}, {TRANSITIONS_FIGURE}")


def _table(s: ShuffleTableSettings) -> None:
    from hf_posbias.listwise.experiments.papertables import shuffle_table
    from hf_posbias.shards import write_json, write_text_atomic
    from hf_posbias.tables import as_table

    payload = shuffle_table(
        s.runs, labels=s.labels, method=s.method, alpha=s.alpha,
        n_resamples=s.n_resamples, seed=s.seed,
    )  # fmt: skip
    text = as_table(payload["table"]).to_markdown() + "\n\n" + payload["caption"]
    echo(text)
    out = Path(s.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "table.json", payload)
    write_text_atomic(out / "table.md", text + "\n")
    echo(f"wrote {out / 'table.json'}, table.md")


def _curves(s: CurvesSettings) -> None:
    from hf_posbias.figures import save_figure
    from hf_posbias.listwise.experiments.papertables import curves_figure

    path = save_figure(curves_figure(s.runs, s.labels), Path(s.out) / "curves.png")
    echo(f"wrote {path}")


def _convert(s: ConvertSettings) -> None:
    from hf_posbias.listwise.training.trainset import convert_train_set

    _, counts, _ = convert_train_set(s)
    echo(
        f"{counts['rows']} of {counts['records']} records → {Path(s.out) / 'train.parquet'}"
        f" ({counts['skipped']} skipped, {counts['answers_with_appended']} answers with "
        f"identifiers appended in input order)"
    )


def _rerank(s: RerankSettings) -> None:
    from hf_posbias.listwise.experiments.exchange import (
        read_requests,
        rerank_requests,
        write_results,
    )
    from hf_posbias.rerankers.loading import load_reranker

    requests = read_requests(s.requests)
    if not requests:
        raise InputError(f"{s.requests}: no requests")
    if s.k is not None:
        short = [r.query.qid for r in requests if len(r.candidates) < s.k]
        if short:
            raise InputError(
                f"{flag_name('k')} {s.k} is larger than the first-stage list of query {short[0]!r} "
                f"({len(short)} request(s) have fewer candidates)"
            )
    texts = sorted({c.passage().content() for r in requests for c in r.candidates})
    reranker = load_reranker(s.reranker, s, corpus_texts=texts)
    results = rerank_requests(reranker, requests, top_k=s.k, window=s.window, step=s.step)
    write_results(s.out, results)
    echo(f"reranked {len(results)} request(s) with {reranker.name} → {s.out}")


def _train(settings: ListwiseTrainingSettings) -> None:
    from hf_posbias.listwise.training.train import listwise_train_report, train_listwise

    result = train_listwise(settings, echo=echo)
    echo(listwise_train_report(result))
    if result.card_path:
        echo(f"model card: {result.card_path}")


def _compare(s: ListwiseCompareSettings) -> None:
    from hf_posbias.listwise.experiments.compare import compare_from_settings
    from hf_posbias.tables import as_table

    labels = (s.label_a, s.label_b)
    payload, written = compare_from_settings(s)
    echo(
        f"{labels[1]} vs {labels[0]} on {payload['task']}: k={payload['k']}, "
        f"{payload['queries']} queries, paired {s.method.removesuffix('-test')} test "
        f"(Δ = {labels[1]} − {labels[0]})"
    )
    left_out = payload["queries_left_out"]
    if any(left_out.values()):
        echo(
            f"--common-queries: left out {left_out['a']} query(ies) only {labels[0]} scored and "
            f"{left_out['b']} only {labels[1]} scored; both curves recomputed on the shared ones"
        )
    echo(as_table(payload["table"]).to_markdown())
    if written is not None:
        echo(f"wrote {written}")


def _demo(settings: ListwiseDemoSettings) -> None:
    from hf_posbias.listwise.demo import run_listwise_demo

    run_listwise_demo(settings, echo=echo)


QUERIES_KEPT = OutputFolder(keeps="its finished queries (shards/)")
"""An experiment reranks query by query into OUT/shards/ (:func:`hf_posbias.shards.run_sharded`)
and resumes from them."""

VERBS: tuple[Verb, ...] = (
    Verb(
        "test",
        ListwiseTestSettings,
        _test,
        "nDCG@10 with the relevant passage at each input slot 1…k",
        output=QUERIES_KEPT,
    ),
    Verb(
        "reranker-remedies",
        ListwiseRemediesSettings,
        _remedies,
        "plain, slot-calibrated, PermSC (Borda, Kemeny) and DebiasFirst on one 1…k harness",
        description="On the same queries and windows of the 1…k test: the plain reranker "
        "(none), slot calibration (one content-free window), PermSC-style aggregation of the "
        "list as given plus m-1 shared shuffles (Borda and Kemeny, m from --shuffles) and "
        "--checkpoints; writes OUT/remedies.json (remedy, mean, psi, harmonic_mean, "
        "delta_mean, p_value, windows, seconds, windows_per_ranking), remedies.md and "
        "remedies.png (PSI against cost). A rerun with a larger --shuffles reranks only the "
        "new shuffles (OUT/shuffles-SSS-EEE/).",
        output=OutputFolder(
            keeps="its finished queries (shards/, shuffles-*/)", grows=("shuffles", "checkpoints")
        ),
    ),
    Verb(
        "shuffle-eval",
        ShuffleEvalSettings,
        _shuffle_eval,
        "first-stage order vs m seeded shuffles",
        output=QUERIES_KEPT,
    ),
    Verb(
        "propensity",
        PropensitySettings,
        _propensity,
        "position propensities ω (Eq. 5) and heatmap",
        output=QUERIES_KEPT,
    ),
    Verb("augment", AugmentSettings, _augment, "Pos-Aug: n rotated permutations per training row"),
    Verb(
        "build-train",
        BuildTrainSettings,
        _build_train,
        "a listwise training set from a task's train split",
    ),
    Verb("convert", ConvertSettings, _convert, "RankZephyr / FIRST training data → training set"),
    Verb(
        "table",
        ShuffleTableSettings,
        _table,
        "original vs shuffled table of shuffle-eval runs, t-test marks (Q26 Tables 1-3)",
    ),
    Verb(
        "curves",
        CurvesSettings,
        _curves,
        "several test runs' 1…k curves in one plot (Fig. 4, 6)",
    ),
    Verb(
        "transitions",
        TransitionsSettings,
        _transitions,
        "training-data input position × target rank, before/after augmentation (Fig. 3)",
    ),
    Verb(
        "rerank",
        RerankSettings,
        _rerank,
        "rerank rank_llm Request JSON into rank_llm Results",
        output=OutputFolder(file=True),
    ),
    Verb(
        "train",
        ListwiseTrainingSettings,
        _train,
        "DebiasFirst fine-tune of a causal LM: λ·L_Rank(-IPS) + L_LM (Q26)",
        description="Fine-tune a causal LM as a FIRST-style listwise reranker with the "
        "DebiasFirst loss, on one process (multi-GPU: accelerate launch -m "
        "hf_posbias.listwise.training.train with the same flags). --global-batch counts windows "
        "per step (Q26: 8).",
    ),
    Verb(
        "compare-tests",
        ListwiseCompareSettings,
        _compare,
        "paired test between two listwise test runs (same queries)",
    ),
)

EXPERT_VERBS: tuple[str, ...] = ("curves", "transitions", "rerank")
"""Verbs of ``posbias listwise --help``'s "expert" heading (docs/listwise.md): Q26's figure
drawers (Fig. 3, 4, 6; ``posbias study run`` draws them for a Q26 spec) and the rank_llm
exchange."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias listwise`` and its verbs."""
    from hf_posbias.listwise.demo import ListwiseDemoSettings

    verbs = add_group(
        subparsers,
        "listwise",
        help="listwise LLM rerankers by input position (DebiasFirst, Q26)",
        description="The 1…k controlled position test, original vs shuffled order, position "
        "propensities, Pos-Aug and listwise training data, rank_llm exchange.",
    )
    demo = Verb(
        "demo",
        ListwiseDemoSettings,
        _demo,
        "a reranker's 1…k curve before and after a short DebiasFirst fine-tune",
        description="test → propensity → build-train → train → test → compare, each a posbias "
        "listwise verb in its own folder under --out (a rerun resumes). Smoke-sized defaults: "
        "about 15 minutes on a 2-core CPU (make demo-listwise builds SciFact's task folders "
        "first).",
        output=OutputFolder(keeps="its finished steps"),
    )
    for verb in (*VERBS, demo):
        # A listwise verb without a longer description shows its one-line help as one.
        replace(verb, description=verb.description or verb.help).add_to(verbs)
    list_verbs(subparsers.choices["listwise"], verbs, [("expert", EXPERT_VERBS)])
