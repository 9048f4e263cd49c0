"""The report of a listwise study folder (``posbias study report`` on a ``kind: listwise`` study):
Q26's Tables 1–3 and Figs. 3–6 from the finished steps, with ``report.json``.

Tables come from :func:`~hf_posbias.listwise.experiments.papertables.shuffle_table` (every cell
recomputed from its run's ``per_query.jsonl``; ``report.json`` names the file of each cell), the
curves from :func:`~hf_posbias.listwise.experiments.papertables.curves_figure`, Fig. 3 from
:mod:`hf_posbias.listwise.training.transitions`. Fig. 5: for the spec's ``fig5`` pair (Q26:
DebiasFirst vs First; default the first two rerankers) on the curves dataset, nDCG@10 of each
shuffle (bars, with the mean ± standard deviation across shuffles) and of the Kemeny
aggregation (PermSC-style) of the first m shuffles for m = 1…M.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.study.listwise_study import (
    VARIANT_PREFIX,
    ListwiseStudySpec,
    parse_variant,
    spec_of_folder,
    stage_slug,
)

REPORT_FOLDER = "report"


def _shuffle_folder(out: Path, dataset: str, stage: Any, label: str) -> Path:
    return out / "shuffle" / dataset / stage_slug(stage) / label


def _table(
    spec: ListwiseStudySpec, out: Path, stage: Any, labels: Sequence[str]
) -> dict[str, Any] | None:
    from hf_posbias.listwise.experiments.papertables import shuffle_table

    folders, names = [], []
    for label in labels:
        for dataset in spec.datasets:
            folder = _shuffle_folder(out, dataset, stage, label)
            if (folder / "shuffle_eval.json").is_file():
                folders.append(folder)
                names.append(label)
    if not folders:
        return None
    return shuffle_table(
        folders, labels=names, method=spec.test, alpha=spec.alpha,
        n_resamples=spec.n_resamples, seed=spec.seed,
        baselines={mark: label for label, mark in spec.marks.items()},
    )  # fmt: skip


def _curves(out: Path, labels: Sequence[str], path: Path) -> str | None:
    from hf_posbias.figures import save_figure
    from hf_posbias.listwise.experiments.papertables import curves_figure

    folders = [out / "curves" / label for label in labels]
    kept = [(f, label) for f, label in zip(folders, labels) if (f / "positions.json").is_file()]
    if not kept:
        return None
    fig = curves_figure([f for f, _ in kept], [label for _, label in kept])
    return str(save_figure(fig, path))


def permsc_curve(folder: Path, task_folder: str, split: str | None) -> dict[str, Any]:
    """Per-shuffle nDCG@10 (from ``shuffle_eval.json``) and the nDCG@10 of the Kemeny
    aggregation of each query's first m shuffled rankings (``rankings.jsonl``), m = 1…M."""
    from hf_posbias.listwise.experiments.aggregate import kemeny_local_search
    from hf_posbias.listwise.experiments.runs import ndcg_at_10
    from hf_posbias.listwise.experiments.taskio import load_rerank_task
    from hf_posbias.rows import read_json, read_rows

    summary = read_json(folder / "shuffle_eval.json")
    rows = [r for r in read_rows(folder / "rankings.jsonl") if r.get("shuffle", -1) >= 0]
    by_query: dict[str, list[list[str]]] = {}
    for row in sorted(rows, key=lambda r: (str(r["query_id"]), r["shuffle"])):
        by_query.setdefault(str(row["query_id"]), []).append(list(row["ranking"]))
    qrels = load_rerank_task(task_folder, split).qrels
    m_max = int(summary["shuffles"])
    aggregated = []
    for m in range(1, m_max + 1):
        ranked = [
            {"query_id": q, "ranking": kemeny_local_search(r[:m])} for q, r in by_query.items()
        ]
        scores = ndcg_at_10(ranked, qrels)
        aggregated.append(sum(scores) / len(scores))
    per_shuffle = list(summary["per_shuffle_ndcg_at_10"])
    return {
        "folder": str(folder),
        "original": summary["ndcg_at_10"]["original"],
        "per_shuffle": per_shuffle,
        "shuffle_mean": statistics.fmean(per_shuffle),
        "shuffle_std": statistics.pstdev(per_shuffle),
        "permsc": aggregated,
    }


def _fig5(curves: dict[str, dict[str, Any]], path: Path) -> str:
    from matplotlib.figure import Figure

    from hf_posbias.figures import save_figure

    fig = Figure(figsize=(5.5 * len(curves), 4.0), dpi=100)
    axes = fig.subplots(1, len(curves), squeeze=False)[0]
    for ax, (label, c) in zip(axes, curves.items()):
        m = list(range(1, len(c["per_shuffle"]) + 1))
        ax.bar(m, c["per_shuffle"], alpha=0.5, label="each shuffle")
        ax.axhline(c["shuffle_mean"], linestyle="--", label=f"mean ± sd ({c['shuffle_std']:.3f})")
        ax.axhspan(c["shuffle_mean"] - c["shuffle_std"], c["shuffle_mean"] + c["shuffle_std"],
                   alpha=0.1)  # fmt: skip
        ax.axhline(c["original"], color="black", linewidth=1, label="original order")
        ax.plot(m, c["permsc"], marker="o", color="C3", label="Kemeny of first m shuffles")
        ax.set_xlabel("shuffle / m")
        ax.set_ylabel("nDCG@10")
        ax.set_title(label, fontsize=10)
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    return str(save_figure(fig, path))


def _fig3(spec: ListwiseStudySpec, out: Path, report: Path) -> dict[str, Any] | None:
    from hf_posbias.figures import save_figure
    from hf_posbias.listwise.experiments.plots import heatmaps_figure
    from hf_posbias.listwise.training.trainset import TRAIN_FILE, read_train_set
    from hf_posbias.listwise.training.transitions import transitions

    data = Path(str(spec.training.get("data") or out / "train" / "data"))
    if not (data / TRAIN_FILE).is_file() and not data.is_file():
        return None
    groups = int(spec.training.get("groups", 4))
    payload = transitions(read_train_set(data), augmentation="pos-aug", groups=groups)
    panels = {name: payload[name]["frequency"] for name in ("original", "augmented")}
    fig = heatmaps_figure(panels, title="training data: input position × target rank",
                          xlabel="target rank", ylabel="input position",
                          colorbar="P(target rank | input position)")  # fmt: skip
    payload["figure"] = str(save_figure(fig, report / "fig3_transitions.png"))
    return payload


def _markdown(title: str, payload: dict[str, Any] | None) -> str:
    from hf_posbias.tables import as_table

    if payload is None:
        return f"## {title}\n\n(no finished run)\n"
    return f"## {title}\n\n{as_table(payload['table']).to_markdown()}\n\n{payload['caption']}\n"


def write_listwise_report(out: str | Path) -> Path:
    """Write ``<out>/report/`` (report.md, report.json, the figures); the path of report.json."""
    from hf_posbias.shards import write_json, write_text_atomic

    out = Path(out)
    spec = spec_of_folder(out)
    if spec is None:
        raise InputError(f"{out}: not a listwise study folder")
    report = out / REPORT_FOLDER
    report.mkdir(parents=True, exist_ok=True)
    evaluated = spec.evaluated()
    variants = [label for label, m in evaluated.items() if m.startswith(VARIANT_PREFIX)]
    first = spec.first_stages[0]
    tables = {
        "table1": _table(spec, out, first, list(spec.rerankers)),
        "table2": {
            stage_slug(st): _table(spec, out, st, list(evaluated)) for st in spec.first_stages
        },
        "table3": _table(spec, out, first, variants) if variants else None,
    }
    figures: dict[str, Any] = {"fig4": _curves(out, list(evaluated), report / "fig4_curves.png")}
    fig3 = _fig3(spec, out, report)
    figures["fig3"] = None if fig3 is None else fig3["figure"]
    fig5 = {
        label: permsc_curve(
            folder, spec.datasets[spec.curves_dataset], spec.split_of(spec.curves_dataset)
        )
        for label in spec.fig5_pair
        if (
            (folder := _shuffle_folder(out, spec.curves_dataset, first, label)) / "rankings.jsonl"
        ).is_file()
    }
    figures["fig5"] = _fig5(fig5, report / "fig5_shuffles.png") if fig5 else None
    figures["fig6"] = {}
    for letter, (name, group) in zip("abcd", _variant_groups(spec, variants)):
        figures["fig6"][letter] = {
            "group": name,
            "path": _curves(out, group, report / f"fig6{letter}_{stage_slug(name)}.png"),
        }
    payload = {
        "kind": "listwise",
        "name": spec.name,
        "test": spec.test,
        "alpha": spec.alpha,
        "ips_normalization": spec.ips_normalization,
        "tables": tables,
        "fig3": fig3,
        "fig5": fig5,
        "figures": figures,
    }
    lines = [f"# {spec.name}", "", spec.notes, ""]
    lines.append(
        _markdown(f"Table 1: original vs shuffled ({stage_slug(first)})", tables["table1"])
    )
    for stage, table in tables["table2"].items():
        lines.append(_markdown(f"Table 2: first stage {stage}", table))
    if variants:
        lines.append(_markdown("Table 3: ablations", tables["table3"]))
    lines.append(f"IPS normalisation of the trained variants: {spec.ips_normalization}.\n")
    lines.append("## Figures\n")
    lines += [f"- {name}: {path}" for name, path in figures.items() if isinstance(path, str)]
    lines += [f"- fig6{k}: {v['path']} ({v['group']})" for k, v in figures["fig6"].items()]
    write_text_atomic(report / "report.md", "\n".join(lines) + "\n")
    target = report / "report.json"
    write_json(target, payload)
    return target


def _variant_groups(spec: ListwiseStudySpec, variants: list[str]) -> list[tuple[str, list[str]]]:
    """Fig. 6 panels: the variants sharing a loss (augmentation ablation), then those sharing
    an augmentation (loss ablation), groups of two or more (else all variants in one panel)."""
    by_loss: dict[str, list[str]] = {}
    by_aug: dict[str, list[str]] = {}
    for label in variants:
        name = spec.evaluated()[label].removeprefix(VARIANT_PREFIX)
        parse_variant(name)
        aug, loss = name.split("-", 1)
        by_loss.setdefault(f"loss {loss}", []).append(label)
        by_aug.setdefault(f"augmentation {aug}", []).append(label)
    groups = [(k, v) for k, v in [*by_loss.items(), *by_aug.items()] if len(v) > 1]
    return groups or ([("variants", variants)] if variants else [])


def run_listwise_cmd(spec_path: str, out: str | None, *, dry_run: bool = False) -> None:
    """``posbias study run SPEC`` for a ``kind: listwise`` spec: the plan (``--dry-run``) or
    the run, resumable, then the report."""
    from hf_posbias.study.listwise_study import (
        listwise_dry_run_lines,
        load_listwise_spec,
        run_listwise_study,
    )

    spec = load_listwise_spec(spec_path)
    if dry_run:
        print("\n".join(listwise_dry_run_lines(spec, out or "<out>")))
        return
    if not out:
        raise InputError("--out is required (the study folder) unless --dry-run")
    outcome = run_listwise_study(spec, out)
    write_listwise_report(out)
    print(
        f"{len(outcome.ran)} step(s) run, {len(outcome.skipped)} skipped (done) in "
        f"{outcome.seconds:.1f} s; report: {Path(out) / 'report' / 'report.md'}"
    )
