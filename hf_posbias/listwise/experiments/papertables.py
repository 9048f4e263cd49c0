"""Q26's tables and curve overlays assembled from finished runs.

- :func:`shuffle_table` — Table 1 (and Tables 2–3, one row per reranker / first stage /
  variant): original vs shuffled nDCG@10 of ``posbias listwise shuffle-eval`` folders, one
  column per dataset plus the average over datasets, a dataset's cell marked ``*`` where the
  paired test (the paired t-test, p < 0.01, as Q26 tests) on the folder's ``per_query.jsonl``
  finds shuffled ≠ original (the project's within-reranker test), and each number marked as
  Q26's Table 1 marks it where ``baselines`` name rows (``†``: differs from First, ``‡``: from
  RankZephyr, the same paired test over the queries both rows scored). Every cell is
  recomputed from the per-query files, and ``table.json`` keeps each cell's inputs (folder,
  queries, means, Δ, p, the p against each baseline) so it can be checked.
- :func:`first_stage_table` — Table 2's first-stage rows: each first stage's own nDCG@10.
- :func:`curves_figure` — Fig. 4 / Fig. 6: the 1…k curves of several ``posbias listwise test``
  folders in one plot.

Example:
    >>> cell(0.512, 0.498, 0.004, 0.01)
    '51.2 / 49.8*'
    >>> cell(0.524, 0.520, 0.5, 0.01, marks=("†", "†‡"))
    '52.4† / 52.0†‡'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MARK = "*"
"""The project's mark of a cell: shuffled differs from original at level alpha (Q26's † and ‡
mean "differs from First / RankZephyr": see ``baselines`` of :func:`shuffle_table`)."""

DEFAULT_ALPHA = 0.01
"""Q26's significance level."""


def cell(
    original: float,
    shuffled: float,
    p_value: float | None,
    alpha: float,
    marks: tuple[str, str] = ("", ""),
) -> str:
    """``original / shuffled`` nDCG@10 ×100, each followed by its baseline ``marks``, the cell
    by :data:`MARK` where ``p_value < alpha``."""
    mark = MARK if p_value is not None and p_value < alpha else ""
    return f"{100 * original:.1f}{marks[0]} / {100 * shuffled:.1f}{marks[1]}{mark}"


def _against_baselines(
    cells: dict[str, dict[str, dict[str, Any]]],
    scores: dict[tuple[str, str], dict[str, dict[str, float]]],
    baselines: Mapping[str, str],
    *,
    method: str,
    alpha: float,
    n_resamples: int,
    seed: int,
) -> None:
    """Add to every cell its paired test against each baseline row (mark → label) of the same
    task, on the original and on the shuffled scores of the queries both rows scored."""
    from hf_posbias.statistics.uncertainty import paired_comparison

    for label, by_task in cells.items():
        for task, c in by_task.items():
            c["marks"] = ["", ""]
            c["vs"] = {}
            for mark, base in baselines.items():
                if base == label or (base, task) not in scores:
                    continue
                p_values = []
                for side in ("original", "shuffled"):
                    ours, theirs = scores[(label, task)][side], scores[(base, task)][side]
                    common = sorted(set(ours) & set(theirs))
                    test = paired_comparison(
                        {"all": {q: theirs[q] for q in common}},
                        {"all": {q: ours[q] for q in common}},
                        method=method,  # type: ignore[arg-type]
                        n_resamples=n_resamples,
                        seed=seed,
                    ).buckets["all"]
                    p_values.append(test.p_value)
                for i, p in enumerate(p_values):
                    if p < alpha:
                        c["marks"][i] += mark
                c["vs"][base] = {"mark": mark, "p_original": p_values[0], "p_shuffled": p_values[1]}


def _read_shuffle_run(folder: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from hf_posbias.rows.readers import read_json, read_rows

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
    baselines: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Table 1 from shuffle-eval folders (see the module docstring): the payload of
    ``table.json``. A row per label (default: ``reranker (first stage)``), a column per task;
    two folders of the same row and task are refused. ``baselines`` maps a mark to a row label
    (Q26: ``{"†": "first", "‡": "rankzephyr"}``)."""
    from hf_posbias.statistics.uncertainty import paired_comparison

    if not folders:
        raise InputError("no shuffle-eval folder given")
    if labels is not None and len(labels) != len(folders):
        raise InputError(f"{len(labels)} label(s) for {len(folders)} folder(s)")
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    scores: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    tasks: list[str] = []
    for i, folder in enumerate(folders):
        summary, rows = _read_shuffle_run(folder)
        label = labels[i] if labels is not None else _row_label(summary)
        task = str(summary.get("task"))
        if task in cells.get(label, {}):
            raise InputError(f"{folder}: row {label!r} already has a run of task {task!r}")
        original = {str(r["query_id"]): float(r["original"]) for r in rows}
        shuffled = {str(r["query_id"]): float(r["shuffled"]) for r in rows}
        scores[(label, task)] = {"original": original, "shuffled": shuffled}
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
    if baselines:
        _against_baselines(
            cells, scores, baselines,
            method=method, alpha=alpha, n_resamples=n_resamples, seed=seed,
        )  # fmt: skip
    table = []
    for label, by_task in cells.items():
        row: dict[str, Any] = {"": label}
        for task in tasks:
            c = by_task.get(task)
            row[task] = "" if c is None else cell(
                c["original"], c["shuffled"], c["p_value"], alpha, tuple(c.get("marks", ("", "")))
            )  # fmt: skip
        complete = all(task in by_task for task in tasks)
        average = {
            "original": sum(by_task[t]["original"] for t in tasks) / len(tasks),
            "shuffled": sum(by_task[t]["shuffled"] for t in tasks) / len(tasks),
        } if complete else None  # fmt: skip
        row["Average"] = "" if average is None else cell(**average, p_value=None, alpha=alpha)
        by_task["Average"] = average  # type: ignore[assignment]
        table.append(row)
    against = "".join(
        f"; {mark}: differs from {base} (paired {method}, p < {alpha})"
        for mark, base in (baselines or {}).items()
    )
    return {
        "test": method,
        "alpha": alpha,
        "mark": MARK,
        "baselines": dict(baselines or {}),
        "caption": (
            f"nDCG@10 ×100, original / shuffled input order; {MARK}: shuffled differs from "
            f"original, paired {method} on the per-query scores, p < {alpha}{against}; "
            f"Average: mean over the {len(tasks)} dataset(s)"
        ),
        "tasks": tasks,
        "table": table,
        "cells": cells,
    }


def first_stage_table(folders: Sequence[str | Path], labels: Sequence[str]) -> dict[str, Any]:
    """Q26 Table 2's first-stage rows from first-stage folders (a listwise study's
    ``first-stage/<dataset>/<stage>``: ``first_stage_eval.json``, ``per_query.jsonl``): a row per
    label, nDCG@10 ×100 of the first stage's own order per dataset (recomputed from the per-query
    file) and the average over datasets; ``cells`` keeps each cell's folder, queries and k."""
    from hf_posbias.listwise.experiments.firststage_eval import EVAL_FILE
    from hf_posbias.rows.readers import read_json, read_rows

    if len(labels) != len(folders):
        raise InputError(f"{len(labels)} label(s) for {len(folders)} folder(s)")
    cells: dict[str, dict[str, Any]] = {}
    tasks: list[str] = []
    for folder, label in zip(folders, labels):
        path = Path(folder)
        if not (path / EVAL_FILE).is_file():
            raise InputError(f"{path} is not a first-stage folder (no {EVAL_FILE})")
        summary = read_json(path / EVAL_FILE)
        scores = [float(r["ndcg_at_10"]) for r in read_rows(path / "per_query.jsonl")]
        task = str(summary["task"])
        cells.setdefault(label, {})[task] = {
            "folder": str(path),
            "queries": len(scores),
            "k": summary["k"],
            "ndcg_at_10": sum(scores) / len(scores),
        }
        if task not in tasks:
            tasks.append(task)
    table = []
    for label, by_task in cells.items():
        row: dict[str, Any] = {"": label}
        row |= {t: f"{100 * by_task[t]['ndcg_at_10']:.1f}" if t in by_task else "" for t in tasks}
        complete = all(t in by_task for t in tasks)
        average = sum(by_task[t]["ndcg_at_10"] for t in tasks) / len(tasks) if complete else None
        row["Average"] = "" if average is None else f"{100 * average:.1f}"
        by_task["Average"] = average
        table.append(row)
    return {
        "caption": (
            "nDCG@10 ×100 of each first stage's own order (its top k, no reranking); Average: "
            f"mean over the {len(tasks)} dataset(s)"
        ),
        "tasks": tasks,
        "table": table,
        "cells": cells,
    }


def curves_figure(folders: Sequence[str | Path], labels: Sequence[str] | None = None) -> Figure:
    """nDCG@10 against the relevant passage's input position for several ``listwise test``
    folders (their ``positions.json``), one line each with its CI band (Fig. 4 / Fig. 6)."""
    from matplotlib.figure import Figure

    from hf_posbias.rows.readers import read_json

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
