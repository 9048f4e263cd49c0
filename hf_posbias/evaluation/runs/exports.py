"""Per-query exports of an evaluation: the TREC run file and the per-query table.

- ``runs/<Task>.trec`` — the top-100 of every query in TREC format
  (``qid Q0 docid rank score run_name``; rank order = score descending, ties by document id
  descending, as trec_eval reads them; scores at full float precision, ``repr``, so re-sorting
  the file reproduces the ranking the toolkit scored), for ``trec_eval``, ``ranx`` or a
  re-ranking study;
- ``per_query/<Task>.parquet`` — one row per query and bucket it counts in: ``query_id,
  bucket, evidence_start, evidence_end, relative_position, doc_length, ndcg_at_10,
  first_relevant_rank``, the other metrics and (``posir``) ``length_stratum``. Averaging
  ``ndcg_at_10`` per bucket gives the summary's numbers exactly; re-slice it at will.

Example:
    >>> import tempfile, pathlib
    >>> from hf_posbias.evaluation.runs.exports import read_trec_run, write_trec_run
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.trec"
    >>> _ = write_trec_run({"q1": {"a": 0.5, "b": 0.9}}, path, "bm25")
    >>> path.read_text().splitlines()[0]
    'q1 Q0 b 1 0.9 bm25'
    >>> read_trec_run(path)
    {'q1': {'b': 0.9, 'a': 0.5}}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import read_parquet_rows
from hf_posbias.shards import write_parquet, write_text_atomic
from hf_posbias.tasks.position_scoring import ranked

RUN_DEPTH = 100
RUNS_DIRNAME = "runs"
PER_QUERY_DIRNAME = "per_query"


def safe_name(name: str) -> str:
    """A task or model name usable as a file name.

    Example:
        >>> safe_name("SciFact-Evidence (eng)")
        'SciFact-Evidence__eng_'
    """
    return re.sub(r"[^\w.-]", "_", name)


def write_trec_run(
    run: Mapping[str, Mapping[str, float]],
    path: str | Path,
    run_name: str,
    depth: int = RUN_DEPTH,
) -> Path:
    """Write the top-``depth`` of every query in TREC run format; returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tag = re.sub(r"\s+", "_", run_name) or "run"
    lines = []
    for qid in sorted(run):
        lines.extend(
            f"{qid} Q0 {doc} {rank} {float(score)!r} {tag}"
            for rank, (doc, score) in enumerate(ranked(run[qid])[:depth], start=1)
        )
    write_text_atomic(out, "\n".join(lines) + ("\n" if lines else ""))
    return out


def read_trec_run(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a TREC run file back into ``{query_id: {doc_id: score}}``."""
    run: dict[str, dict[str, float]] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise InputError(f"{path}:{number}: a TREC run line has 6 fields, got {len(parts)}")
        try:
            score = float(parts[4])
        except ValueError:
            raise InputError(f"{path}:{number}: score {parts[4]!r} is not a number") from None
        run.setdefault(parts[0], {})[parts[2]] = score
    return run


def write_per_query(rows: Sequence[Any], path: str | Path) -> Path:
    """Write per-query rows (:class:`~.position_scoring.QueryResult` or dicts) as parquet."""
    table = [row.to_row() if hasattr(row, "to_row") else dict(row) for row in rows]
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_parquet(table, out)
    return out


def read_per_query(path: str | Path) -> list[dict[str, Any]]:
    """Read a per-query table; a missing file is a one-line error."""
    target = Path(path)
    if not target.is_file():
        raise InputError(f"{target}: per-query table not found (rerun `posbias evaluate`)")
    return read_parquet_rows(target)


def per_bucket_from_table(
    rows: Sequence[Mapping[str, Any]], bucket: str = "bucket"
) -> dict[str, dict[str, float]]:
    """``{bucket: {query_id: nDCG@10}}`` out of a per-query table; ``bucket`` names the column
    that groups the rows (the listwise test's is ``position``).

    Example:
        >>> per_bucket_from_table([{"bucket": "a", "query_id": "q", "ndcg_at_10": 1.0}])
        {'a': {'q': 1.0}}
        >>> per_bucket_from_table([{"position": 3, "query_id": "q", "ndcg_at_10": 0.5}], "position")
        {'3': {'q': 0.5}}
    """
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        out.setdefault(str(row[bucket]), {})[str(row["query_id"])] = float(row["ndcg_at_10"])
    return out
