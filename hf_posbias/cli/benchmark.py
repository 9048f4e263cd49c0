"""``posbias benchmark``: build position task folders from raw sources, plot evidence positions.

Verbs:

    posbias benchmark build BENCHMARK --out DIR [its flags]
        (a task folder: <out>/{corpus,queries,qrels}.parquet + task.json; prints the per-bucket
        query counts and everything it dropped)
    posbias benchmark from-corpus   --corpus SOURCE --out DIR [--passages N] [--cut-long] …
                                    (Z25's recipe from any corpus)
    posbias benchmark subsample     --task DIR --per-bucket N --out DIR [--seed 0] [--name NAME]
    posbias benchmark publish       --task DIR --out HUB_DIR [--hub-repo OWNER/NAME]
    posbias benchmark plot-evidence --task DIR [--task DIR …] --out fig.png   (expert)

``build`` takes a registered benchmark (:mod:`hf_posbias.tasks.benchmark_registry`; a plugin adds
one by an entry point) and then the flags of its source: ``posbias list benchmarks`` lists them,
with the tasks each builds. For instance:

    posbias benchmark build squad-posq    [--input rajpurkar/squad_v2|DIR|FILE] --out DIR [--tiny]
    posbias benchmark build posir         --input SNAPSHOT --out DIR [--language eng-Latn]
    posbias benchmark build fever         --input claims.jsonl --wiki-pages DIR --out DIR
    posbias benchmark build beir nfcorpus --out DIR
    posbias benchmark build jsonl         --input mine.jsonl --out DIR [--buckets 0,0.2,0.5,1]

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(
    ...     ["benchmark", "build", "jsonl", "--input", "a.jsonl", "--out", "o"])
    >>> args.buckets, args.benchmark, args.source
    ('thirds', 'build', 'jsonl')
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from hf_posbias.cli.benchmark_from_corpus import FROM_CORPUS
from hf_posbias.cli.common import Verb, add_group, add_source_verb, add_verb, list_verbs
from hf_posbias.evaluation.evaluation_settings import PlotEvidenceSettings, TaskSampleSettings
from hf_posbias.output_folders import OutputFolder
from hf_posbias.publish.task_repo import TaskPublishSettings

EXPERT_VERBS: tuple[str, ...] = ("plot-evidence",)
"""Verbs of ``posbias benchmark --help``'s "expert" heading: the evidence histogram."""


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
        metavar="VERB",
        help="build position tasks (SQuAD-PosQ, FineWeb-PosQ, PosIR, …)",
        description="Build position-bucketed retrieval sets from raw sources, or plot where "
        "their evidence sits.",
    )
    # One source per registered benchmark (hf_posbias.tasks.benchmark_registry): a benchmark
    # module under tasks/builders, or a benchmark plugin, adds its source here.
    add_source_verb(
        verbs,
        "build",
        [
            Verb(name, bench.settings, partial(_build, bench), bench.help)
            for name, bench in benchmarks().items()
        ],
        help="a position task folder from a registered benchmark's source",
        description="Build a position task folder from the source of one registered benchmark "
        "(posbias list benchmarks lists them, with the tasks each builds and the package that "
        "registered it): <out>/{corpus,queries,qrels}.parquet and task.json. Prints the "
        "queries of each bucket and everything dropped, with the reason. Its flags follow "
        "BENCHMARK; posbias benchmark build BENCHMARK --help shows one benchmark's alone.",
        metavar="BENCHMARK",
    )
    FROM_CORPUS.add_to(verbs)
    add_verb(
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
    add_verb(
        verbs,
        "plot-evidence",
        PlotEvidenceSettings,
        _plot,
        help="histogram of relative evidence positions (PNG)",
        description="Draw where the evidence of each query of a position task starts, relative "
        "to its document's length, as one histogram PNG (--out), a curve per task.",
        output=OutputFolder(file=True),
    )
    list_verbs(subparsers.choices["benchmark"], verbs, [("expert", EXPERT_VERBS)])
