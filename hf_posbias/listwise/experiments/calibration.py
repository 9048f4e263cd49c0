"""Slot calibration (contextual calibration, Zhao et al. 2021) of a scoring listwise reranker.

A FIRST-scored reranker gives the passage at input slot i the identifier logit s_i. Part of s_i
belongs to the slot, not to the passage: the model's prior for writing identifier i first. The
prior is estimated from one window of *content-free* passages ("N/A", with the query "N/A"):
whatever the model prefers there, it prefers because of the slot. Calibrated scores are
``s_i − prior[i]``, ranked as before (ties by document id).

- **One forward pass per window shape** (the number of passages in a window), reused across
  queries: the prior depends only on the slot, not on the query.
- **From the same forward passes.** A controlled test records every window's scores; when each
  list is one window (k ≤ window, the 1…20 harness), the calibrated ranking of a row is computed
  from its recorded scores (:func:`calibrated_rows`), so calibration costs one window in all. A
  sliding window over a longer list would change which passages later windows hold, so
  ``--calibrate`` refuses k > window.
- **What calibrate means for each reranker.** FIRST (``kind`` ``first``): the identifier logits.
  The pointwise control (BM25, cross-encoders): its scores on the content-free window, the same
  text in every slot, hence the same score in every slot — subtracting a constant changes no
  ranking, so the control stays flat (a documented no-op, tested). Generated permutations
  (scores are ``k − rank``) and endpoints (top-n logprobs cut identifiers to −inf) have no
  per-slot logits: one-line error. A model whose identifiers are not single tokens is refused
  when it is loaded (:func:`~hf_posbias.rerankers.identifiers.identifier_token_ids`).

Example:
    >>> rows = [{"input": ["a", "b"], "ranking": ["a", "b"], "scores": [2.0, 1.5]}]
    >>> calibrated_rows(rows, {2: [1.0, 0.0]})[0]["ranking"]  # a: 2 − 1 = 1 < b: 1.5 − 0
    ['b', 'a']
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rerankers.base import ListwiseReranker
from hf_posbias.rerankers.records import Passage, order_by_score
from hf_posbias.settings import flag_name

CONTENT_FREE = "N/A"
"""The content-free text (query and every passage) of the calibration window."""
CALIBRATION_FILE = "calibration.json"
CALIBRATABLE_KINDS = ("first", "pointwise")
"""Reranker kinds with a score per input slot (FIRST logits, pointwise scores)."""


def check_calibratable(reranker: ListwiseReranker) -> None:
    """Refuse a reranker without per-slot scores (generation, endpoints) with one line.

    Example:
        >>> from hf_posbias.rerankers.loading import load_reranker
        >>> check_calibratable(load_reranker("bm25", corpus_texts=["a cat"]))  # no-op: flat
    """
    kind = reranker.describe().get("kind")
    if kind not in CALIBRATABLE_KINDS:
        raise InputError(
            f"{flag_name('calibrate')} needs a reranker that scores every input slot (FIRST "
            f"logits or a pointwise score); {reranker.name} is {kind!r}, whose scores are not "
            "per-slot logits"
        )


def content_free_window(size: int) -> tuple[str, list[Passage]]:
    """The calibration window of ``size`` slots: query and passages all ``"N/A"``.

    Example:
        >>> query, passages = content_free_window(3)
        >>> query, [p.text for p in passages], len({p.doc_id for p in passages})
        ('N/A', ['N/A', 'N/A', 'N/A'], 3)
    """
    return CONTENT_FREE, [Passage(f"content-free-{i}", CONTENT_FREE) for i in range(size)]


def estimate_slot_priors(
    reranker: ListwiseReranker, sizes: Iterable[int], out_dir: str | Path | None = None
) -> dict[str, Any]:
    """The per-slot prior for each window size (one forward pass each), cached in
    ``out_dir/calibration.json`` for the same reranker.

    Returns ``{"priors": {size: [prior of slot 1, …]}, "windows", "seconds", "content_free",
    "reranker"}`` (``windows`` and ``seconds``: the cost, measured when first estimated).
    """
    from hf_posbias.rows.readers import read_json
    from hf_posbias.shards import write_json

    check_calibratable(reranker)
    wanted = sorted({int(s) for s in sizes})
    details = reranker.describe()
    path = Path(out_dir) / CALIBRATION_FILE if out_dir is not None else None
    if path is not None and path.is_file():
        cached = read_json(path)
        if cached.get("reranker") == details and all(str(s) in cached["priors"] for s in wanted):
            return {**cached, "priors": {int(s): v for s, v in cached["priors"].items()}}
    started = time.perf_counter()
    answers = reranker.rank_windows([content_free_window(size) for size in wanted])
    payload = {
        "content_free": CONTENT_FREE,
        "priors": {size: [float(x) for x in a.scores] for size, a in zip(wanted, answers)},
        "windows": len(wanted),
        "seconds": round(time.perf_counter() - started, 3),
        "reranker": details,
    }
    if path is not None:
        write_json(path, {**payload, "priors": {str(s): v for s, v in payload["priors"].items()}})
    return payload


def calibrated_rows(
    rows: Sequence[dict[str, Any]], priors: dict[int, Sequence[float]]
) -> list[dict[str, Any]]:
    """Rows re-ranked by ``score − prior[slot]`` from their recorded scores (one window each).

    Each row needs ``input`` (doc ids in input order), ``ranking`` and ``scores`` (ranking
    order); the copy gets the calibrated ``ranking`` and ``scores``. A row that took more than
    one window (``windows`` > 1) is refused: its later windows depended on the uncalibrated
    ranking.
    """
    out = []
    for row in rows:
        if int(row.get("windows", 1)) > 1:
            raise InputError(
                "calibration from recorded scores needs one window per list "
                f"(k <= {flag_name('window')})"
            )
        doc_ids = list(row["input"])
        prior = priors.get(len(doc_ids))
        if prior is None:
            raise InputError(f"no slot prior for windows of {len(doc_ids)} passages")
        raw = dict(zip(row["ranking"], row["scores"]))
        scores = [float(raw[d]) - float(p) for d, p in zip(doc_ids, prior)]
        order = order_by_score(scores, doc_ids)
        out.append(
            {
                **row,
                "ranking": [doc_ids[i] for i in order],
                "scores": [scores[i] for i in order],
            }
        )
    return out
