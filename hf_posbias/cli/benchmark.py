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

Example:
    >>> import argparse
    >>> from hf_posbias.cli.benchmark import register
    >>> parser = argparse.ArgumentParser(); sub = parser.add_subparsers()
    >>> register(sub)
    >>> args = parser.parse_args(["benchmark", "from-jsonl", "--input", "a.jsonl", "--out", "o"])
    >>> args.buckets, args.benchmark
    ('thirds', 'from-jsonl')
"""

from __future__ import annotations

import argparse
from typing import Any

BUCKETS_HELP = "bucket rule: thirds (default), posir20, or relative edges such as 0,0.2,0.5,1"


def _save(data: Any, out: str) -> int:
    from hf_posbias.evaluation.builders.common import format_report

    folder = data.save(out)
    print(format_report(data))
    print(f"wrote {folder}")
    return 0


def _squad(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.builders.squad import build_squad_posq

    data = build_squad_posq(
        args.input, tiny=args.tiny, seed=args.seed, tiny_size=args.tiny_size, splits=args.splits
    )
    return _save(data, args.out)


def _fineweb(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.builders.fineweb import build_fineweb_posq

    data = build_fineweb_posq(
        args.input,
        tiny=args.tiny,
        seed=args.seed,
        tiny_per_position=args.per_position,
        question_column=args.question_column,
        passage_column=args.passage_column,
        label_column=args.label_column,
        split=args.split,
    )
    return _save(data, args.out)


def _posir(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.builders.posir import YHP26_DOMAINS, build_posir

    spec = args.domains.strip()
    domains: Any
    if spec.lower() == "yhp26":
        domains = YHP26_DOMAINS
    elif spec.lower() == "all":
        domains = None
    else:
        domains = [d for d in spec.split(",") if d.strip()]
    data = build_posir(
        args.input,
        language=args.language or None,
        domains=domains,
        scheme=args.scheme,
        anchor=args.anchor,
        name=args.name,
    )
    return _save(data, args.out)


def _scifact(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.builders.scifact import build_scifact

    data = build_scifact(args.input, split=args.split, buckets=args.buckets, anchor=args.anchor)
    return _save(data, args.out)


def _climate(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.builders.climate_fever import build_climate_fever

    data = build_climate_fever(
        args.input,
        corpus=args.corpus,
        labels=[x for x in args.labels.split(",") if x.strip()],
        buckets=args.buckets,
        anchor=args.anchor,
    )
    return _save(data, args.out)


def _fever(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.builders.fever import build_fever

    data = build_fever(
        args.input,
        args.wiki_pages,
        labels=[x for x in args.labels.split(",") if x.strip()],
        buckets=args.buckets,
        anchor=args.anchor,
        all_pages=not args.evidence_pages_only,
    )
    return _save(data, args.out)


def _hotpotqa(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.builders.hotpotqa import build_hotpotqa

    data = build_hotpotqa(args.input, buckets=args.buckets, anchor=args.anchor, split=args.split)
    return _save(data, args.out)


def _from_jsonl(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.builders.jsonl import build_from_jsonl

    data = build_from_jsonl(
        args.input,
        buckets=args.buckets,
        name=args.name,
        distractors=args.distractors,
        anchor=args.anchor,
    )
    return _save(data, args.out)


def _plot(args: argparse.Namespace) -> int:
    from hf_posbias.evaluation.evidence_plot import plot_evidence_distribution

    summary = plot_evidence_distribution(args.task, args.out, bins=args.bins)
    for name, counts in summary.counts.items():
        print(f"{name}: {sum(counts)} queries with evidence offsets")
    for name in summary.skipped:
        print(f"{name}: skipped (no evidence offsets in this task)")
    print(f"wrote {summary.path}")
    return 0


def _common(p: argparse.ArgumentParser, input_help: str, default: str | None = None) -> None:
    p.add_argument("--input", required=default is None, default=default, help=input_help)
    p.add_argument("--out", required=True, help="task folder to write")


def _relative(p: argparse.ArgumentParser, buckets: bool = True) -> None:
    if buckets:
        p.add_argument("--buckets", default="thirds", help=BUCKETS_HELP)
    p.add_argument(
        "--anchor",
        choices=("start", "center"),
        default="start",
        help="which point of the evidence span is bucketed (default: its start)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias benchmark`` and its verbs."""
    bench = subparsers.add_parser(
        "benchmark",
        help="build position task folders (SQuAD-PosQ, FineWeb-PosQ, PosIR, SciFact, …)",
        description="Build position-bucketed retrieval sets from raw sources, or plot where "
        "their evidence sits.",
    )
    verbs = bench.add_subparsers(dest="benchmark", metavar="NAME")

    p = verbs.add_parser("squad-posq", help="SQuAD v2 → SQuAD-PosQ (Zeng et al. 2025)")
    _common(p, "Hub id, Hub-layout folder, parquet/JSONL rows or SQuAD JSON", "rajpurkar/squad_v2")
    p.add_argument("--tiny", action="store_true", help="10,000 sampled queries, corpus unchanged")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--tiny-size", type=int, default=10_000)
    p.add_argument(
        "--splits", nargs="+", default=["train", "validation"], help="splits to merge, in order"
    )
    p.set_defaults(func=_squad)

    p = verbs.add_parser("fineweb-posq", help="NovaSearch/FineWeb-PosQ rows → FineWeb-PosQ")
    _common(p, "Hub id, Hub-layout folder or parquet/JSONL/JSON rows", "NovaSearch/FineWeb-PosQ")
    p.add_argument("--tiny", action="store_true", help="--per-position queries per position")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--per-position", type=int, default=1000)
    p.add_argument("--question-column", default="question")
    p.add_argument("--passage-column", default="content")
    p.add_argument("--label-column", default="span_class")
    p.add_argument("--split", default="train")
    p.set_defaults(func=_fineweb)

    p = verbs.add_parser("posir", help="infgrad/PosIR-Benchmark-v1 snapshot → PosIR task")
    _common(p, "local snapshot folder holding <language>/<domain>/…")
    p.add_argument("--language", default="eng-Latn", help="language folder ('' = flat layout)")
    p.add_argument(
        "--domains",
        default="yhp26",
        help="yhp26 (Subject Education, News Media, Law Judiciary, Finance Economics), all, "
        "or a comma-separated list",
    )
    p.add_argument(
        "--scheme", default="posir20", help="posir20 (default), token-length, thirds or edges"
    )
    p.add_argument("--anchor", choices=("start", "center"), default="center")
    p.add_argument("--name", default=None)
    p.set_defaults(func=_posir)

    p = verbs.add_parser("scifact", help="SciFact CSV export → evidence-position task")
    _common(p, "folder with claims_<split>.csv and corpus_train.csv")
    p.add_argument(
        "--split",
        default="validation",
        choices=("train", "validation"),
        help="validation = BEIR test (default)",
    )
    _relative(p)
    p.set_defaults(func=_scifact)

    p = verbs.add_parser("climate-fever", help="Climate-FEVER release → evidence-position task")
    _common(p, "climate-fever.jsonl of the official release")
    p.add_argument(
        "--corpus",
        default=None,
        help="BEIR corpus.jsonl with full article texts (exact positions); without it articles "
        "are reconstructed from the release's sentences (approximation)",
    )
    p.add_argument("--labels", default="SUPPORTS,REFUTES", help="evidence labels to use")
    _relative(p)
    p.set_defaults(func=_climate)

    p = verbs.add_parser("fever", help="FEVER claims + wiki-pages → evidence-position task")
    _common(p, "FEVER claims JSONL (e.g. shared_task_dev.jsonl)")
    p.add_argument("--wiki-pages", required=True, help="wiki-pages folder or one of its files")
    p.add_argument("--labels", default="SUPPORTS,REFUTES", help="claim labels to keep")
    p.add_argument(
        "--evidence-pages-only", action="store_true", help="corpus = evidence pages only"
    )
    _relative(p)
    p.set_defaults(func=_fever)

    p = verbs.add_parser("hotpotqa", help="HotpotQA distractor file → evidence-position task")
    _common(p, "hotpot_*_distractor JSON, JSONL/parquet rows, or a Hub-layout folder")
    p.add_argument("--split", default="validation", help="split of a folder/Hub source")
    _relative(p)
    p.set_defaults(func=_hotpotqa)

    p = verbs.add_parser(
        "from-jsonl",
        help="your own JSONL (query, document, evidence_start[, evidence_end, doc_id]) → task",
    )
    _common(
        p, "JSONL with query, document, evidence_start (+ evidence_end, doc_id, query_id, title)"
    )
    p.add_argument("--distractors", default=None, help="JSONL of extra documents (id, text)")
    p.add_argument("--name", default=None, help="task name (default: the file name)")
    _relative(p)
    p.set_defaults(func=_from_jsonl)

    p = verbs.add_parser("plot-evidence", help="histogram of relative evidence positions (PNG)")
    p.add_argument(
        "--task", required=True, action="append", help="task folder (repeat for several)"
    )
    p.add_argument("--out", required=True, help="PNG file to write")
    p.add_argument("--bins", type=int, default=20)
    p.set_defaults(func=_plot)

    bench.set_defaults(func=lambda args: (bench.print_help(), 1)[1])
