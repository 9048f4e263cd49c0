"""The one figure writer: every plot of the package is written as PNG by :func:`save_figure`.

A figure made with ``pyplot`` stays alive in pyplot's registry until it is closed, so a loop of
plots keeps every one in memory; :func:`save_figure` closes it once written. A bare
:class:`matplotlib.figure.Figure` (the analyses and the listwise experiments build those: no
``pyplot`` state, safe from the threads of a Gradio server) is in no registry, and ``pyplot``
is not imported for it. Matplotlib itself is imported by the code that draws, not here.

Example:
    >>> import tempfile
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(2, 2))
    >>> _ = fig.add_subplot(1, 1, 1).plot([1, 2], [3, 4])
    >>> save_figure(fig, f"{tempfile.mkdtemp()}/plots/line.png").read_bytes()[1:4]
    b'PNG'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save_figure(
    fig: Any, path: str | Path, *, tight_layout: bool = False, dpi: float | None = None
) -> Path:
    """Write ``fig`` as PNG (parent folders created), close it, and return the path.

    Args:
        fig: a matplotlib figure (``pyplot`` or bare).
        path: the PNG file.
        tight_layout: lay the figure out tightly first (for figures not laid out yet).
        dpi: resolution (``None``: the figure's own).
    """
    if tight_layout:
        fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=dpi)
    if getattr(fig.canvas, "manager", None) is not None:  # a pyplot figure
        import matplotlib.pyplot as plt

        plt.close(fig)
    return out
