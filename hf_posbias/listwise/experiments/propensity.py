"""Position propensities of a reranker (Q26 Eq. 5) and their checks for IPS training.

Shuffle each query's first-stage top-k n times (seeded Fisher–Yates), rerank every shuffle with
a reference reranker and count transitions (input position i → output position π):

    ω[i, π] = #(i → π) / (|Q| · k · n)

Rows are input positions, columns output positions, both 0-based; Σω = 1. ``smoothing`` α adds
α to every count before normalising, ``(#(i → π) + α) / (|Q|·k·n + α·k²)`` (α = 0: Eq. 5
exactly): a small estimate leaves cells empty, and the IPS weight 1/ω is then infinite.
``propensity.json`` holds ``{"k", "n", "queries", "omega", "smoothing", "counts", …}``;
``propensity.png`` is the heatmap.

:func:`load_propensity` reads such a file back for training and
:func:`check_propensity_support` refuses a matrix with zeros on cells the training data visits
(naming ``--smoothing``).

Example:
    >>> counts = transition_counts([{"input": ["a", "b"], "ranking": ["b", "a"]}], 2)
    >>> counts.tolist()
    [[0, 1], [1, 0]]
    >>> omega_from_counts(counts, 0.0).tolist()
    [[0.0, 0.5], [0.5, 0.0]]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.experiment_settings import PropensityConfig
from hf_posbias.listwise.experiments.lists import QueryList, describe_lists
from hf_posbias.listwise.experiments.lists import shuffled as shuffle_list
from hf_posbias.listwise.experiments.runs import ListwiseExperiment, fallback_stats, write_jsonl
from hf_posbias.rows.readers import read_json
from hf_posbias.settings import flag_name
from hf_posbias.shards import write_json


def transition_counts(
    rows: Iterable[Mapping[str, Any]], k: int, *, given: str = "input", output: str = "ranking"
) -> np.ndarray:
    """``counts[i, π]``: how often the passage at input position i came out at position π.

    ``row[given]`` is each row's input order and ``row[output]`` its output order, both of ``k``
    document ids: a reranker's ``input`` and ``ranking`` (Eq. 5), or a training row's
    ``doc_ids`` and ``target`` (input position × target rank,
    :func:`~hf_posbias.listwise.training.transitions.target_transition_counts`).
    """
    counts = np.zeros((k, k), dtype=np.int64)
    for row in rows:
        where = {d: i for i, d in enumerate(row[given])}
        if len(where) != k or len(row[output]) != k:
            raise InputError(f"a reranked list of query {row.get('query_id')!r} is not of k={k}")
        for out_pos, doc in enumerate(row[output]):
            counts[where[doc], out_pos] += 1
    return counts


def omega_from_counts(counts: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """Normalise transition counts into ω (Σω = 1), adding ``smoothing`` to every cell first.

    ``smoothing`` >= 0 is checked by
    :class:`~hf_posbias.listwise.experiments.experiment_settings.PropensityConfig`.
    """
    smoothed = counts.astype(np.float64) + smoothing
    total = smoothed.sum()
    if total <= 0:
        raise InputError("no transitions were counted: nothing to estimate")
    return smoothed / total


def check_smoothing_needed(omega: np.ndarray) -> int:
    """Number of empty cells (0 where 1/ω would be infinite)."""
    return int((omega <= 0).sum())


class Propensity(ListwiseExperiment[PropensityConfig, dict[str, Any]]):
    """The propensity estimate on the experiment runner; :func:`run_propensity` is its
    :meth:`~hf_posbias.listwise.experiments.runs.ListwiseExperiment.run`."""

    name = "propensity"

    def settings(self) -> dict[str, Any]:
        # Smoothing only changes the normalisation: it is not pinned, so one set of reranked
        # shuffles can be normalised with several α.
        return {"shuffles": self.config.shuffles}

    def inputs(self, query_list: QueryList) -> list[tuple[dict[str, Any], list[str]]]:
        return [
            (
                {"shuffle": j},
                shuffle_list(query_list.candidates, self.config.seed, query_list.query_id, j),
            )
            for j in range(self.config.shuffles)
        ]

    def report(self, lists: list[QueryList], rows: list[dict[str, Any]]) -> dict[str, Any]:
        config = self.config
        counts = transition_counts(rows, config.k)
        omega = omega_from_counts(counts, config.smoothing)
        payload = {
            "k": config.k,
            "n": config.shuffles,
            "queries": len(lists),
            "omega": omega.tolist(),
            "smoothing": config.smoothing,
            "counts": counts.tolist(),
            "diagonal_mass": float(np.trace(omega)),
            "empty_cells": check_smoothing_needed(omega),
            **self.facts(),
            "fallback": fallback_stats(rows).to_dict(),
            **{f"lists_{key}": value for key, value in describe_lists(lists).items()},
            "definition": "omega[i][p] = #(input position i -> output position p) / (|Q|*k*n), "
            "0-based; with smoothing a: (# + a) / (|Q|*k*n + a*k^2)",
        }
        write_jsonl(self.out / "rankings.jsonl", rows)
        write_json(self.out / "propensity.json", payload)
        _plot(payload, self.out / "propensity.png")
        return payload


run_propensity = Propensity.run
"""``run_propensity(reranker, task, out_dir, config, *, show_progress=True)``: estimate ω,
write ``propensity.json``, ``propensity.png`` and ``rankings.jsonl``, return the payload
(resumable: finished queries are kept in ``out_dir/shards/`` and skipped on a rerun)."""


def _plot(payload: dict[str, Any], path: Path) -> None:
    from hf_posbias.figures import save_figure
    from hf_posbias.listwise.experiments.plots import heatmap_figure

    fig = heatmap_figure(
        payload["omega"],
        f"{payload['reranker']}: ω over {payload['queries']} queries × {payload['n']} shuffles\n"
        f"diagonal mass {payload['diagonal_mass']:.3f}, smoothing {payload['smoothing']}",
    )
    save_figure(fig, path)


def load_propensity(path: str | Path, k: int | None = None) -> np.ndarray:
    """Read ω from ``propensity.json`` (or a JSON k×k list); check shape, values and Σω = 1.

    Example:
        >>> import json, tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "p.json")
        >>> _ = open(f, "w").write(json.dumps({"k": 2, "omega": [[0.5, 0.1], [0.1, 0.3]]}))
        >>> load_propensity(f, 2).shape
        (2, 2)
        >>> try:
        ...     load_propensity(f, 3)
        ... except InputError as err:
        ...     print(str(err).split(" but ")[1])
        the training windows hold 3 passages
    """
    path = Path(path)
    data = read_json(path)
    raw = data.get("omega") if isinstance(data, dict) else data
    try:
        omega = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{path}: 'omega' is not a numeric matrix") from None
    if omega.ndim != 2 or omega.shape[0] != omega.shape[1]:
        raise InputError(f"{path}: 'omega' must be a square k×k matrix, got shape {omega.shape}")
    if k is not None and omega.shape[0] != k:
        raise InputError(
            f"propensity matrix {path} is {omega.shape[0]}×{omega.shape[1]} but the training "
            f"windows hold {k} passages"
        )
    if not np.all(np.isfinite(omega)) or np.any(omega < 0):
        raise InputError(f"{path}: 'omega' must hold finite, non-negative numbers")
    if not np.isclose(omega.sum(), 1.0, atol=1e-6):
        raise InputError(f"{path}: 'omega' must sum to 1, sums to {omega.sum():.6f}")
    return omega


def check_propensity_support(
    omega: np.ndarray, target_ranks: Sequence[Sequence[int]], where: str = "the training data"
) -> None:
    """Refuse zeros on cells (input position i, target rank r_i) that the data visits.

    Example:
        >>> try:
        ...     check_propensity_support(np.array([[0.5, 0.0], [0.0, 0.5]]), [[1, 0]])
        ... except InputError as err:
        ...     print(str(err).split(": ")[-1])
        re-estimate it with --smoothing > 0
    """
    visited: set[tuple[int, int]] = set()
    k = omega.shape[0]
    for ranks in target_ranks:
        for i, r in enumerate(ranks):
            if r < 0:
                continue  # padding
            if i >= k or r >= k:
                raise InputError(f"{where} has a window larger than the {k}×{k} propensity matrix")
            visited.add((i, int(r)))
    empty = sorted(cell for cell in visited if omega[cell] <= 0)
    if empty:
        i, r = empty[0]
        raise InputError(
            f"the propensity matrix is 0 on {len(empty)} cell(s) {where} visits "
            f"(first: input {i} -> output {r}): re-estimate it with {flag_name('smoothing')} > 0"
        )
