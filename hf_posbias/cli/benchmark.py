"""``posbias benchmark``: build position task folders from raw sources, plot evidence positions.

Verbs (each writes ``<out>/{corpus,queries,qrels}.parquet`` + ``task.json`` and prints the
per-bucket query counts and everything it dropped):

    posbias benchmark squad-posq    [--input rajpurkar/squad_v2|DIR|FILE] --out DIR [--tiny]
    posbias benchmark fineweb-posq  [--input NovaSearch/FineWeb-PosQ|DIR|FILE] --out DIR [--tiny]
    posbias benchmark posir         --input SNAPSHOT --out DIR [--language eng-Latn]
                                    [--domains yhp26|all|A,B] [--scheme posir20|token-length|…]
    posbias benchmark scifact       --input DIR --out DIR [--split validation]
    posbias benchmark climate-fever --input climate-fever.jsonl --out DIR [--corpus corpus.jsonl]
    posbias benchmark fever         --input claims.jsonl --wiki-pages DIR --out DIR
    posbias benchmark hotpotqa      --input hotpot_dev_distractor_v1.json --out DIR
    posbias benchmark from-jsonl    --input mine.jsonl --out DIR [--buckets thirds|0,0.2,0.5,1]
                                    [--distractors docs.jsonl]
    posbias benchmark plot-evidence --task DIR [--task DIR …] --out fig.png
    posbias benchmark subsample     --task DIR --per-bucket N --out DIR [--seed 0] [--name NAME]
    posbias benchmark publish       --task DIR --out HUB_DIR [--hub-repo OWNER/NAME]
    posbias benchmark from-corpus   --corpus SOURCE --out DIR [--passages N] [--cut-long] …
                                    (Z25's recipe from any corpus: hf_posbias.cli.benchmark_build)

Every benchmark verb, its tasks and the package that registered it: ``posbias list benchmarks``.
The verbs of :data:`EXPERT_VERBS` work as listed but are left out of ``--help``'s verb list (its
"see also" line names them; docs/evaluation.md documents them).
Former names, hidden and warning once: ``benchmark build`` (now ``from-corpus``: ``build`` is the
training data's ``posbias data build``), ``benchmark sample`` (now ``subsample``: ``sample`` is
the training sets' ``posbias data sample``), ``benchmark list``.

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(
    ...     ["benchmark", "from-jsonl", "--input", "a.jsonl", "--out", "o"])
    >>> args.buckets, args.benchmark
    ('thirds', 'from-jsonl')
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from hf_posbias.cli.benchmark_build import register_build
from hf_posbias.cli.common import add_alias, add_group, add_verb, hide_as_alias, tuck_away
from hf_posbias.cli.listing import add_listing_verb, benchmarks_table
from hf_posbias.evaluation.evaluation_settings import PlotEvidenceSettings, TaskSampleSettings
from hf_posbias.output_folders import OutputFolder
from hf_posbias.publish.task_repo import TaskPublishSettings

EXPERT_VERBS: tuple[str, ...] = (
    "climate-fever",
    "fever",
    "hotpotqa",
    "beir",
    "msmarco",
    "trec-dl",
    "plot-evidence",
)
"""Builders and tools that work as before but are left out of ``posbias benchmark --help``'s
list (named in its "see also" line and in docs/evaluation.md): the claim and multi-hop sources,
the plain one-bucket retrieval sets of YHP26's Table 4, the evidence histogram. A newcomer sees
the headline builders (SQuAD-PosQ, FineWeb-PosQ, PosIR, SciFact, their own JSONL or corpus)."""


def _build(bench: Any, settings: Any) -> None:
    from hf_posbias.tasks.builders.common import format_report

    data = bench.build(settings)
    folder = data.save(settings.out)
    print(format_report(data))
    print(f"wrote {folder}")


def _plot(s: PlotEvidenceSettings) -> None:
    from hf_posbias.evaluation.reports.evidence_plot import plot_evidence_distribution

    summary = plot_evidence_distribution(list(s.task), s.out, bins=s.bins, scale=s.scale)
    unit = "of the document" if s.scale == "relative" else "characters"
    for name, counts in summary.counts.items():
        mean = summary.means[name]
        print(f"{name}: {sum(counts)} queries with evidence offsets, mean start {mean:.3g} {unit}")
    for name in summary.skipped:
        print(f"{name}: skipped (no evidence offsets in this task)")
    print(f"wrote {summary.path}")


def _sample(s: TaskSampleSettings) -> None:
    from hf_posbias.tasks.taskdata import PositionTaskData

    full = PositionTaskData.load(s.task)
    sample = full.sample_queries(s.per_bucket, seed=s.seed, name=s.name)
    folder = sample.save(s.out)
    kept, total = sample.bucket_counts(), full.bucket_counts()
    counts = ", ".join(f"{b} {kept[b]} of {total[b]}" for b in total)
    n = sum(kept.values())
    print(f"{sample.info.name}: {n} of {len(full.queries)} queries ({counts}), all documents")
    print(f"wrote {folder}")


def _publish(s: TaskPublishSettings) -> None:
    from hf_posbias.hub import resolve_token, upload_folder
    from hf_posbias.publish.task_repo import write_task_repo

    token = None
    if s.hub_repo:  # a missing token fails before anything is written
        token = resolve_token(s.hub_token, purpose=f"--hub-repo {s.hub_repo}", flag="--hub-token")
    folder = write_task_repo(s.task, s.out, repo_id=s.hub_repo, overwrite=s.overwrite)
    print(f"wrote {folder} (task files, README.md, eval.yaml)")
    if s.hub_repo:
        url = upload_folder(
            folder,
            s.hub_repo,
            repo_type="dataset",
            token=token,
            private=s.private,
            commit_message="posbias benchmark publish: task files, card and eval.yaml",
            create_pr=None,
        )
        print(f"pushed {s.hub_repo} → {url}")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias benchmark`` and its verbs."""
    from hf_posbias.tasks.benchmark_registry import benchmarks

    verbs = add_group(
        subparsers,
        "benchmark",
        dest="benchmark",
        metavar="NAME",
        help="build position tasks (SQuAD-PosQ, FineWeb-PosQ, PosIR, …)",
        description="Build position-bucketed retrieval sets from raw sources, or plot where "
        "their evidence sits.",
    )
    # One verb per registered benchmark (hf_posbias.tasks.benchmark_registry): adding a benchmark
    # module under tasks/builders, or installing a benchmark plugin, adds its verb here.
    for name, bench in benchmarks().items():
        build = partial(_build, bench)
        add_verb(verbs, name, bench.settings, build, help=bench.help, description=bench.help)
    from_corpus = register_build(verbs, "from-corpus")
    add_alias(verbs, "build", from_corpus, "posbias benchmark from-corpus")
    add_verb(
        verbs,
        "plot-evidence",
        PlotEvidenceSettings,
        _plot,
        help="histogram of relative evidence positions (PNG)",
        output=OutputFolder(file=True),
    )
    subsample = add_verb(
        verbs,
        "subsample",
        TaskSampleSettings,
        _sample,
        help="a seeded per-bucket query sample of a task folder (all documents kept)",
        description="Write a task of its own holding at most --per-bucket queries of every "
        "bucket (seeded) and every document: a costly model (an LLM reranker) scores a subset "
        "whose ranking problem is the full task's.",
    )
    add_verb(
        verbs,
        "publish",
        TaskPublishSettings,
        _publish,
        help="a task folder as a Hub benchmark repo (task files, card, eval.yaml)",
        description="Write the Hub dataset repo folder of a built position task: its four "
        "files, a card whose configs load them, and eval.yaml (mteb's task ids plus per-bucket "
        "nDCG@10, their mean and 1 − PSI, the ids the Hub's board ranks); with --hub-repo, "
        "upload it (a pull request unless you own the repo).",
    )
    add_listing_verb(
        verbs,
        "list",
        "every benchmark verb, its tasks, and where it comes from: built-in, or the "
        "distribution of a plugin (entry-point group hf_posbias.benchmarks)",
        benchmarks_table,
    )
    hide_as_alias(verbs, "list", "posbias list benchmarks")
    add_alias(verbs, "sample", subsample, "posbias benchmark subsample")
    group = subparsers.choices["benchmark"]
    tuck_away(group, verbs, [n for n in EXPERT_VERBS if n in verbs.choices], "docs/evaluation.md")
