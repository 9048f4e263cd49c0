"""Where does the evidence sit? The distribution of evidence starts per task, a panel each.

Two scales, one per paper figure:

- ``relative`` (YHP26 Fig. 9): for every query of a task folder with a located evidence
  (``evidence_start >= 0``), ``evidence_start / doc_length``, in equal bins over [0, 1]; each
  panel draws the share of queries per bin, a dashed red line at the mean relative start and
  dotted grey lines at the begin/middle/end boundaries (1/3, 2/3);
- ``characters`` (Zeng et al. Fig. 2): the evidence's character start itself (SQuAD-PosQ's
  answer start), in equal bins from 0 to the largest start, with the mean likewise.

Tasks whose source gives only position labels (FineWeb-PosQ) have no offsets: they are skipped
and named in the returned summary, never silently.

Example:
    >>> import tempfile, os
    >>> from hf_posbias.tasks.builders.jsonl import build_from_records
    >>> from hf_posbias.evaluation.reports.evidence_plot import plot_evidence_distribution
    >>> tmp = tempfile.mkdtemp()
    >>> task = build_from_records([{"query": "q", "document": "x" * 10, "evidence_start": 2}],
    ...                           name="Toy").save(os.path.join(tmp, "toy"))
    >>> summary = plot_evidence_distribution([task], os.path.join(tmp, "fig.png"))
    >>> summary.counts["Toy"][:5], summary.means, summary.skipped
    ([0, 0, 0, 0, 1], {'Toy': 0.2}, [])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hf_posbias.errors import InputError
from hf_posbias.figures import save_figure
from hf_posbias.tasks.taskdata import PositionTaskData

Scale = Literal["relative", "characters"]
SCALES: tuple[str, ...] = ("relative", "characters")
THIRDS = (1 / 3, 2 / 3)
"""The begin/middle/end boundaries drawn on the relative scale (YHP26 Fig. 9's dotted lines)."""


@dataclass
class EvidencePlotSummary:
    """What was plotted: per task the bin counts (``bins`` equal bins over the scale's range),
    the mean evidence start (``means``, on the same scale), and the tasks skipped."""

    path: Path
    bins: int
    scale: str = "relative"
    counts: dict[str, list[int]] = field(default_factory=dict)
    means: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def relative_positions(data: PositionTaskData) -> list[float]:
    """``evidence_start / doc_length`` of every query with a located evidence."""
    return [
        min(max(q["evidence_start"] / q["doc_length"], 0.0), 1.0)
        for q in data.queries
        if q["evidence_start"] >= 0 and q["doc_length"] > 0
    ]


def character_starts(data: PositionTaskData) -> list[float]:
    """The character start of every query's located evidence."""
    return [float(q["evidence_start"]) for q in data.queries if q["evidence_start"] >= 0]


def plot_evidence_distribution(
    tasks: Sequence[str | Path],
    out: str | Path,
    bins: int = 20,
    title: str = "Where the evidence starts",
    scale: Scale = "relative",
) -> EvidencePlotSummary:
    """Write a PNG with a panel per task folder; returns the counts and means plotted.

    Args:
        tasks: task folders written by the builders.
        out: PNG path.
        bins: number of equal bins.
        title: figure title.
        scale: ``relative`` (start / document length, YHP26 Fig. 9) or ``characters`` (the
            character start, Zeng et al. Fig. 2).
    """
    if bins < 1:
        raise InputError(f"bins must be >= 1, got {bins}")
    if scale not in SCALES:
        raise InputError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    if not tasks:
        raise InputError("give at least one task folder")
    import numpy as np
    from matplotlib.figure import Figure

    summary = EvidencePlotSummary(path=Path(out), bins=bins, scale=scale)
    read = relative_positions if scale == "relative" else character_starts
    found: dict[str, list[float]] = {}
    for folder in tasks:
        data = PositionTaskData.load(folder)
        positions = read(data)
        if positions:
            found[data.info.name] = positions
        else:
            summary.skipped.append(data.info.name)
    if not found:
        raise InputError(
            "no task has evidence offsets to plot (label-only sources such as FineWeb-PosQ "
            f"cannot be placed): {', '.join(summary.skipped)}"
        )
    ncols = min(len(found), 2)
    nrows = -(-len(found) // ncols)
    fig = Figure(figsize=(5.2 * ncols, 3.4 * nrows), dpi=120)
    for index, (name, positions) in enumerate(found.items()):
        top = 1.0 if scale == "relative" else max(max(positions), 1.0)
        edges = np.linspace(0.0, top, bins + 1)
        counts, _ = np.histogram(positions, bins=edges)
        mean = float(np.mean(positions))
        summary.counts[name] = [int(c) for c in counts]
        summary.means[name] = mean
        ax = fig.add_subplot(nrows, ncols, index + 1)
        ax.bar(edges[:-1], counts / counts.sum(), width=np.diff(edges), align="edge", alpha=0.7)
        ax.axvline(mean, color="red", linestyle="--", linewidth=1.2, label=f"mean {mean:.3g}")
        if scale == "relative":
            for third in THIRDS:
                ax.axvline(third, color="grey", linestyle=":", linewidth=1)
        ax.set_xlim(0, top)
        ax.set_title(f"{name} (n={len(positions)})", fontsize=9)
        ax.set_xlabel(
            "evidence start ÷ document length"
            if scale == "relative"
            else "evidence start (characters)"
        )
        ax.set_ylabel("share of queries")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    save_figure(fig, summary.path, tight_layout=True)
    return summary
