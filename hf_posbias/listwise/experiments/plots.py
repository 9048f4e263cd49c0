"""Figures of the listwise experiments: nDCG@10 per input position, the propensity heatmap.

Built on :class:`matplotlib.figure.Figure` directly (no ``pyplot`` state) and written with the
package's one figure writer, :func:`hf_posbias.figures.save_figure`.

Example:
    >>> fig = positions_figure([1, 2], [0.5, 0.4], [0.4, 0.3], [0.6, 0.5], "demo")
    >>> len(fig.axes[0].lines)
    1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def positions_figure(
    positions: Sequence[int],
    ndcg: Sequence[float],
    low: Sequence[float],
    high: Sequence[float],
    title: str,
    band_label: str = "95% CI",
) -> Figure:
    """nDCG@10 against the relevant passage's input position, with the CI as a band."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.0), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    (line,) = ax.plot(list(positions), list(ndcg), marker="o", markersize=4, label="nDCG@10")
    ax.fill_between(
        list(positions),
        list(low),
        list(high),
        alpha=0.2,
        color=line.get_color(),
        label=band_label if positions else None,
    )
    ax.set_xticks(list(positions))
    ax.set_xlabel("input position of the relevant passage")
    ax.set_ylabel("nDCG@10")
    ax.set_ylim(0.0, 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def heatmap_figure(omega: Sequence[Sequence[float]], title: str, label: str = "ω") -> Figure:
    """The k×k propensity matrix (or any k×k function of it, named by ``label``, e.g. 1/ω):
    rows = input position, columns = output position (1-based)."""
    from matplotlib.figure import Figure

    k = len(omega)
    fig = Figure(figsize=(6.0, 5.0), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow(omega, cmap="viridis", origin="upper", aspect="equal")
    ticks = list(range(0, k, max(1, k // 10)))
    ax.set_xticks(ticks, [str(t + 1) for t in ticks])
    ax.set_yticks(ticks, [str(t + 1) for t in ticks])
    ax.set_xlabel("output position")
    ax.set_ylabel("input position")
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, label=label)
    fig.tight_layout()
    return fig


def heatmaps_figure(
    panels: Mapping[str, Sequence[Sequence[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    colorbar: str,
) -> Figure:
    """k×k matrices side by side on one colour scale (1-based ticks), e.g. the training-data
    transitions before and after Pos-Aug (Q26 Fig. 3).

    Example:
        >>> fig = heatmaps_figure({"a": [[1, 0], [0, 1]], "b": [[.5, .5], [.5, .5]]},
        ...                       title="t", xlabel="x", ylabel="y", colorbar="c")
        >>> len(fig.axes)  # two panels and the colour bar
        3
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0 * len(panels) + 1.0, 5.0), dpi=100)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    vmax = max(max(max(row) for row in m) for m in panels.values())
    image = None
    for ax, (name, matrix) in zip(axes, panels.items()):
        k = len(matrix)
        image = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=vmax, aspect="equal")
        ticks = list(range(0, k, max(1, k // 10)))
        ax.set_xticks(ticks, [str(t + 1) for t in ticks])
        ax.set_yticks(ticks, [str(t + 1) for t in ticks])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(name, fontsize=10)
    fig.suptitle(title, fontsize=11)
    fig.colorbar(image, ax=list(axes), label=colorbar)
    return fig
