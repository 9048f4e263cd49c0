"""Position-aware augmentation (Pos-Aug, Q26 §4.2) and its RandAug ablation.

Each training row becomes n rows: shuffle the row's passages (seeded Fisher–Yates), split them
into n equal groups, and rotate the groups — rotation r puts group r first, then r+1, … — so that
across the n rows of one source every passage sits in every group slot exactly once. The target
ranking (document ids) is unchanged; only the input order moves, so a model trained on the rows
sees each passage's relevance decoupled from its input position. Rows gain ``source_id`` and
``rotation``. RandAug (:func:`rand_aug`, Q26's ablation) makes n independent random shuffles
instead, with no guarantee that a passage visits every slot.

Example:
    >>> row = {"query_id": "q", "query": "?", "doc_ids": ["a", "b", "c", "d"],
    ...        "passages": ["A", "B", "C", "D"], "target": ["d", "c", "b", "a"]}
    >>> rows = pos_aug(row, 2, seed=0, source_id="q:0")
    >>> [r["rotation"] for r in rows], rows[0]["target"]
    ([0, 1], ['d', 'c', 'b', 'a'])
    >>> rows[0]["doc_ids"][:2] == rows[1]["doc_ids"][2:]
    True
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.training.finetune_settings import AUGMENTATIONS


def check_groups(k: int, groups: int, *, flag: str = "--groups", where: str = "") -> None:
    """``groups`` must be ≥ 1 and divide the window size k; errors name ``flag`` (the option
    the user set) and ``where`` the window is.

    Example:
        >>> check_groups(20, 3, where=" of row 7")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --groups 3 does not divide the window size k=20 of row 7
    """
    if groups < 1:
        raise InputError(f"{flag} must be at least 1, got {groups}")
    if k % groups:
        raise InputError(f"{flag} {groups} does not divide the window size k={k}{where}")


def pos_aug(row: dict[str, Any], groups: int, *, seed: int, source_id: str) -> list[dict[str, Any]]:
    """The ``groups`` rotated permutations of one row (see the module docstring)."""
    k = len(row["doc_ids"])
    check_groups(k, groups)
    order = list(range(k))
    random.Random(f"{seed}:{source_id}").shuffle(order)  # random.shuffle is Fisher–Yates
    size = k // groups
    parts = [order[g * size : (g + 1) * size] for g in range(groups)]
    return [
        reordered(
            row,
            [i for part in parts[rotation:] + parts[:rotation] for i in part],
            source_id=source_id,
            rotation=rotation,
        )
        for rotation in range(groups)
    ]


def reordered(row: dict[str, Any], index: Sequence[int], **tags: Any) -> dict[str, Any]:
    """``row`` with its passages in the input order ``index`` (target unchanged) plus ``tags``.

    Example:
        >>> reordered({"doc_ids": ["a", "b"], "passages": ["A", "B"], "target": ["b", "a"]},
        ...           [1, 0], shuffle=0)
        {'target': ['b', 'a'], 'doc_ids': ['b', 'a'], 'passages': ['B', 'A'], 'shuffle': 0}
    """
    return {
        **{key: value for key, value in row.items() if key not in ("doc_ids", "passages")},
        "doc_ids": [row["doc_ids"][i] for i in index],
        "passages": [row["passages"][i] for i in index],
        "target": list(row["target"]),
        **tags,
    }


def rand_aug(
    row: dict[str, Any], copies: int, *, seed: int, source_id: str
) -> list[dict[str, Any]]:
    """RandAug, Q26's ablation of Pos-Aug: ``copies`` independent seeded Fisher–Yates shuffles
    of the row's passages (no groups, no rotation: a passage may miss some slots and visit
    others twice); the target is unchanged. Rows gain ``source_id`` and ``shuffle``.

    Example:
        >>> row = {"query_id": "q", "query": "?", "doc_ids": ["a", "b", "c"],
        ...        "passages": ["A", "B", "C"], "target": ["c", "b", "a"]}
        >>> rows = rand_aug(row, 2, seed=0, source_id="q:0")
        >>> [sorted(r["doc_ids"]) for r in rows], [r["shuffle"] for r in rows]
        ([['a', 'b', 'c'], ['a', 'b', 'c']], [0, 1])
        >>> all(r["passages"] == [x.upper() for x in r["doc_ids"]] for r in rows)
        True
    """
    if copies < 1:
        raise InputError(f"RandAug needs at least 1 copy, got {copies}")
    out = []
    for copy in range(copies):
        index = list(range(len(row["doc_ids"])))
        random.Random(f"{seed}:{source_id}:rand:{copy}").shuffle(index)
        out.append(reordered(row, index, source_id=source_id, shuffle=copy))
    return out


def augment_rows(
    rows: Sequence[dict[str, Any]],
    groups: int,
    seed: int = 0,
    *,
    flag: str = "--groups",
    method: str = "pos-aug",
) -> list[dict[str, Any]]:
    """Pos-Aug (or, with ``method="rand-aug"``, RandAug) over a training set:
    ``len(rows) × groups`` rows, sources in input order.

    For Pos-Aug every row's window size must be divisible by ``groups`` (checked for all rows
    first; the error names ``flag``, the option the user set). ``source_id`` is
    ``"<query_id>:<row index>"``; ``method="none"`` returns the rows unchanged.
    """
    if method not in AUGMENTATIONS:
        raise InputError(f"unknown augmentation {method!r}: choose {', '.join(AUGMENTATIONS)}")
    if method == "none":
        return list(rows)
    if method == "pos-aug":
        for n, row in enumerate(rows):
            check_groups(len(row["doc_ids"]), groups, flag=flag, where=f" of row {n}")
    elif groups < 1:
        raise InputError(f"{flag} must be at least 1, got {groups}")
    augment = pos_aug if method == "pos-aug" else rand_aug
    out: list[dict[str, Any]] = []
    for n, row in enumerate(rows):
        out.extend(augment(row, groups, seed=seed, source_id=f"{row['query_id']}:{n}"))
    return out
