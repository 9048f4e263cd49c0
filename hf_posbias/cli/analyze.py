"""``posbias analyze``: representation analyses (evidence moving, segment profile, pooling).

Every verb writes a CSV table, a markdown table and a PNG plot to ``--out`` and prints the table.

Example:
    >>> from hf_posbias.cli import build_parser
    >>> args = build_parser().parse_args(
    ...     ["analyze", "evidence-moving", "--pairs", "claims/", "--model", "B=runs/begin",
    ...      "--out", "out/em"])
    >>> args.n, args.models, args.progress
    (10, ['B=runs/begin'], True)
"""

from __future__ import annotations

import argparse
import csv
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hf_posbias.analysis.analysis_settings import (
    AnalysisOptions,
    EvidenceMovingSettings,
    PoolingSettings,
    SegmentProfileSettings,
)
from hf_posbias.cli.common import Verb, add_group
from hf_posbias.output_folders import OutputFolder
from hf_posbias.shards import atomic_path, write_text_atomic


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``analyze evidence-moving|segment-profile|pooling|audit|remedies``."""
    verbs = add_group(
        subparsers,
        "analyze",
        help="evidence moving, segment profile, pooling, audit, remedies",
        required=True,
    )
    from hf_posbias.cli.evaluate import run_audit
    from hf_posbias.cli.remedies import run_remedies
    from hf_posbias.evaluation.evaluation_settings import ModelAuditSettings, RemediesSettings

    for verb in (
        Verb(
            "evidence-moving",
            EvidenceMovingSettings,
            run_evidence_moving_cmd,
            "move the evidence to p1…pn, cosine per slot",
            description="Place each claim's evidence sentence at slots p1…pn of its document "
            "and measure, for every model, the cosine between the claim and each version "
            "(YHP26 Tables 5/13). Writes evidence_moving.csv, evidence_moving_pairs.csv, "
            ".md and .png into --out.",
        ),
        Verb(
            "segment-profile",
            SegmentProfileSettings,
            run_segment_profile_cmd,
            "cosine(document, segment i), query-free",
            description="For every model, the cosine between each document's embedding and "
            "the embedding of each of its equal segments, with no query (YHP26 Figs. 3/7): "
            "which part of a document its vector holds. Writes segment_profile.csv, .md and "
            ".png into --out.",
        ),
        Verb(
            "pooling",
            PoolingSettings,
            run_pooling_cmd,
            "one transformer with cls/mean/max/lasttoken pooling",
            description="The pooling ablation: one transformer read with each pooling (cls, "
            "mean, max, lasttoken), its evidence-moving curve and segment profile per pooling. "
            "Writes pooling.csv, .md and the PNGs into --out.",
        ),
        Verb(
            "audit",
            ModelAuditSettings,
            run_audit,
            "all position measurements for one model → markdown + HTML report",
            description="Per-task per-position curves, the PSI table and mirror reversal (tasks "
            "with character evidence spans) for one model, as <out>/audit.md and a "
            "self-contained <out>/audit.html.",
            with_args=True,
        ),
        Verb(
            "remedies",
            RemediesSettings,
            run_remedies,
            "the plain model and each inference-time remedy on the same queries, with costs",
            description="Run the plain bi-encoder (remedy none) and each remedy (maxp, firstp, "
            "sump, chunk-mean, segment-balanced) on the same position tasks and write, per "
            "task, <out>/<task>/remedies.json (remedy, mean, psi, harmonic_mean, delta_mean, "
            "p_value, encoded_tokens, seconds), remedies.md and a PNG of PSI against cost; Δ "
            "and p are paired against none on the same queries. Every run is a `posbias "
            "evaluate` folder under <out>/runs/; a rerun reuses every run that finished with "
            "the same settings (a killed comparison resumes, an added remedy costs only "
            "itself).",
            with_args=True,
            output=OutputFolder(keeps="its finished evaluation runs (runs/)", grows=("remedies",)),
        ),
    ):
        verb.add_to(verbs)


def parse_model_spec(spec: str) -> tuple[str, str]:
    """``"B=runs/begin"`` → ``("B", "runs/begin")``; a bare name labels itself.

    Example:
        >>> parse_model_spec("B=runs/begin"), parse_model_spec("all-MiniLM-L6-v2")
        (('B', 'runs/begin'), ('all-MiniLM-L6-v2', 'all-MiniLM-L6-v2'))
    """
    label, sep, name = spec.partition("=")
    if sep and label and "/" not in label and name:
        return label, name
    from hf_posbias.modeling.resolve import model_display_name

    return model_display_name(spec), spec


def _load(name: str, args: AnalysisOptions) -> Any:
    """Any embedding model argument, through the one resolver (:func:`load_embedder`)."""
    from hf_posbias.embedding import load_embedder
    from hf_posbias.modeling.resolve import ModelSettings

    settings = args if isinstance(args, ModelSettings) else None
    model = load_embedder(name, settings=settings, device=args.device)
    if args.max_seq_length:
        model.max_seq_length = args.max_seq_length
    return model


def _write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def _in_out(handler: Callable[[Any, Path], None]) -> Callable[[Any], None]:
    """A handler of ``handler(settings, out)``: every analysis writes into ``--out``, made
    first."""

    def run(s: AnalysisOptions) -> None:
        out = Path(s.out)
        out.mkdir(parents=True, exist_ok=True)
        handler(s, out)

    return functools.update_wrapper(run, handler)


def _pairs(args: Any) -> tuple[list[Any], str]:
    from hf_posbias.analysis.evidence_moving import sample_pairs
    from hf_posbias.analysis.msmarco_pairs import resolve_pairs

    cases, report = resolve_pairs(args.pairs, split=args.split, config=args.config)
    print(report.summary_line())
    chosen = sample_pairs(cases, args.sample_size or None, seed=args.seed)
    if len(chosen) < len(cases):
        print(f"sampled {len(chosen)} of {len(cases)} pairs (seed {args.seed})")
    # Load-time skips (no evidence, unparsable lines) are reported once for the source; the
    # per-model summaries count what each model could not use (too short, too long).
    return chosen, report.summary_line()


def _documents(args: Any) -> list[tuple[str, str]]:
    from hf_posbias.analysis.segment_profile import sample_profile_documents

    docs, sampled = sample_profile_documents(
        args.corpus, args.sample_size, args.seed, args.clip_chars
    )
    if sampled:
        print(sampled)
    return docs


def _skipped_lines(label: str, skipped: dict[str, int], total: int) -> list[str]:
    return [f"  WARNING {label}: skipped {v} of {total} ({k})" for k, v in sorted(skipped.items())]


@_in_out
def run_evidence_moving_cmd(args: EvidenceMovingSettings, out: Path) -> None:
    """Handler of ``posbias analyze evidence-moving``."""
    from hf_posbias.analysis.evidence_moving import (
        common_pairs,
        run_evidence_moving,
        save_evidence_moving_plot,
        summary_table,
    )
    from hf_posbias.evaluation.runs.remedies import remedy_label, remedy_scorer

    cases, source_line = _pairs(args)
    summaries = []
    for spec in args.models:
        label, name = parse_model_spec(spec)
        model = _load(name, args)
        # Checked against the model (kind, passage length) before anything is encoded.
        scorer = remedy_scorer(model, args)
        for remedy in (None, scorer) if scorer else (None,):
            summaries.append(
                run_evidence_moving(
                    model,
                    cases,
                    args.n,
                    remedy_label(label, args.remedy if remedy else None),
                    args.allow_truncation,
                    progress=args.progress,
                    remedy=remedy,
                )
            )
    # Compared curves average the same pairs: each model keeps only the pairs all could use.
    summaries = common_pairs(summaries)
    usage = [s.usage_line() for s in summaries]
    if len(summaries) > 1:
        usage.append(
            f"All models averaged over the same {summaries[0].n_pairs} pairs (those every "
            "model could use)."
        )
    table = summary_table(summaries)
    _write_csv(out / "evidence_moving.csv", [s.to_row() for s in summaries])
    per_pair = [
        {"model": s.model, "pair_id": c.pair_id, **dict(zip(c.positions, c.cosines))}
        for s in summaries
        for c in s.curves
    ]
    _write_csv(out / "evidence_moving_pairs.csv", per_pair)
    write_text_atomic(
        out / "evidence_moving.md",
        f"{source_line}\n\n"
        + "\n\n".join(usage)
        + f"\n\n{table}\n\n"
        + "\n".join(s.headline() for s in summaries)
        + "\n",
    )
    save_evidence_moving_plot(summaries, out / "evidence_moving.png")
    print(table)
    for s in summaries:
        print(s.headline())
    for line in usage:
        print(line)
    print(f"wrote {out}/evidence_moving.csv, evidence_moving_pairs.csv, .md, .png")


@_in_out
def run_segment_profile_cmd(args: SegmentProfileSettings, out: Path) -> None:
    """Handler of ``posbias analyze segment-profile``."""
    from hf_posbias.analysis.plots import CurveSeries, curve_figure
    from hf_posbias.analysis.segment_profile import profile_table, segment_profile
    from hf_posbias.figures import save_figure

    docs = _documents(args)
    profiles = []
    for spec in args.models:
        label, name = parse_model_spec(spec)
        model = _load(name, args)
        profiles.append(
            segment_profile(
                model, docs, args.n, label, args.allow_truncation, progress=args.progress
            )
        )
    table = profile_table(profiles)
    _write_csv(out / "segment_profile.csv", [p.to_row() for p in profiles])
    write_text_atomic(out / "segment_profile.md", f"corpus: {args.corpus}\n\n{table}\n")
    fig = curve_figure(
        [CurveSeries(p.model, p.mean, p.stderr) for p in profiles],
        f"Segment profile ({profiles[0].n_docs} documents; mean ± s.e.)",
        ylabel="cosine(document, segment)",
        xlabel="segment",
    )
    save_figure(fig, out / "segment_profile.png")
    print(table)
    for p in profiles:
        for line in _skipped_lines(p.model, p.skipped, p.n_input):
            print(line)
    print(f"wrote {out}/segment_profile.csv, .md, .png")


@_in_out
def run_pooling_cmd(args: PoolingSettings, out: Path) -> None:
    """Handler of ``posbias analyze pooling``."""
    from hf_posbias.analysis.plots import CurveSeries, curve_figure
    from hf_posbias.analysis.pooling import pooling_ablation, pooling_table
    from hf_posbias.figures import save_figure

    cases = _pairs(args)[0] if args.pairs else []
    docs = _documents(args) if args.corpus else []
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rows = pooling_ablation(
        args.model,
        cases,
        docs,
        args.n,
        modes,
        args.allow_truncation,
        device=args.device,
        progress=args.progress,
    )
    table = pooling_table(rows)
    _write_csv(out / "pooling.csv", [r.to_row() for r in rows])
    write_text_atomic(out / "pooling.md", f"model: {args.model}\n\n{table}\n")
    if cases:
        series = [CurveSeries(r.pooling, r.evidence.mean, r.evidence.stderr) for r in rows]
        save_figure(
            curve_figure(series, "Evidence moving by pooling", xlabel="evidence position"),
            out / "pooling_evidence_moving.png",
        )
    if docs:
        series = [CurveSeries(r.pooling, r.profile.mean, r.profile.stderr) for r in rows]
        save_figure(
            curve_figure(series, "Segment profile by pooling", xlabel="segment"),
            out / "pooling_segment_profile.png",
        )
    print(table)
    print(f"wrote {out}/pooling.csv, .md, .png")
