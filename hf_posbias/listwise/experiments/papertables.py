"""Q26's tables and curve overlays assembled from finished runs.

- :func:`shuffle_table` — Table 1 (and Tables 2–3, one row per reranker / first stage /
  variant): original vs shuffled nDCG@10 of ``posbias listwise shuffle-eval`` folders, one
  column per dataset plus the average over datasets, a dataset's cell marked ``†`` where the
  paired test (Q26: the paired t-test, p < 0.01) on the folder's ``per_query.jsonl`` finds
  shuffled ≠ original. Every cell is recomputed from the per-query files, and
  ``table.json`` keeps each cell's inputs (folder, queries, means, Δ, p) so it can be checked.
- :func:`curves_figure` — Fig. 4 / Fig. 6: the 1…k curves of several ``posbias listwise test``
  folders in one plot.

Example:
    >>> cell(0.512, 0.498, 0.004, 0.01)
    '51.2 / 49.8†'
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MARK = "†"
"""The significance mark of a cell (shuffled differs from original at level alpha)."""

DEFAULT_ALPHA = 0.01
"""Q26's significance level."""


def cell(original: float, shuffled: float, p_value: float | None, alpha: float) -> str:
    """``original / shuffled`` nDCG@10 ×100, marked where ``p_value < alpha``."""
    mark = MARK if p_value is not None and p_value < alpha else ""
    return f"{100 * original:.1f} / {100 * shuffled:.1f}{mark}"


def _read_shuffle_run(folder: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from hf_posbias.rows import read_json, read_rows

    path = Path(folder)
    missing = [n for n in ("shuffle_eval.json", "per_query.jsonl") if not (path / n).is_file()]
    if missing:
        raise InputError(
            f"{path} is not a posbias listwise shuffle-eval folder (no {', '.join(missing)})"
        )
    return read_json(path / "shuffle_eval.json"), read_rows(path / "per_query.jsonl")


def _row_label(summary: dict[str, Any]) -> str:
    stage = summary.get("first_stage")
    stage = " + ".join(stage) if isinstance(stage, list) else stage
    return f"{summary.get('reranker')} ({stage})"


def shuffle_table(
    folders: Sequence[str | Path],
    *,
    labels: Sequence[str] | None = None,
    method: str = "t-test",
    alpha: float = DEFAULT_ALPHA,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Table 1 from shuffle-eval folders (see the module docstring): the payload of
    ``table.json``. A row per label (default: ``reranker (first stage)``), a column per task;
    two folders of the same row and task are refused."""
    from hf_posbias.statistics.uncertainty import paired_comparison

    if not folders:
        raise InputError("no shuffle-eval folder given")
    if labels is not None and len(labels) != len(folders):
        raise InputError(f"{len(labels)} label(s) for {len(folders)} folder(s)")
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    tasks: list[str] = []
    for i, folder in enumerate(folders):
        summary, rows = _read_shuffle_run(folder)
        label = labels[i] if labels is not None else _row_label(summary)
        task = str(summary.get("task"))
        if task in cells.get(label, {}):
            raise InputError(f"{folder}: row {label!r} already has a run of task {task!r}")
        original = {str(r["query_id"]): float(r["original"]) for r in rows}
        shuffled = {str(r["query_id"]): float(r["shuffled"]) for r in rows}
        test = paired_comparison(
            {"all": original},
            {"all": shuffled},
            method=method,  # type: ignore[arg-type]
            n_resamples=n_resamples,
            seed=seed,
        ).buckets["all"]
        mean_o = sum(original.values()) / len(original)
        mean_s = sum(shuffled.values()) / len(shuffled)
        cells.setdefault(label, {})[task] = {
            "folder": str(folder),
            "queries": len(original),
            "original": mean_o,
            "shuffled": mean_s,
            "delta": test.delta,
            "p_value": test.p_value,
            "significant": bool(test.p_value < alpha),
        }
        if task not in tasks:
            tasks.append(task)
    table = []
    for label, by_task in cells.items():
        row: dict[str, Any] = {"": label}
        for task in tasks:
            c = by_task.get(task)
            row[task] = "" if c is None else cell(c["original"], c["shuffled"], c["p_value"], alpha)
        complete = all(task in by_task for task in tasks)
        average = {
            "original": sum(by_task[t]["original"] for t in tasks) / len(tasks),
            "shuffled": sum(by_task[t]["shuffled"] for t in tasks) / len(tasks),
        } if complete else None  # fmt: skip
        row["Average"] = "" if average is None else cell(**average, p_value=None, alpha=alpha)
        by_task["Average"] = average  # type: ignore[assignment]
        table.append(row)
    return {
        "test": method,
        "alpha": alpha,
        "mark": MARK,
        "caption": (
            f"nDCG@10 ×100, original / shuffled input order; {MARK}: paired {method} on the "
            f"per-query scores, p < {alpha}; Average: mean over the {len(tasks)} dataset(s)"
        ),
        "tasks": tasks,
        "table": table,
        "cells": cells,
    }


def curves_figure(folders: Sequence[str | Path], labels: Sequence[str] | None = None) -> Figure:
    """nDCG@10 against the relevant passage's input position for several ``listwise test``
    folders (their ``positions.json``), one line each with its CI band (Fig. 4 / Fig. 6)."""
    from matplotlib.figure import Figure

    from hf_posbias.rows import read_json

    if labels is not None and len(labels) != len(folders):
        raise InputError(f"{len(labels)} label(s) for {len(folders)} folder(s)")
    fig = Figure(figsize=(7.5, 4.5), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    for i, folder in enumerate(folders):
        path = Path(folder) / "positions.json"
        if not path.is_file():
            raise InputError(f"{folder} is not a posbias listwise test folder (no positions.json)")
        summary = read_json(path)
        points = summary["positions"]
        x = [int(p["position"]) for p in points]
        label = labels[i] if labels is not None else str(summary.get("reranker"))
        (line,) = ax.plot(x, [p["ndcg_at_10"] for p in points], marker="o", ms=3, label=label)
        ax.fill_between(
            x, [p["ci_low"] for p in points], [p["ci_high"] for p in points],
            alpha=0.12, color=line.get_color(),
        )  # fmt: skip
    ax.set_xlabel("input position of the relevant passage")
    ax.set_ylabel("nDCG@10")
    ax.set_ylim(0.0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
