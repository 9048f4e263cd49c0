"""SQuAD-PosQ (Zeng et al. 2025) from SQuAD v2: questions bucketed by their answer's start.

Source: Hub ``rajpurkar/squad_v2`` (``train`` + ``validation``), a local folder with the same
files (``load_dataset(folder)``), a parquet/JSONL file of the same rows (``id, title, context,
question, answers{text, answer_start}``), or the original SQuAD JSON files
(``train-v2.0.json``/``dev-v2.0.json``: ``{"data": [{"title", "paragraphs": [{"context", "qas":
[{"id", "question", "answers": [{"text", "answer_start"}], "is_impossible"}]}]}]}``).

As in Z25's reference code: answerable questions only (``answer_start`` non-empty), the corpus is
every distinct context of both splits (also those of unanswerable questions: they are
distractors), the bucket is that of the **first** answer's character start. The tiny variant
shuffles the answerable questions (train then validation order) with ``random.seed(42)`` and
keeps the first 10,000 — the same sample as Z25's ``--query_sampling`` when the rows come in the
Hub's order; the corpus is unchanged.

Bucket boundaries: half-open ``[lo, hi)``, last closed — see
:data:`hf_posbias.tasks.bucketing.SQUAD_POSQ` (a start of exactly 100 is in ``100-200``
only; Z25's ``lo <= start <= hi`` counted it twice, so sizes differ slightly from Z25's).

Example:
    >>> from hf_posbias.tasks.builders.squad import squad_json_rows
    >>> rows = squad_json_rows({"data": [{"title": "T", "paragraphs": [{"context": "abc",
    ...     "qas": [{"id": "1", "question": "q?", "is_impossible": False,
    ...              "answers": [{"text": "b", "answer_start": 1}]}]}]}]})
    >>> rows[0]["answers"]
    {'text': ['b'], 'answer_start': [1]}
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias import citations
from hf_posbias.errors import InputError
from hf_posbias.setting_values import at_least
from hf_posbias.settings import setting, shared_setting
from hf_posbias.tasks.benchmark_registry import Benchmark, TaskCard
from hf_posbias.tasks.bucketing import SQUAD_POSQ, SQUAD_POSQ_NOTE, IntervalBuckets
from hf_posbias.tasks.builders.common import (
    BuilderOutput,
    TaskAssembler,
    load_rows,
    sample_task_info,
    settings_build,
    stable_id,
)
from hf_posbias.tasks.taskdata import PositionTaskData

HUB_ID = "rajpurkar/squad_v2"

CARD = TaskCard(
    name="SQuAD-PosQ",
    class_name="SQuADPosQ",
    description=(
        "SQuAD v2 answerable questions retrieved from all unique SQuAD contexts; queries are "
        "bucketed by the character offset of the first answer (position-sensitivity benchmark)."
    ),
    reference="https://arxiv.org/abs/2505.13950",
    citation=citations.bibtex(citations.Z25, citations.SQUAD2),
    license="cc-by-sa-4.0",
    buckets=SQUAD_POSQ.labels,
    adapted_from=("SQuAD v2",),
)
TINY_CARD = CARD.variant(
    "-tiny", "Tiny", "Tiny variant: 10,000 queries sampled with seed 42, corpus unchanged."
)

JSON_SPLIT_FILES = {"train": "train-v2.0.json", "validation": "dev-v2.0.json"}


def squad_json_rows(payload: dict[str, Any], where: str = "SQuAD JSON") -> list[dict[str, Any]]:
    """Flatten the original SQuAD JSON into Hub-style rows (unanswerable → empty answers)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        raise InputError(f"{where}: expected {{'data': [...]}} (the SQuAD JSON format)")
    rows = []
    for article in payload["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph["context"]
            for qa in paragraph.get("qas", []):
                answers = [] if qa.get("is_impossible") else qa.get("answers", [])
                rows.append(
                    {
                        "id": qa["id"],
                        "title": article.get("title", ""),
                        "context": context,
                        "question": qa["question"],
                        "answers": {
                            "text": [a["text"] for a in answers],
                            "answer_start": [int(a["answer_start"]) for a in answers],
                        },
                    }
                )
    return rows


def load_squad_rows(
    source: str | Path = HUB_ID, splits: Sequence[str] = ("train", "validation")
) -> list[dict[str, Any]]:
    """Rows of the requested splits, in order, from any supported source."""
    path = Path(str(source))
    if path.is_file() and path.suffix == ".json":
        from hf_posbias.rows.readers import read_json

        return squad_json_rows(read_json(path), str(path))
    if path.is_dir() and any((path / f).is_file() for f in JSON_SPLIT_FILES.values()):
        rows = []
        for split in splits:
            file = path / JSON_SPLIT_FILES.get(split, f"{split}.json")
            if not file.is_file():
                raise InputError(f"{path}: no {file.name} for split {split!r}")
            rows.extend(load_squad_rows(file))
        return rows
    if path.is_file():
        return load_rows(path)
    rows = []
    for split in splits:
        rows.extend(load_rows(source, split=split))
    return rows


def build_squad_posq(
    source: str | Path = HUB_ID,
    tiny: bool = False,
    seed: int = 42,
    tiny_size: int = 10_000,
    splits: Sequence[str] = ("train", "validation"),
    buckets: IntervalBuckets = SQUAD_POSQ,
) -> PositionTaskData:
    """Build SQuAD-PosQ (or SQuAD-PosQ-Tiny) as a position task.

    Args:
        source: Hub id, local Hub-layout folder, parquet/JSONL rows, or SQuAD JSON file/folder.
        tiny: keep a random ``tiny_size`` sample of the queries (corpus unchanged).
        seed: sampling seed (Z25: 42).
        tiny_size: size of the tiny sample (Z25: 10,000).
        splits: splits to merge, in order (Z25: train then validation).
        buckets: answer-start rule (default Z25's six character buckets).

    Example:
        >>> data = build_squad_posq("rajpurkar/squad_v2", tiny=True)  # doctest: +SKIP
    """
    rows = load_squad_rows(source, splits)
    missing = [c for c in ("id", "context", "question", "answers") if rows and c not in rows[0]]
    if missing:
        raise InputError(f"{source}: SQuAD rows lack column(s) {missing}")
    asm = TaskAssembler(buckets, source=str(source))
    asm.report.read = len(rows)
    # Corpus: every distinct context, sorted as Z25 sorts its passage list.
    for context in sorted({r["context"] for r in rows}):
        asm.add_document(stable_id("squad", context), context)
    answerable = [r for r in rows if r["answers"]["answer_start"]]
    asm.report.drop("unanswerable question", len(rows) - len(answerable))
    if tiny:
        # Z25: random.seed(42); random.shuffle(list); list[:10000] — same stream here.
        rng = random.Random(seed)
        answerable = list(answerable)
        rng.shuffle(answerable)
        asm.report.drop("not in the tiny sample", max(0, len(answerable) - tiny_size))
        answerable = answerable[:tiny_size]
    for row in answerable:
        start = int(row["answers"]["answer_start"][0])
        answer = row["answers"]["text"][0] if row["answers"]["text"] else ""
        context = row["context"]
        if context[start : start + len(answer)] != answer:
            asm.report.count_note("answer_text_not_at_answer_start_kept")
        asm.add_query(
            str(row["id"]),
            row["question"],
            [stable_id("squad", context)],
            start,
            start + len(answer),
            bucket_value=start,
        )
    info = sample_task_info(
        CARD,
        TINY_CARD,
        sample=f"{tiny_size} queries sampled with seed {seed}" if tiny else None,
        description="SQuAD v2 answerable questions (train + validation) retrieving their passage "
        "among all distinct SQuAD v2 contexts, bucketed by the first answer's character start "
        "(Zeng et al. 2025)",
        source=f"{HUB_ID} ({'+'.join(splits)}) via {source}",
    )
    return asm.finish(
        info,
        extra={
            "bucket_boundary_rule": SQUAD_POSQ_NOTE,
            "z25_bucket_sizes": [21220, 16527, 13667, 11514, 10089, 20384],
            "splits": list(splits),
            "tiny": tiny,
            "seed": seed if tiny else None,
            "document_titles": "empty (Z25 retrieves contexts only)",
        },
    )


@dataclass(kw_only=True)
class SquadPosQSettings(BuilderOutput):
    """``posbias benchmark build squad-posq``."""

    input: str = setting(
        "Hub id, Hub-layout folder, parquet/JSONL rows or SQuAD JSON", default=HUB_ID
    )
    tiny: bool = shared_setting("tiny", default=False)
    seed: int = shared_setting("seed")
    tiny_size: int = setting("queries of the tiny sample", default=10_000, range=at_least(1))
    splits: list[str] = setting(
        "splits to merge, in order", default_factory=lambda: ["train", "validation"]
    )


BENCHMARK = Benchmark(
    name="squad-posq",
    help="SQuAD v2 → SQuAD-PosQ (Zeng et al. 2025)",
    cards=(CARD, TINY_CARD),
    settings=SquadPosQSettings,
    build=settings_build(build_squad_posq),
    order=10,
)
