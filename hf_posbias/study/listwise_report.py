"""The report of a listwise study folder (``posbias study report`` on a ``kind: listwise`` study):
Q26's Tables 1–3 and Figs. 2–6 from the finished steps, with ``report.json``.

Each table is the spec's :class:`~hf_posbias.study.listwise_spec.TableSpec`: a block per first
stage from :func:`~hf_posbias.listwise.experiments.papertables.shuffle_table` (every cell
recomputed from its run's ``per_query.jsonl``, marked against the table's own marked rerankers;
``report.json`` names the file of each cell) and, for Table 2, the first stages' own nDCG@10
(:func:`~hf_posbias.listwise.experiments.papertables.first_stage_table`). The curves come from
:func:`~hf_posbias.listwise.experiments.papertables.curves_figure`, Fig. 3 from
:mod:`hf_posbias.listwise.training.transitions`, Fig. 2 is 1/ω of the propensity. Fig. 5: for
the spec's Fig. 5 pair (Q26: DebiasFirst vs First) on each Fig. 5 dataset, nDCG@10 of each
shuffled input (bars, with the mean, standard deviation and variance across shuffles) and of
the Kemeny aggregation (PermSC-style) of the first m shuffles for m = 1…M.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.study.listwise_spec import ListwiseStudySpec, TableSpec, stage_slug
from hf_posbias.study.listwise_study import (
    fig5_folder,
    first_stage_folder,
    shuffle_folder,
    spec_of_folder,
    stage_name,
)

REPORT_FOLDER = "report"


def _block(spec: ListwiseStudySpec, out: Path, stage: Any, table: TableSpec) -> dict | None:
    """One first stage's block of a table: its rerankers' original / shuffled nDCG@10."""
    from hf_posbias.listwise.experiments.papertables import shuffle_table

    folders, names = [], []
    for label in table.rerankers:
        for dataset in spec.datasets:
            folder = shuffle_folder(out, dataset, stage, label)
            if (folder / "shuffle_eval.json").is_file():
                folders.append(folder)
                names.append(label)
    if not folders:
        return None
    return shuffle_table(
        folders, labels=names, method=spec.test, alpha=spec.alpha,
        n_resamples=spec.n_resamples, seed=spec.seed, baselines=table.baselines,
    )  # fmt: skip


def _first_stage_rows(spec: ListwiseStudySpec, out: Path, table: TableSpec) -> dict | None:
    """The first stages' own nDCG@10 (Table 2's first block)."""
    from hf_posbias.listwise.experiments.firststage_eval import EVAL_FILE
    from hf_posbias.listwise.experiments.papertables import first_stage_table

    folders, names = [], []
    for stage in table.first_stages:
        for dataset in spec.datasets:
            folder = first_stage_folder(out, dataset, stage)
            if (folder / EVAL_FILE).is_file():
                folders.append(folder)
                names.append(stage_name(stage, spec.rrf_k))
    return first_stage_table(folders, names) if folders else None


def _tables(spec: ListwiseStudySpec, out: Path) -> dict[str, dict[str, Any]]:
    """Every declared table: ``{"first_stages": rows or None, "blocks": {stage: block}}``."""
    return {
        name: {
            "first_stages": _first_stage_rows(spec, out, t) if t.first_stage_rows else None,
            "blocks": {stage_slug(st): _block(spec, out, st, t) for st in t.first_stages},
        }
        for name, t in spec.declared_tables().items()
    }


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
    from hf_posbias.rows.readers import read_json, read_rows

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
        # Q26 RQ4 quotes the spread as a variance on the ×100 scale (0.08 on DL19)
        "shuffle_variance_x100": statistics.pvariance([100 * v for v in per_shuffle]),
        "permsc": aggregated,
    }


def _fig5(curves: dict[str, dict[str, dict[str, Any]]], path: Path) -> str:
    from matplotlib.figure import Figure

    from hf_posbias.figures import save_figure

    n_cols = max(len(by_label) for by_label in curves.values())
    fig = Figure(figsize=(5.5 * n_cols, 4.0 * len(curves)), dpi=100)
    grid = fig.subplots(len(curves), n_cols, squeeze=False)
    for row, (dataset, by_label) in zip(grid, curves.items()):
        for ax, (label, c) in zip(row, by_label.items()):
            m = list(range(1, len(c["per_shuffle"]) + 1))
            ax.bar(m, c["per_shuffle"], alpha=0.5, label="each shuffle")
            ax.axhline(c["shuffle_mean"], linestyle="--",
                       label=f"mean ± sd ({c['shuffle_std']:.3f})")  # fmt: skip
            ax.axhspan(c["shuffle_mean"] - c["shuffle_std"],
                       c["shuffle_mean"] + c["shuffle_std"], alpha=0.1)  # fmt: skip
            ax.axhline(c["original"], color="black", linewidth=1, label="original order")
            ax.plot(m, c["permsc"], marker="o", color="C3", label="Kemeny of first m shuffles")
            ax.set_xlabel("shuffle / m")
            ax.set_ylabel("nDCG@10")
            ax.set_title(f"{label} on {dataset}", fontsize=10)
            ax.legend(fontsize="x-small")
    fig.tight_layout()
    return str(save_figure(fig, path))


def _fig2(out: Path, report: Path) -> str | None:
    """Q26 Fig. 2's heatmap: the inverse propensities 1/ω (an empty cell is blank)."""
    from hf_posbias.figures import save_figure
    from hf_posbias.listwise.experiments.plots import heatmap_figure
    from hf_posbias.rows.readers import read_json

    path = out / "train" / "propensity" / "propensity.json"
    if not path.is_file():
        return None
    omega = read_json(path)["omega"]
    inverse = [[1.0 / w if w > 0 else float("nan") for w in row] for row in omega]
    fig = heatmap_figure(inverse, "inverse propensities 1/ω (Eq. 5)", label="1/ω")
    return str(save_figure(fig, report / "fig2_inverse_propensity.png"))


def _fig3(spec: ListwiseStudySpec, out: Path, report: Path) -> dict[str, Any] | None:
    from hf_posbias.figures import save_figure
    from hf_posbias.listwise.experiments.plots import heatmaps_figure
    from hf_posbias.listwise.training.finetune_settings import TransitionsSettings
    from hf_posbias.listwise.training.trainset import TRAIN_FILE, read_train_set
    from hf_posbias.listwise.training.transitions import transitions

    data = Path(str(spec.training.get("data") or out / "train" / "data"))
    if not (data / TRAIN_FILE).is_file() and not data.is_file():
        return None
    # Pos-Aug's n of the spec, else the transitions verb's own default
    default = next(f.default for f in fields(TransitionsSettings) if f.name == "groups")
    groups = spec.training.get("groups") or default
    payload = transitions(read_train_set(data), augmentation="pos-aug", groups=int(groups))
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
    from hf_posbias.listwise.training.finetune_settings import DEFAULT_IPS_NORMALIZATION
    from hf_posbias.shards import write_json, write_text_atomic

    out = Path(out)
    spec = spec_of_folder(out)
    if spec is None:
        raise InputError(f"{out}: not a listwise study folder")
    report = out / REPORT_FOLDER
    report.mkdir(parents=True, exist_ok=True)
    tables = _tables(spec, out)
    figures: dict[str, Any] = {
        "fig2": _fig2(out, report),
        "fig4": _curves(out, spec.fig4_rerankers(), report / "fig4_curves.png"),
    }
    fig3 = _fig3(spec, out, report)
    figures["fig3"] = None if fig3 is None else fig3["figure"]
    fig5: dict[str, dict[str, Any]] = {}
    for dataset in spec.fig5_sets:
        for label in spec.fig5_pair:
            folder = fig5_folder(spec, out, dataset, label)
            if (folder / "rankings.jsonl").is_file():
                curve = permsc_curve(folder, spec.datasets[dataset], spec.split_of(dataset))
                fig5.setdefault(dataset, {})[label] = curve
    figures["fig5"] = _fig5(fig5, report / "fig5_shuffles.png") if fig5 else None
    figures["fig6"] = {
        letter: {
            "rerankers": group,
            "path": _curves(out, group, report / f"fig6{letter}_curves.png"),
        }
        for letter, group in spec.fig6_panels().items()
    }
    how = spec.ips_normalization or DEFAULT_IPS_NORMALIZATION
    payload = {
        "kind": "listwise",
        "name": spec.name,
        "test": spec.test,
        "alpha": spec.alpha,
        "ips_normalization": how,
        "tables": tables,
        "fig3": fig3,
        "fig5": fig5,
        "figures": figures,
    }
    lines = [f"# {spec.name}", "", spec.notes, ""]
    for name, table in tables.items():
        title = f"Table {name[-1]}"
        if table["first_stages"] is not None or spec.table(name).first_stage_rows:
            lines.append(_markdown(f"{title}: the first stages on their own",
                                   table["first_stages"]))  # fmt: skip
        for stage, block in table["blocks"].items():
            lines.append(_markdown(f"{title}: first stage {stage}", block))
    if spec.variants:
        lines.append(f"IPS normalisation of the trained variants: {how}.\n")
    lines.append("## Figures\n")
    lines += [f"- {name}: {path}" for name, path in figures.items() if isinstance(path, str)]
    lines += [
        f"- fig6{k}: {v['path']} ({', '.join(v['rerankers'])})" for k, v in figures["fig6"].items()
    ]
    write_text_atomic(report / "report.md", "\n".join(lines) + "\n")
    target = report / "report.json"
    write_json(target, payload)
    return target


def run_listwise_cmd(spec_path: str, out: str | None, *, dry_run: bool = False) -> None:
    """``posbias study run SPEC`` for a ``kind: listwise`` spec: the plan (``--dry-run``) or
    the run, resumable, then the report."""
    from hf_posbias.study.listwise_spec import load_listwise_spec
    from hf_posbias.study.listwise_study import listwise_dry_run_lines, run_listwise_study

    spec = load_listwise_spec(spec_path)
    if dry_run:
        from hf_posbias.study.preflight import StudyInputError

        lines = listwise_dry_run_lines(spec, out or "<out>")
        print("\n".join(lines))
        if lines.problems:  # the real run would stop here, with this error
            raise StudyInputError(lines.problems)
        return
    if not out:
        raise InputError("--out is required (the study folder) unless --dry-run")
    outcome = run_listwise_study(spec, out)
    write_listwise_report(out)
    print(
        f"{len(outcome.ran)} step(s) run, {len(outcome.skipped)} skipped (done) in "
        f"{outcome.seconds:.1f} s; report: {Path(out) / 'report' / 'report.md'}"
    )
