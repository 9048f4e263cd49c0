"""Training-data transitions (Q26 Fig. 3): input position × target rank, before and after
augmentation.

For every row of a listwise training set (``listwise convert``, ``build-train`` or ``augment``
output), the passage at input position i (1-based) has target rank r: the k×k matrix counts
these (i → r) transitions over the rows. Training data whose input order already follows the
target (a first stage's order labelled by a teacher) puts its mass near the diagonal, which is
the shortcut a model learns as position bias; Pos-Aug (``--augmentation pos-aug --groups n``)
rotates every passage through every group slot, and the matrix flattens towards uniform.

Each panel reports its ``counts``, row-normalised ``frequency`` P(r | i), ``diagonal_mass``
(share of i = r transitions; 1/k for uniform) and ``tv_from_uniform`` (mean over input
positions of the total variation distance between P(· | i) and uniform: 0 = no position
information left).

Example:
    >>> rows = [{"doc_ids": ["a", "b"], "target": ["a", "b"]},
    ...         {"doc_ids": ["b", "a"], "target": ["a", "b"]}]
    >>> target_transition_counts(rows).tolist()
    [[1, 1], [1, 1]]
    >>> transition_summary(target_transition_counts(rows[:1]))["diagonal_mass"]
    1.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hf_posbias.errors import InputError

TRANSITIONS_FILE = "transitions.json"
TRANSITIONS_FIGURE = "transitions.png"


def target_transition_counts(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """k×k counts: row i = input position, column r = target rank (0-based indices), over
    training rows of one window size
    (:func:`~hf_posbias.listwise.experiments.propensity.transition_counts` of their ``doc_ids``
    and ``target``)."""
    from hf_posbias.listwise.experiments.propensity import transition_counts

    if not rows:
        raise InputError("the training set has no rows: no transitions to count")
    k = len(rows[0]["doc_ids"])
    for n, row in enumerate(rows):
        if len(row["doc_ids"]) != k:
            raise InputError(
                f"row {n} has {len(row['doc_ids'])} passages, row 0 has {k}: the transition "
                "matrix needs one window size"
            )
    return transition_counts(rows, k, given="doc_ids", output="target")


def transition_summary(counts: np.ndarray) -> dict[str, Any]:
    """A panel of ``transitions.json``: counts, P(r | i), diagonal mass, TV from uniform."""
    k = counts.shape[0]
    totals = counts.sum(axis=1, keepdims=True)
    frequency = counts / np.where(totals > 0, totals, 1)
    return {
        "rows": int(totals[0, 0]),
        "counts": counts.tolist(),
        "frequency": frequency.tolist(),
        "diagonal_mass": float(np.trace(counts) / counts.sum()),
        "tv_from_uniform": float(0.5 * np.abs(frequency - 1.0 / k).sum(axis=1).mean()),
    }


def transitions(
    rows: Sequence[Mapping[str, Any]], *, augmentation: str, groups: int, seed: int = 0
) -> dict[str, Any]:
    """The payload of ``transitions.json``: the ``original`` rows' panel and, unless
    ``augmentation`` is ``none``, the ``augmented`` rows' (``augment_rows`` with ``groups``)."""
    from hf_posbias.listwise.training.augment import augment_rows

    panels = {"original": transition_summary(target_transition_counts(rows))}
    if augmentation != "none":
        augmented = augment_rows(rows, groups, seed, method=augmentation)
        panels["augmented"] = transition_summary(target_transition_counts(augmented))
    return {
        "k": len(rows[0]["doc_ids"]),
        "augmentation": augmentation,
        "groups": groups,
        "seed": seed,
        **panels,
    }


def run_transitions(s: Any) -> tuple[dict[str, Any], Path]:
    """``posbias listwise transitions``
    (:class:`~hf_posbias.listwise.training.finetune_settings.TransitionsSettings`):
    ``transitions.json`` and ``transitions.png`` (one heatmap per panel) in ``s.out``; the payload
    and the folder."""
    from hf_posbias.figures import save_figure
    from hf_posbias.listwise.experiments.plots import heatmaps_figure
    from hf_posbias.listwise.training.trainset import read_train_set
    from hf_posbias.shards import write_json

    rows = read_train_set(s.data)
    payload = {"source": str(s.data), **transitions(rows, **_options(s))}
    out = Path(s.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / TRANSITIONS_FILE, payload)
    panels = {
        f"{name} ({payload[name]['rows']} rows)": payload[name]["frequency"]
        for name in ("original", "augmented")
        if name in payload
    }
    figure = heatmaps_figure(
        panels,
        title=f"training-data transitions, k={payload['k']} ({s.augmentation})",
        xlabel="target rank",
        ylabel="input position",
        colorbar="P(target rank | input position)",
    )
    save_figure(figure, out / TRANSITIONS_FIGURE)
    return payload, out


def _options(s: Any) -> dict[str, Any]:
    return {"augmentation": s.augmentation, "groups": s.groups, "seed": s.seed}
