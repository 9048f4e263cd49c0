"""The verify stage: candidates → scored pool, resumable and shardable.

:func:`run_verification` scores every candidate with a :class:`~hf_posbias.verification.panel.
RerankerPanel` through :func:`hf_posbias.shards.run_sharded`; the manifest pins the panel (members,
normalisations), δ and a fingerprint of the candidates, so a rerun resumes, a rerun that changes
only δ re-filters the stored margins without scoring (:func:`refilter_at_delta`), and a rerun with
other settings or other candidates is refused. :func:`load_scored_pool` reads a finished stage back.

Example:
    >>> import tempfile
    >>> from hf_posbias.verification.panel import parse_panel
    >>> from hf_posbias.verification.stage import run_verification
    >>> rows = [{"candidate_id": "d::end", "doc_id": "d", "length_bin": "256-512",
    ...          "target_position": "end", "query": "where do owls nest",
    ...          "segments": ["lions hunt", "fish swim", "owls nest in old trees"]}]
    >>> pool, report = run_verification(rows, parse_panel("bm25"), tempfile.mkdtemp(),
    ...                                  progress=False)
    >>> round(pool[0]["margin"], 2), report.retained
    (1.0, 1)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import read_parquet_rows
from hf_posbias.shards import (
    process_info,
    run_sharded,
    shard_path,
    shard_rows,
    write_json,
    write_parquet,
    write_shard,
)
from hf_posbias.verification.panel import RerankerPanel, check_candidate, check_delta
from hf_posbias.verification.report import DEFAULT_DELTA, VerificationReport

REPORT_FILE = "report.json"
SHARD_SIZE = 4096
"""Candidates per verify shard (the unit of resumption and of distribution)."""


def candidates_fingerprint(candidates: Sequence[dict[str, Any]]) -> str:
    """A hash of what verification reads from each candidate (id, target, query, segments).

    Example:
        >>> row = {"candidate_id": "d::end", "target_position": "end", "query": "q",
        ...        "segments": ["a", "b", "c"]}
        >>> candidates_fingerprint([row]) == candidates_fingerprint([dict(row)])
        True
    """
    digest = hashlib.sha256()
    for row in candidates:
        fields = [row["candidate_id"], row["target_position"], row["query"], list(row["segments"])]
        digest.update(json.dumps(fields, ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:16]


def run_verification(
    candidates: Sequence[dict[str, Any]],
    panel: RerankerPanel,
    out_dir: str | Path,
    *,
    delta: float = DEFAULT_DELTA,
    shard_size: int = SHARD_SIZE,
    progress: bool = True,
    overwrite: bool = False,
) -> tuple[Sequence[dict[str, Any]], VerificationReport]:
    """Score candidates with the panel, resumably, and return the scored pool and its report.

    Output rows are the candidate columns plus ``panel_scores`` (member × segment, normalised),
    ``member_margins``, ``margin`` and ``retained`` (``margin ≥ delta``), in input order (give
    the candidates in a deterministic order: it defines the shards). Shards and a manifest
    (panel members + normalisations, δ, candidates fingerprint) go to ``out_dir``; a rerun skips
    finished shards and does no scoring for them; a rerun of a finished stage at another δ only
    re-filters the stored margins; a rerun with other parameters is refused unless
    ``overwrite``. The report is also written to ``out_dir/report.json``; its
    ``pairs_total``/``pairs_scored`` count the shards this process scored in this call (0 on a
    complete resume).
    """
    return verify_candidates(
        candidates,
        panel,
        out_dir,
        delta=check_delta(delta, panel),
        shard_size=shard_size,
        progress=progress,
        overwrite=overwrite,
    )


def verify_candidates(
    candidates: Sequence[dict[str, Any]],
    panel: RerankerPanel,
    out_dir: str | Path,
    *,
    delta: float,
    shard_size: int = SHARD_SIZE,
    progress: bool = True,
    overwrite: bool = False,
    remote: Callable[[list[int]], None] | None = None,
) -> tuple[Sequence[dict[str, Any]], VerificationReport]:
    """:func:`run_verification` with δ already checked against ``panel`` once (by the settings
    of ``posbias data verify``/``build``). ``remote`` makes the missing shards elsewhere (each
    through :func:`verify_shard`, e.g. as executor units; see
    :func:`hf_posbias.shards.run_sharded`). The scored rows are returned read lazily from the
    shards: the stage holds one shard (and the candidates' ids) at a time."""
    if not candidates:
        raise InputError("no candidates to verify")
    # One pass over the candidates (a lazy file of any size): what is held is their ids.
    seen: set[str] = set()
    for row in candidates:
        check_candidate(row)
        if row["candidate_id"] in seen:
            raise InputError(f"candidate_id {row['candidate_id']!r} occurs more than once")
        seen.add(row["candidate_id"])
    del seen

    state = {"prepared": False, "pairs_total": 0, "pairs_scored": 0}

    def score_shard(shard: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not state["prepared"]:
            # Fitted lazily: a rerun with every shard done fits nothing and scores nothing.
            panel.prepare(candidates)
            state["prepared"] = True
        rows, result = scored_rows(panel, shard, delta, progress)
        state["pairs_total"] += result.pairs_total
        state["pairs_scored"] += result.pairs_scored
        return rows

    def run_remote(todo: list[int]) -> None:
        remote(todo)  # type: ignore[misc]
        for index in todo:  # the counts the shards' own scoring reported here
            total, scored = shard_pair_counts(read_parquet_rows(shard_path(out_dir, index)))
            state["pairs_total"] += total
            state["pairs_scored"] += scored

    params = {
        "stage": "verify",
        "panel": panel.describe(),
        "delta": float(delta),
        "candidates_fingerprint": candidates_fingerprint(candidates),
    }
    if not overwrite:
        refilter_at_delta(out_dir, {**params, "items": len(candidates), "shard_size": shard_size})
    rows = run_sharded(
        candidates,
        score_shard,
        out_dir,
        shard_size=shard_size,
        params=params,
        desc="verify",
        progress=progress,
        overwrite=overwrite,
        remote=run_remote if remote is not None else None,
        merge=False,
    )
    report = VerificationReport.from_rows(
        rows,
        delta=delta,
        members=panel.describe(),
        pairs_total=int(state["pairs_total"]),
        pairs_scored=int(state["pairs_scored"]),
    )
    if process_info().is_main:
        write_json(Path(out_dir) / REPORT_FILE, report.to_dict())
    return rows, report


def scored_rows(
    panel: RerankerPanel, shard: Sequence[dict[str, Any]], delta: float, progress: bool = False
) -> tuple[list[dict[str, Any]], Any]:
    """A verify shard's rows (each candidate with its panel scores, margins and ``retained``)
    and the panel's scores, from a panel already prepared on every candidate."""
    result = panel.score(shard, progress=progress)
    out = []
    for i, row in enumerate(shard):
        new = dict(row)
        new["segments"] = [str(x) for x in row["segments"]]
        new["panel_scores"] = [[float(x) for x in r] for r in result.normalized[i]]
        new["member_margins"] = [float(x) for x in result.member_margins[i]]
        new["margin"] = float(result.margin[i])
        new["retained"] = bool(result.margin[i] >= delta)
        out.append(new)
    return out, result


def shard_pair_counts(rows: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """``(pairs_total, pairs_scored)`` of a scored shard, as the panel counted them when it
    scored the shard: every (query, segment) pair, and the unique ones (each scored once).

    Example:
        >>> shard_pair_counts([{"query": "q", "segments": ["a", "b", "a"]}])
        (3, 2)
    """
    pairs = [(row["query"], str(seg)) for row in rows for seg in row["segments"]]
    return len(pairs), len(set(pairs))


def verify_shard(
    candidates_dir: str | Path,
    out_dir: str | Path,
    panel: str,
    normalization: str | None,
    trust_remote_code: bool,
    delta: float,
    shard_size: int,
    index: int,
) -> None:
    """Write shard ``index`` of a verify stage on a worker: the candidates are read from
    ``candidates_dir`` and the panel is built from its spec and prepared on all of them (as
    :func:`verify_candidates` does here), so the file equals a local run's.

    Example:
        >>> import tempfile
        >>> from hf_posbias.generation.base import Candidate
        >>> from hf_posbias.shards import shard_path, write_parquet
        >>> segments = ["lions hunt", "fish swim", "owls nest in old trees"]
        >>> row = Candidate("d::end", "d", "T", "256-512", "end", "where do owls nest",
        ...                 "".join(segments), segments).to_row()
        >>> cands, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> write_parquet([row], f"{cands}/candidates.parquet")
        >>> verify_shard(cands, out, "bm25", None, False, 0.3, 4096, 0)
        >>> shard_path(out, 0).is_file()
        True
    """
    from hf_posbias.generation.stage import candidate_rows
    from hf_posbias.verification.panel import parse_panel

    candidates = candidate_rows(candidates_dir)
    members = parse_panel(panel, normalization, trust_remote_code=trust_remote_code)
    members.prepare(candidates)
    write_shard(
        candidates, lambda shard: scored_rows(members, shard, delta)[0], out_dir, index, shard_size
    )


def refilter_at_delta(out_dir: str | Path, pinned: dict[str, Any]) -> bool:
    """Re-filter a finished scored pool at another δ without scoring anything again.

    When ``out_dir`` holds a finished verification whose pinned parameters differ from
    ``pinned`` in ``delta`` only (same panel, same candidates), every shard's ``retained`` is
    recomputed from its stored ``margin`` (``margin >= δ``) and the manifest is pinned to the
    new δ, so the caller's run finds every shard done. Returns whether it re-filtered.

    Example:
        >>> refilter_at_delta("/nonexistent/scored", {"delta": 0.3})
        False
    """
    from hf_posbias.shards import MANIFEST, fingerprint, read_manifest

    out = Path(out_dir)
    found = read_manifest(out)
    if found is None or not (out / REPORT_FILE).exists() or not process_info().is_main:
        return False
    old = dict(found.get("params") or {})
    if old == pinned or "delta" not in old or {**old, "delta": pinned.get("delta")} != pinned:
        return False
    delta = float(pinned["delta"])
    for path in sorted((out / "shards").glob("shard-*.parquet")):
        rows = read_parquet_rows(path)
        write_parquet([{**r, "retained": bool(r["margin"] >= delta)} for r in rows], path)
    write_json(out / MANIFEST, {"fingerprint": fingerprint(pinned), "params": pinned})
    return True


def load_scored_pool(folder: str | Path) -> Sequence[dict[str, Any]]:
    """The scored pool of a finished verify stage (every candidate with scores and margin),
    read lazily from its shards (:func:`hf_posbias.shards.shard_rows`).

    Example:
        >>> load_scored_pool("/nonexistent/scored")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: /nonexistent/scored has no finished verification: ...
    """
    folder = Path(folder)
    if not (folder / REPORT_FILE).exists():
        raise InputError(f"{folder} has no finished verification: run `posbias data verify` first")
    return shard_rows(folder)
