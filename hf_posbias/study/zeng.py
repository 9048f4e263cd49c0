"""Zeng et al. (2025)'s view of an evaluation-only study: their Table 1 and the late-evidence drop.

An evaluation-only study (``train: false``, e.g. ``studies/zeng2025.yaml``) evaluates each base
as published on every task. Its report gains ``report.json``'s ``zeng2025``:

- ``table1``: per model, nDCG@10 per bucket and PSI on each task, and the bias mark: a model is
  marked position-biased when its PSI is at least :data:`BIAS_THRESHOLD` (0.03) on every task
  it was scored on (``scored_on``: colbertv2.0 has SQuAD-PosQ only);
- ``late_evidence_drop``: per model and task, how much of the score is lost when the evidence
  is late, ``1 − mean(nDCG@10 of the late buckets) / nDCG@10 of the first bucket``, the late
  buckets being the last third of the ordered buckets (SQuAD-PosQ: ``400-500`` and
  ``500-3120``; FineWeb-PosQ: ``end``; :func:`hf_posbias.study.direction.own_region`);
  ``average_late_evidence_drop`` averages it, per task, over the model families Zeng et al.
  average (their 15.6%: dense and late-interaction models, :data:`DROP_FAMILIES`), with
  ``average_late_evidence_drop_all_models`` (BM25 and rerankers included) beside it. The
  definition is the project's: Zeng et al. state the drop without its formula.

Example:
    >>> curve = {"0-100": 0.8, "100-200": 0.7, "200-300": 0.6, "300-400": 0.5,
    ...          "400-500": 0.45, "500-3120": 0.35}
    >>> round(late_evidence_drop(curve), 3)
    0.5
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

BIAS_THRESHOLD = 0.03
"""PSI at or above which a model gets Zeng et al.'s Table 1 bias mark, on every set it was scored
on (that a model scored on one set only can get it is the project's rule)."""

APP_A4_SAMPLES = {"SQuAD-PosQ": (10_000, 100, 512), "FineWeb-PosQ": (10_000, 200, 500)}
"""Zeng et al. App. A.4's representation sample per dataset as printed: (passages, minimum
words, maximum words) — SQuAD v2: 10,000 passages of 100–512 words; FineWeb: 10,000 of 200–500
(``analysis_limit``, ``analysis_min_words``, ``analysis_max_words`` of a study spec)."""


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


def zeng_report(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``table1``, ``late_evidence_drop`` and ``average_late_evidence_drop`` of the position
    cells of ``report.json`` (one per model and task; standard tasks left out).

    Example:
        >>> curve = {"begin": 0.8, "middle": 0.6, "end": 0.4}
        >>> cells = [{"task": t, "model": "m", "per_position": curve, "psi": 0.5,
        ...           "ci": {"psi": None}, "mean": 0.6} for t in ("A", "B")]
        >>> r = zeng_report(cells)
        >>> r["table1"][0]["biased"], r["average_late_evidence_drop"]
        (True, {'A': 0.5, 'B': 0.5})
    """
    cells = [c for c in cells if not c.get("standard")]
    tasks = list(dict.fromkeys(c["task"] for c in cells))
    table: dict[str, dict[str, Any]] = {}
    drops = []
    for c in cells:
        row = table.setdefault(c["model"], {"model": c["model"], "tasks": {}})
        row["tasks"][c["task"]] = {
            "per_position": c["per_position"],
            "psi": c["psi"],
            "psi_ci": c["ci"]["psi"],
            "mean": c["mean"],
        }
        drop = late_evidence_drop(c["per_position"])
        drops.append({"model": c["model"], "task": c["task"], "drop": drop})
    for row in table.values():
        psis = [row["tasks"][t]["psi"] for t in tasks if t in row["tasks"]]
        row["scored_on"] = [t for t in tasks if t in row["tasks"]]
        row["biased"] = bool(psis) and all(p is not None and p >= BIAS_THRESHOLD for p in psis)
    average, average_all = {}, {}
    for task in tasks:
        values = [d["drop"] for d in drops if d["task"] == task and d["drop"] is not None]
        average_all[task] = sum(values) / len(values) if values else None
        values = [
            d["drop"]
            for d in drops
            if d["task"] == task
            and d["drop"] is not None
            and model_family(d["model"]) in DROP_FAMILIES
        ]
        average[task] = sum(values) / len(values) if values else None
    return {
        "bias_threshold": BIAS_THRESHOLD,
        "table1": list(table.values()),
        "late_evidence_drop": drops,
        "drop_families": list(DROP_FAMILIES),
        "average_late_evidence_drop": average,
        "average_late_evidence_drop_all_models": average_all,
    }


def add_zeng_to_report(report_dir: Path) -> dict[str, Any]:
    """Add the view to a written report: ``report.json``'s ``zeng2025`` and its section of
    ``report.md``."""
    from hf_posbias.rows import read_json
    from hf_posbias.shards import write_json, write_text_atomic

    target = report_dir / "report.json"
    data = read_json(target)
    view = zeng_report(data["cells"])
    write_json(target, {**data, "zeng2025": view})
    markdown = report_dir / "report.md"
    write_text_atomic(markdown, markdown.read_text() + zeng_markdown(view))
    return view


def zeng_markdown(report: Mapping[str, Any]) -> str:
    """Table 1 (a row per model: nDCG@10 per bucket and PSI per task, the bias mark) and the
    late-evidence drop, as a section of ``report.md``."""
    from hf_posbias.tables import as_table

    rows = []
    for row in report["table1"]:
        line: dict[str, Any] = {"model": row["model"]}
        for task, cell in row["tasks"].items():
            for bucket, value in cell["per_position"].items():
                line[f"{task} {bucket}"] = f"{value:.3f}"
            line[f"{task} PSI"] = "n/a" if cell["psi"] is None else f"{cell['psi']:.3f}"
        line[f"biased (PSI ≥ {report['bias_threshold']} on all)"] = "✗" if row["biased"] else ""
        rows.append(line)
    drops = [
        {"model": d["model"], "task": d["task"],
         "late-evidence drop": "n/a" if d["drop"] is None else f"{d['drop']:.1%}"}
        for d in report["late_evidence_drop"]
    ]  # fmt: skip
    average = ", ".join(
        f"{task} {'n/a' if v is None else f'{v:.1%}'}"
        for task, v in report["average_late_evidence_drop"].items()
    )
    return "\n".join(
        [
            "",
            "## Zeng et al. (2025) Table 1: nDCG@10 per bucket and PSI per model",
            "",
            as_table(rows).to_markdown(),
            "",
            "## Late-evidence drop: 1 − mean(nDCG@10 of the last third of the buckets) / "
            "nDCG@10 of the first bucket",
            "",
            f"Average over the models: {average}.",
            "",
            as_table(drops).to_markdown(),
            "",
        ]
    )
