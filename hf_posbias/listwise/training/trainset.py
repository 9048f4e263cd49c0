"""Listwise training sets: the columns, reading/writing, ``build-train``, RankZephyr/FIRST data.

A listwise training set has one row per window::

    query_id  str         the query's id
    query     str         the query text
    doc_ids   list[str]   the window's documents in input order
    passages  list[str]   their texts, same order
    target    list[str]   the target ranking (document ids, best first)

(Pos-Aug rows add ``source_id`` and ``rotation``.) A training-set folder holds
``train.parquet`` and ``info.json`` (provenance and counts).

- :func:`build_train_rows` makes such a set from a task's split: first-stage top-k in input
  order; target = relevant documents first (most relevant first), then a teacher order (a
  cross-encoder's scores, or the first stage's order). This is a **stand-in** for Q26's
  GPT-4 labels (the RankZephyr training set), documented as such in ``info.json``.
- :func:`rows_from_conversations` reads the RankZephyr / FIRST training data as published on the
  Hub (``{"id", "conversations": [{"from": "system"|"human"|"gpt", "value"}]}`` with the answer
  ``"[C] > [A] > …"``; the alpha variant uses letters) into the same columns. The data carries
  no document ids: passage ``i`` of record ``id`` becomes ``"<id>/<i>"`` (1-based).

Example:
    >>> row = {"query_id": "q", "query": "?", "doc_ids": ["a", "b", "c"],
    ...        "passages": ["x", "y", "z"], "target": ["c", "a", "b"]}
    >>> target_ranks(row)
    [1, 2, 0]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.rerankers.identifiers import STYLES, parse_permutation

TRAIN_COLUMNS: tuple[str, ...] = ("query_id", "query", "doc_ids", "passages", "target")
TRAIN_FILE = "train.parquet"
INFO_FILE = "info.json"


def target_ranks(row: dict[str, Any]) -> list[int]:
    """0-based target rank of the passage at each input position."""
    rank = {d: r for r, d in enumerate(row["target"])}
    return [rank[d] for d in row["doc_ids"]]


def validate_rows(rows: Sequence[dict[str, Any]], where: str = "training set") -> None:
    """Check every row has the columns and a target that is a permutation of its documents."""
    if not rows:
        raise InputError(f"{where}: no rows")
    for n, row in enumerate(rows):
        missing = [c for c in TRAIN_COLUMNS if c not in row]
        if missing:
            raise InputError(f"{where}: row {n} is missing column(s) {missing}")
        doc_ids, passages, target = list(row["doc_ids"]), list(row["passages"]), list(row["target"])
        if len(doc_ids) != len(passages):
            raise InputError(
                f"{where}: row {n} has {len(doc_ids)} doc_ids but {len(passages)} passages"
            )
        if len(set(doc_ids)) != len(doc_ids) or sorted(target) != sorted(doc_ids):
            raise InputError(f"{where}: row {n}'s target is not a permutation of its doc_ids")


def write_train_set(
    folder: str | Path, rows: Sequence[dict[str, Any]], info: dict[str, Any]
) -> Path:
    """Write ``train.parquet`` + ``info.json`` (row count and window sizes added)."""
    from hf_posbias.shards import write_json, write_parquet

    validate_rows(rows, str(folder))
    out = Path(folder)
    write_parquet(list(rows), out / TRAIN_FILE)
    sizes = sorted({len(r["doc_ids"]) for r in rows})
    write_json(out / INFO_FILE, {**info, "rows": len(rows), "window_sizes": sizes})
    return out


def read_train_set(source: str | Path) -> list[dict[str, Any]]:
    """Rows of a training-set folder, or of a ``.parquet``/``.jsonl``/``.json`` file.

    A file of RankZephyr/FIRST conversations is converted on the fly.
    """
    from hf_posbias.rows.readers import read_rows

    path = Path(source)
    if path.is_dir():
        if not (path / TRAIN_FILE).is_file():
            raise InputError(f"{path} is not a listwise training set (no {TRAIN_FILE})")
        rows = read_rows(path / TRAIN_FILE)
    elif path.is_file():
        rows = read_rows(path)
        if rows and "conversations" in rows[0]:
            rows, _ = rows_from_conversations(rows)
    else:
        raise InputError(f"{path}: expected a training-set folder or a .parquet/.jsonl file")
    validate_rows(rows, str(path))
    return rows


# --------------------------------------------------------------------------- build-train


def build_train_set(s: Any) -> tuple[list[dict[str, Any]], dict[str, Any], Path]:
    """``posbias listwise build-train``
    (:class:`~hf_posbias.listwise.experiments.experiment_settings.BuildTrainSettings`): the rows of
    :func:`build_train_rows`, written with :func:`write_train_set` into ``s.out``."""
    from hf_posbias.listwise.experiments.firststage import check_k
    from hf_posbias.listwise.experiments.taskio import load_rerank_task

    task = load_rerank_task(s.task, s.split)
    check_k(s.k, len(task.corpus))
    out = Path(s.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, info = build_train_rows(
        task,
        k=s.k,
        first_stage=s.first_stage,
        first_stage_options=s.first_stage_options(),
        teacher=s.teacher,
        max_queries=s.max_queries,
        seed=s.seed,
        out_dir=out,
        show_progress=s.progress,
    )
    write_train_set(out, rows, info)
    return rows, info, out


def build_train_rows(
    task: Any,
    *,
    k: int = 20,
    first_stage: str | list[str] = "bm25",
    first_stage_options: dict[str, Any] | None = None,
    teacher: str = "first-stage",
    max_queries: int | None = None,
    seed: int = 0,
    out_dir: str | Path,
    show_progress: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Training rows from a task split (see the module docstring) and their provenance."""
    from hf_posbias.listwise.experiments.lists import first_stage_lists, select_queries

    query_ids = select_queries(task, max_queries, seed)
    lists = first_stage_lists(
        task,
        query_ids,
        first_stage,
        k,
        out_dir,
        show_progress=show_progress,
        **(first_stage_options or {}),
    )
    score = _teacher(teacher)
    rows = []
    for query_list in lists:
        qid = query_list.query_id
        candidates = list(query_list.candidates)
        if query_list.injected:  # the relevant document was not retrieved: it replaces the k-th
            candidates = [*candidates[: k - 1], query_list.relevant]
        relevant = [d for d in task.relevant(qid) if d in candidates]
        rest = [d for d in candidates if d not in relevant]
        if score is not None:
            passages = task.passages(rest)
            values = score(task.queries[qid], passages)
            rest = [d for _, d in sorted(zip(values, rest), key=lambda x: (-x[0], x[1]))]
        rows.append(
            {
                "query_id": qid,
                "query": task.queries[qid],
                "doc_ids": candidates,
                "passages": [p.content() for p in task.passages(candidates)],
                "target": relevant + rest,
            }
        )
    info = {
        "source": task.source,
        "split": task.split,
        "k": k,
        "first_stage": first_stage,
        **({"first_stage_options": first_stage_options} if first_stage_options else {}),
        "teacher": teacher,
        "seed": seed,
        "relevant_injected": sum(x.injected for x in lists),
        "labels": "stand-in for Q26's GPT-4 listwise labels: relevant documents first "
        f"(qrels), then the {teacher} order",
    }
    return rows, info


def _teacher(name: str) -> Any:
    """``first-stage`` (keep the first-stage order: None) or a cross-encoder's scorer."""
    if name in ("first-stage", "first_stage", "none"):
        return None
    from hf_posbias.rerankers.pointwise import cross_encoder_reranker

    return cross_encoder_reranker(name.removeprefix("cross-encoder:")).score


# --------------------------------------------------------------------------- RankZephyr / FIRST

_QUERY = re.compile(r"search query:\s*(.*?)\.?\s*\n", re.I | re.S)
_POST = re.compile(r"\n\s*Search Query:", re.I)


def _human_passages(text: str, style: str) -> list[str]:
    """Passages ``[1] …`` / ``[A] …`` in order, each up to the next identifier line."""
    end = _POST.search(text)
    body = text[: end.start()] if end else text
    labels = []
    i = 1
    while True:
        label = str(i) if style == "numbers" else chr(ord("A") + i - 1)
        if f"[{label}]" not in body or (style == "letters" and i > 26):
            break
        labels.append(label)
        i += 1
    passages = []
    for n, label in enumerate(labels):
        start = body.index(f"[{label}]") + len(label) + 2
        stop = body.index(f"[{labels[n + 1]}]", start) if n + 1 < len(labels) else len(body)
        passages.append(body[start:stop].strip())
    return passages


def _style_of(text: str) -> str:
    return "letters" if "alphabetical identifier" in text or "[A]" in text[:4000] else "numbers"


def rows_from_conversations(
    records: Iterable[dict[str, Any]], style: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """RankZephyr/FIRST conversation records → training rows, and counts of what was fixed.

    Counts: ``records``, ``rows``, ``skipped`` (no human or gpt turn, or no passages),
    ``answers_with_appended`` (answers missing identifiers, appended in input order),
    ``appended_identifiers``, ``invalid_identifiers``, ``repeated_identifiers``.

    Example:
        >>> human = ("I will provide you with 2 passages, each indicated by a numerical "
        ...          "identifier []. Rank the passages based on their relevance to the search "
        ...          "query: what is x.\\n\\n[1] x is y\\n[2] z\\nSearch Query: what is x.\\nRank…")
        >>> rows, counts = rows_from_conversations([{"id": "7", "conversations": [
        ...     {"from": "human", "value": human}, {"from": "gpt", "value": "[2] > [1]"}]}])
        >>> rows[0]["query"], rows[0]["passages"], rows[0]["target"]
        ('what is x', ['x is y', 'z'], ['7/2', '7/1'])
    """
    if style is not None and style not in STYLES:
        raise InputError(f"unknown identifier style {style!r}")
    counts = dict.fromkeys(
        (
            "records",
            "rows",
            "skipped",
            "answers_with_appended",
            "appended_identifiers",
            "invalid_identifiers",
            "repeated_identifiers",
        ),
        0,
    )
    rows = []
    for n, record in enumerate(records):
        counts["records"] += 1
        turns = record.get("conversations") or []
        human = next(
            (t.get("value", "") for t in turns if t.get("from") in ("human", "user")), None
        )
        answer = next(
            (t.get("value", "") for t in turns if t.get("from") in ("gpt", "assistant")), None
        )
        if not human or answer is None:
            counts["skipped"] += 1
            continue
        record_style = style or _style_of(human)
        passages = _human_passages(human, record_style)
        query_match = _QUERY.search(human)
        if not passages or not query_match:
            counts["skipped"] += 1
            continue
        rid = str(record.get("id", n))
        doc_ids = [f"{rid}/{i + 1}" for i in range(len(passages))]
        parsed = parse_permutation(answer, len(passages), record_style)
        counts["answers_with_appended"] += int(parsed.appended > 0)
        counts["appended_identifiers"] += parsed.appended
        counts["invalid_identifiers"] += parsed.invalid
        counts["repeated_identifiers"] += parsed.repeated
        rows.append(
            {
                "query_id": rid,
                "query": query_match.group(1).strip(),
                "doc_ids": doc_ids,
                "passages": passages,
                "target": [doc_ids[i] for i in parsed.order],
            }
        )
        counts["rows"] += 1
    return rows, counts


def convert_train_set(s: Any) -> tuple[list[dict[str, Any]], dict[str, Any], Path]:
    """``posbias listwise convert``
    (:class:`~hf_posbias.listwise.experiments.experiment_settings.ConvertSettings`): RankZephyr /
    FIRST conversations (a file or a Hub dataset id) as a training set written with
    :func:`write_train_set` into ``s.out``; the rows, the counts and the folder."""
    records = load_conversations(s.data, split=s.hf_split)
    if s.max_rows is not None:
        records = records[: s.max_rows]
    rows, counts = rows_from_conversations(records, style=s.identifiers)
    if not rows:
        raise InputError(f"{s.data}: no conversation could be read ({counts['skipped']} skipped)")
    out = write_train_set(s.out, rows, {"source": str(s.data), "format": "rankzephyr", **counts})
    return rows, counts, out


def load_conversations(source: str, split: str = "train") -> list[dict[str, Any]]:
    """Conversation records from a local ``.jsonl``/``.json`` file or a Hub dataset id."""
    from hf_posbias.rows.readers import read_rows

    return read_rows(source, split=split)
