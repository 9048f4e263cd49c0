"""Matplotlib figures for the analyses: one line per model, mean with a shaded standard error.

Figures are built with :class:`matplotlib.figure.Figure` directly (no ``pyplot`` state), so they
are safe to create from the threads of a Gradio server; :func:`hf_posbias.figures.save_figure`
writes them.

Example:
    >>> from hf_posbias.analysis.plots import CurveSeries, curve_figure
    >>> fig = curve_figure([CurveSeries("m", (0.5, 0.6, 0.55), (0.01, 0.01, 0.01))], "demo")
    >>> len(fig.axes[0].lines)
    1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

__all__ = ["CurveSeries", "curve_figure"]

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class CurveSeries:
    """One model's curve over ``p1…pn``; ``stderr`` empty = no band."""

    label: str
    mean: tuple[float, ...]
    stderr: tuple[float, ...] = ()


def curve_figure(
    series: Sequence[CurveSeries],
    title: str,
    ylabel: str = "cosine",
    xlabel: str = "position",
    marker_index: int | None = None,
) -> Figure:
    """Cosine vs position, one line per series; ``marker_index`` draws a vertical marker there."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.0), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    for s in series:
        xs = list(range(1, len(s.mean) + 1))
        (line,) = ax.plot(xs, s.mean, marker="o", markersize=4, label=s.label)
        if s.stderr and any(s.stderr):
            low = [m - e for m, e in zip(s.mean, s.stderr)]
            high = [m + e for m, e in zip(s.mean, s.stderr)]
            ax.fill_between(xs, low, high, alpha=0.2, color=line.get_color())
        if marker_index is not None and 0 <= marker_index < len(s.mean):
            ax.plot(
                [marker_index + 1],
                [s.mean[marker_index]],
                marker="o",
                markersize=10,
                markerfacecolor="none",
                markeredgecolor=line.get_color(),
                markeredgewidth=2,
            )
    if series:
        n = len(series[0].mean)
        ax.set_xticks(list(range(1, n + 1)), [f"p{i}" for i in range(1, n + 1)])
    if marker_index is not None:
        ax.axvline(marker_index + 1, color="grey", linestyle="--", linewidth=1)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
