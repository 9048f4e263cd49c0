"""Where does the evidence sit? Distribution of relative evidence positions per task (YHP26 Fig. 9).

For every query of a task folder with a located evidence (``evidence_start >= 0``), the relative
position is ``evidence_start / doc_length``; the plot draws one normalised histogram line per
task (share of queries per bin), so datasets of different sizes compare directly. Tasks whose
source gives only position labels (FineWeb-PosQ) have no offsets: they are skipped and named in
the returned summary, never silently.

Example:
    >>> import tempfile, os
    >>> from hf_posbias.tasks.builders.jsonl import build_from_records
    >>> from hf_posbias.evaluation.reports.evidence_plot import plot_evidence_distribution
    >>> tmp = tempfile.mkdtemp()
    >>> task = build_from_records([{"query": "q", "document": "x" * 10, "evidence_start": 2}],
    ...                           name="Toy").save(os.path.join(tmp, "toy"))
    >>> summary = plot_evidence_distribution([task], os.path.join(tmp, "fig.png"))
    >>> summary.counts["Toy"][:2], summary.skipped
    ([0, 0], [])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hf_posbias.errors import InputError
from hf_posbias.figures import save_figure
from hf_posbias.tasks.taskdata import PositionTaskData


@dataclass
class EvidencePlotSummary:
    """What was plotted: per-task bin counts (``bins`` equal bins over [0, 1]) and skips."""

    path: Path
    bins: int
    counts: dict[str, list[int]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def relative_positions(data: PositionTaskData) -> list[float]:
    """``evidence_start / doc_length`` of every query with a located evidence."""
    return [
        min(max(q["evidence_start"] / q["doc_length"], 0.0), 1.0)
        for q in data.queries
        if q["evidence_start"] >= 0 and q["doc_length"] > 0
    ]


def plot_evidence_distribution(
    tasks: Sequence[str | Path],
    out: str | Path,
    bins: int = 20,
    title: str = "Relative evidence position",
) -> EvidencePlotSummary:
    """Write a PNG with one histogram line per task folder; returns the counts plotted.

    Args:
        tasks: task folders written by the builders.
        out: PNG path.
        bins: number of equal bins over [0, 1].
        title: figure title.
    """
    if bins < 1:
        raise InputError(f"bins must be >= 1, got {bins}")
    if not tasks:
        raise InputError("give at least one task folder")
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on servers
    import matplotlib.pyplot as plt
    import numpy as np

    summary = EvidencePlotSummary(path=Path(out), bins=bins)
    edges = np.linspace(0.0, 1.0, bins + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    for folder in tasks:
        data = PositionTaskData.load(folder)
        positions = relative_positions(data)
        if not positions:
            summary.skipped.append(data.info.name)
            continue
        counts, _ = np.histogram(positions, bins=edges)
        summary.counts[data.info.name] = [int(c) for c in counts]
        ax.plot(
            centres,
            counts / counts.sum(),
            marker="o",
            markersize=3,
            label=f"{data.info.name} (n={len(positions)})",
        )
    if not summary.counts:
        plt.close(fig)
        raise InputError(
            "no task has evidence offsets to plot (label-only sources such as FineWeb-PosQ "
            f"cannot be placed): {', '.join(summary.skipped)}"
        )
    for third in (1 / 3, 2 / 3):
        ax.axvline(third, color="grey", linestyle=":", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_xlabel("relative position of the evidence start in its document")
    ax.set_ylabel("share of queries")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save_figure(fig, summary.path, tight_layout=True)
    return summary
