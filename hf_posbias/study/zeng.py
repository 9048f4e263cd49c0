"""Zeng et al. (2025)'s view of an evaluation-only study: Tables 1, 2 and 4, Fig. 3, the drop.

An evaluation-only study (``train: false``, e.g. ``studies/zeng2025.yaml``) evaluates each base
as published on every task. Its report gains ``report.json``'s ``zeng2025``:

- ``table1``: per model, nDCG@10 per bucket and PSI on each dataset, and the bias mark: a model is
  marked position-biased when its PSI is at least :data:`BIAS_THRESHOLD` (0.03) on every dataset
  it was scored on (``scored_on``: colbertv2.0 has SQuAD-PosQ only). A dataset's tiny sample
  (task ``<name>-tiny``) stands for it where the model was scored on the sample only: Zeng et al.
  §4.1 score BM25 and the dense models on the full sets, ColBERT-style models and rerankers on the
  tiny ones (``subset``: ``full`` or ``tiny``; the spec's task entries say which model runs where);
- ``fig3``: per model scored on a dataset and its tiny sample, both curves (Zeng et al. Fig. 3,
  App. A.3: bge-m3-dense on Full vs Tiny), drawn as ``zeng-fig3-full-vs-tiny.png``;
- ``table2``: per task, Zeng et al. Table 2's statistics (queries and their length in words,
  passages and their length, queries per bucket:
  :meth:`~hf_posbias.tasks.taskdata.PositionTaskData.length_statistics`);
- ``table4``: with the segment profile at three segments (App. A.4), per sample and model the
  cosine of a passage's embedding with its begin, middle and end thirds' (Table 4);
- ``late_evidence_drop``: per model and dataset, how much of the score is lost when the evidence
  is late, ``1 − mean(nDCG@10 of the late buckets) / nDCG@10 of the first bucket``, the late
  buckets being the last third of the ordered buckets (SQuAD-PosQ: ``400-500`` and
  ``500-3120``; FineWeb-PosQ: ``end``; :func:`hf_posbias.study.direction.own_region`);
  ``average_late_evidence_drop`` averages it, per dataset, over the model families Zeng et al.
  average (their 15.6%: dense and late-interaction models, :data:`DROP_FAMILIES`), with
  ``average_late_evidence_drop_all_models`` (BM25 and rerankers included) beside it. The
  definition is the project's: Zeng et al. state the drop without its formula, and their 15.6%
  cannot be recomputed from their own Table 1 (:data:`PRINTED_DROP_NOTE`, ``printed_drop``).

Example:
    >>> curve = {"0-100": 0.8, "100-200": 0.7, "200-300": 0.6, "300-400": 0.5,
    ...          "400-500": 0.45, "500-3120": 0.35}
    >>> round(late_evidence_drop(curve), 3)
    0.5
    >>> dataset_of("SQuAD-PosQ-tiny"), dataset_of("FineWeb-PosQ")
    (('SQuAD-PosQ', 'tiny'), ('FineWeb-PosQ', 'full'))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

BIAS_THRESHOLD = 0.03
"""PSI at or above which a model gets Zeng et al.'s Table 1 bias mark, on every set it was scored
on (that a model scored on one set only can get it is the project's rule)."""

APP_A4_SAMPLES = {"SQuAD v2": (10_000, 100, 512), "FineWeb-Edu": (10_000, 200, 500)}
"""Zeng et al. App. A.4's representation samples as printed (the Myopic Trap's App. B.4 alike):
(passages, minimum words, maximum words) — SQuAD v2: 10,000 passages of 100–512 words;
FineWeb-Edu (the corpus, not FineWeb-PosQ's 500–1,023-word passages): 10,000 of 200–500 (a study
spec's ``analysis_limit`` and its ``analysis_corpus`` samples, ``studies/zeng2025.yaml``)."""

TINY_SUFFIX = "-tiny"
"""The name a tiny sample's task carries after its dataset's (``posbias benchmark build squad-posq
--tiny``: ``SQuAD-PosQ-tiny``)."""

PRINTED_DROP = 0.156
"""The average drop Zeng et al. print for dense and late-interaction models when the evidence is
late (abstract and §1), without its formula."""

PRINTED_DROP_NOTE = (
    "Zeng et al. print an average drop of 15.6% for dense and late-interaction models (abstract, "
    "§1) without its formula. On their own Table 1 this report's formula gives 7.9% on "
    "SQuAD-PosQ and 16.5% on FineWeb-PosQ (their 13 and 12 such models), and no other "
    "reading tried gives 15.6% (the last bucket, the last third or the late mean against the "
    "first bucket or the best one, per dataset or both pooled, dense models alone or with "
    "ColBERT: 7.2%-18.7%): the 15.6% cannot be recomputed, so the report gives its own "
    "averages and does not compare them with it."
)
"""Why the report's averages are not set against Zeng et al.'s 15.6% (measured on the numbers of
their Table 1, ``tests/study/test_study_zeng.py``)."""


def dataset_of(task: str) -> tuple[str, str]:
    """``(dataset, subset)`` of a task name: a tiny sample (``<name>-tiny``) belongs to its
    dataset, subset ``tiny``; any other task is its own dataset, subset ``full``."""
    if task.lower().endswith(TINY_SUFFIX):
        return task[: -len(TINY_SUFFIX)], "tiny"
    return task, "full"


def late_evidence_drop(per_position: Mapping[str, float]) -> float | None:
    """``1 − mean(late buckets) / first bucket`` of an ordered per-position curve (``None``
    when the first bucket scores 0)."""
    from hf_posbias.study.direction import own_region

    buckets = list(per_position)
    first = per_position[buckets[0]]
    late = [per_position[b] for b in own_region(buckets, "end")]
    if not first or not late:
        return None
    return 1.0 - sum(late) / len(late) / first


DROP_FAMILIES = ("dense", "late-interaction")
"""The model families Zeng et al.'s late-evidence drop (15.6%) averages over."""


def model_family(model: str) -> str:
    """The family of a model name: ``lexical`` (BM25), ``reranker`` (a cross-encoder: the name
    says reranker), ``late-interaction`` (ColBERT) or ``dense``; read from the name, the
    project's rule (Zeng et al. group their models by family in Table 1).

    Example:
        >>> [model_family(m) for m in ("bm25", "BAAI/bge-reranker-v2-m3", "colbertv2.0", "e5")]
        ['lexical', 'reranker', 'late-interaction', 'dense']
    """
    name = model.lower()
    if name == "bm25" or name.endswith("/bm25"):
        return "lexical"
    if "reranker" in name or "cross-encoder" in name:
        return "reranker"
    if "colbert" in name:
        return "late-interaction"
    return "dense"


def _table1(cells: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The datasets in order and Table 1's rows: per model and dataset the full set's cell, or
    the tiny sample's where the model has no full one."""
    datasets = list(dict.fromkeys(dataset_of(c["task"])[0] for c in cells))
    table: dict[str, dict[str, Any]] = {}
    for c in sorted(cells, key=lambda c: dataset_of(c["task"])[1] == "full"):
        dataset, subset = dataset_of(c["task"])
        row = table.setdefault(c["model"], {"model": c["model"], "tasks": {}})
        row["tasks"][dataset] = {
            "task": c["task"],
            "subset": subset,
            "per_position": c["per_position"],
            "psi": c["psi"],
            "psi_ci": c["ci"]["psi"],
            "mean": c["mean"],
        }  # a full set's cell, sorted last, replaces its tiny sample's
    for row in table.values():
        row["tasks"] = {d: row["tasks"][d] for d in datasets if d in row["tasks"]}
        psis = [cell["psi"] for cell in row["tasks"].values()]
        row["scored_on"] = list(row["tasks"])
        row["biased"] = bool(psis) and all(p is not None and p >= BIAS_THRESHOLD for p in psis)
    return datasets, table


def _fig3(cells: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per model and dataset scored on both the full set and its tiny sample, both curves."""
    curves: dict[tuple[str, str], dict[str, Any]] = {}
    for c in cells:
        dataset, subset = dataset_of(c["task"])
        curves.setdefault((c["model"], dataset), {})[subset] = c["per_position"]
    return [
        {"model": model, "dataset": dataset, "full": pair["full"], "tiny": pair["tiny"]}
        for (model, dataset), pair in curves.items()
        if set(pair) == {"full", "tiny"}
    ]


def _table4(profile: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """App. A.4's Table 4 from the study's segment profile at three segments: per sample and
    model the cosine with the begin, middle and end thirds."""
    rows = (profile or {}).get("rows", [])
    return [
        {"sample": r["sample"], "model": r["model"], "n_docs": r["n_docs"],
         **dict(zip(("begin", "middle", "end"), r["curve"], strict=True))}
        for r in rows
        if len(r["curve"]) == 3
    ]  # fmt: skip


def zeng_report(
    cells: Sequence[Mapping[str, Any]],
    *,
    task_statistics: Mapping[str, Mapping[str, Any]] | None = None,
    segment_profile: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Zeng et al.'s view (see the module docstring) of the position cells of ``report.json``
    (one per model and task; standard tasks left out), with Table 2 from ``task_statistics``
    (task name → its length statistics) and Table 4 from the report's ``segment_profile``.

    Example:
        >>> curve = {"begin": 0.8, "middle": 0.6, "end": 0.4}
        >>> cells = [{"task": t, "model": "m", "per_position": curve, "psi": 0.5,
        ...           "ci": {"psi": None}, "mean": 0.6} for t in ("A", "B", "B-tiny")]
        >>> r = zeng_report(cells)
        >>> r["table1"][0]["biased"], r["average_late_evidence_drop"]
        (True, {'A': 0.5, 'B': 0.5})
        >>> r["table1"][0]["tasks"]["B"]["subset"], [f["dataset"] for f in r["fig3"]]
        ('full', ['B'])
    """
    cells = [c for c in cells if not c.get("standard")]
    datasets, table = _table1(cells)
    drops = [
        {"model": row["model"], "task": dataset, "subset": cell["subset"],
         "drop": late_evidence_drop(cell["per_position"])}
        for row in table.values()
        for dataset, cell in row["tasks"].items()
    ]  # fmt: skip
    average, average_all = {}, {}
    for dataset in datasets:
        values = [d["drop"] for d in drops if d["task"] == dataset and d["drop"] is not None]
        average_all[dataset] = sum(values) / len(values) if values else None
        values = [
            d["drop"]
            for d in drops
            if d["task"] == dataset
            and d["drop"] is not None
            and model_family(d["model"]) in DROP_FAMILIES
        ]
        average[dataset] = sum(values) / len(values) if values else None
    return {
        "bias_threshold": BIAS_THRESHOLD,
        "table1": list(table.values()),
        "fig3": _fig3(cells),
        "table2": dict(task_statistics or {}),
        "table4": _table4(segment_profile),
        "late_evidence_drop": drops,
        "drop_families": list(DROP_FAMILIES),
        "average_late_evidence_drop": average,
        "average_late_evidence_drop_all_models": average_all,
        "printed_drop": {"value": PRINTED_DROP, "note": PRINTED_DROP_NOTE},
    }


def task_length_statistics(folders: Mapping[str, str | Path]) -> dict[str, dict[str, Any]]:
    """Table 2's statistics of each task folder (task name → folder), read from its files."""
    from hf_posbias.tasks.taskdata import PositionTaskData

    return {
        name: PositionTaskData.load(folder).length_statistics() for name, folder in folders.items()
    }


def add_zeng_to_report(
    report_dir: Path, task_folders: Mapping[str, str | Path] | None = None
) -> dict[str, Any]:
    """Add the view to a written report: ``report.json``'s ``zeng2025``, its section of
    ``report.md`` and Fig. 3's figure; ``task_folders`` (task name → folder) gives Table 2."""
    from hf_posbias.rows.readers import read_json
    from hf_posbias.shards import write_json, write_text_atomic

    target = report_dir / "report.json"
    data = read_json(target)
    view = zeng_report(
        data["cells"],
        task_statistics=task_length_statistics(task_folders or {}),
        segment_profile=data.get("analyses", {}).get("segment_profile"),
    )
    write_json(target, {**data, "zeng2025": view})
    figure = plot_full_vs_tiny(view["fig3"], report_dir / FIG3_FILE) if view["fig3"] else None
    markdown = report_dir / "report.md"
    write_text_atomic(markdown, markdown.read_text() + zeng_markdown(view, figure))
    return view


FIG3_FILE = "zeng-fig3-full-vs-tiny.png"


def plot_full_vs_tiny(rows: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """Zeng et al. Fig. 3: a panel per dataset, per model nDCG@10 by bucket on the full set
    (solid) and its tiny sample (dashed)."""
    from matplotlib.figure import Figure

    from hf_posbias.figures import save_figure

    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig = Figure(figsize=(5.2 * len(datasets), 3.6), dpi=100)
    for index, dataset in enumerate(datasets):
        ax = fig.add_subplot(1, len(datasets), index + 1)
        for r in (r for r in rows if r["dataset"] == dataset):
            buckets = list(r["full"])
            (line,) = ax.plot(buckets, [r["full"][b] for b in buckets], marker="o",
                              label=f"{r['model']} full")  # fmt: skip
            ax.plot(buckets, [r["tiny"].get(b) for b in buckets], marker="s", linestyle="--",
                    color=line.get_color(), label=f"{r['model']} tiny")  # fmt: skip
        ax.set_title(dataset)
        ax.set_ylabel("nDCG@10")
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle("Full vs Tiny (Zeng et al. Fig. 3)")
    return save_figure(fig, path, tight_layout=True)


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def zeng_markdown(report: Mapping[str, Any], figure: Path | None = None) -> str:
    """Table 1 (a row per model: nDCG@10 per bucket and PSI per dataset, the bias mark), Table 2,
    Fig. 3, Table 4 and the late-evidence drop, as a section of ``report.md``."""
    from hf_posbias.tables import as_table

    rows = []
    for row in report["table1"]:
        line: dict[str, Any] = {"model": row["model"]}
        for dataset, cell in row["tasks"].items():
            tiny = " (tiny)" if cell["subset"] == "tiny" else ""
            for bucket, value in cell["per_position"].items():
                line[f"{dataset} {bucket}"] = f"{value:.3f}{tiny}"
            line[f"{dataset} PSI"] = _fmt(cell["psi"]) + tiny
        line[f"biased (PSI ≥ {report['bias_threshold']} on all)"] = "✗" if row["biased"] else ""
        rows.append(line)
    parts = [
        "",
        "## Zeng et al. (2025) Table 1: nDCG@10 per bucket and PSI per model",
        "",
        "(tiny): scored on the dataset's tiny sample, as Zeng et al. score ColBERT-style models "
        "and rerankers (§4.1).",
        "",
        as_table(rows).to_markdown(),
    ]
    if report["table2"]:
        stats = report["table2"]
        table2: dict[str, dict[str, Any]] = {}
        for task, s in stats.items():
            column = {
                "# queries": s["n_queries"],
                "mean query length": _fmt(s["query_words"].get("mean"), ".2f"),
                "std query length": _fmt(s["query_words"].get("std"), ".2f"),
                "# passages": s["n_passages"],
                **{f"{k} passage length": _fmt(s["passage_words"].get(k), ".2f")
                   for k in ("min", "max", "mean", "std")},
                **{f"bucket {b}": n for b, n in s["buckets"].items()},
            }  # fmt: skip
            for key, value in column.items():
                table2.setdefault(key, {})[task] = value
        parts += ["", "## Zeng et al. Table 2: the datasets (lengths in words)", ""]
        parts += [as_table(table2, index_name="").to_markdown()]
    if report["fig3"]:
        parts += ["", "## Zeng et al. Fig. 3: Full vs Tiny, nDCG@10 per bucket", ""]
        fig3 = [
            {"model": r["model"], "dataset": r["dataset"], "bucket": b,
             "full": _fmt(r["full"][b]), "tiny": _fmt(r["tiny"].get(b))}
            for r in report["fig3"]
            for b in r["full"]
        ]  # fmt: skip
        parts += [as_table(fig3).to_markdown()]
        if figure is not None:
            parts += ["", f"![Full vs Tiny]({figure.name})"]
    if report["table4"]:
        parts += [
            "",
            "## Zeng et al. Table 4 (App. A.4): cosine of the passage with its thirds",
            "",
        ]
        table4 = [
            {"sample": r["sample"], "model": r["model"], "passages": r["n_docs"],
             "full & begin": _fmt(r["begin"], ".4f"), "full & middle": _fmt(r["middle"], ".4f"),
             "full & end": _fmt(r["end"], ".4f")}
            for r in report["table4"]
        ]  # fmt: skip
        parts += [as_table(table4).to_markdown()]
    drops = [
        {"model": d["model"], "dataset": d["task"],
         "late-evidence drop": "n/a" if d["drop"] is None else f"{d['drop']:.1%}"}
        for d in report["late_evidence_drop"]
    ]  # fmt: skip
    average = ", ".join(
        f"{task} {'n/a' if v is None else f'{v:.1%}'}"
        for task, v in report["average_late_evidence_drop"].items()
    )
    parts += [
        "",
        "## Late-evidence drop: 1 − mean(nDCG@10 of the last third of the buckets) / "
        "nDCG@10 of the first bucket",
        "",
        f"Average over the dense and late-interaction models: {average}.",
        "",
        report["printed_drop"]["note"],
        "",
        as_table(drops).to_markdown(),
        "",
    ]
    return "\n".join(parts)
