"""FineWeb-PosQ (Zeng et al. 2025): long FineWeb-edu passages, questions labelled by position.

Source: Hub ``NovaSearch/FineWeb-PosQ`` (``train`` split) or the same rows as a local folder,
parquet, JSONL or JSON file. Schema, as the dataset card (``NovaSearch/FineWeb-PosQ_raw``) and
Z25's evaluation script ``exp_FineWeb-PosQ.py`` read it: ``question`` (str), ``content`` (the
passage), ``span_class`` (a **list** of position labels: Z25's script matches ``"before"``,
``"middle"``, ``"after"``), plus ``answer``, ``span`` … that this builder does not need. Rows
without a question are distractor passages. The column names and label spellings are
configurable because only the card's feature list could be checked offline; the default label
map also accepts ``begin``/``beginning``/``end``.

A question whose evidence spans several thirds (``span_class`` with several labels) is ONE
query: its bucket is its first usable label (source order) and the other labels go to the
optional ``extra_buckets`` column. The default scoring counts it once, in its bucket; the
``zeng2025`` scoring (Z25's script) counts it in every bucket it carries. Identical (question,
passage) rows are kept once. The source gives labels, not offsets, so
``evidence_start``/``evidence_end`` are ``-1`` (the task-folder contract's value for label-only
sources). Tiny variant: the questions are shuffled with ``random.Random(42)`` and the first 1,000
of each (first) label are kept (Z25's script keeps 3,300 per label with the same seed; pass
``tiny_per_position=3300`` to follow it).

Example:
    >>> from hf_posbias.tasks.builders.fineweb import build_fineweb_posq
    >>> rows = [{"question": "q1?", "content": "p " * 50, "span_class": ["before", "middle"]},
    ...         {"question": None, "content": "distractor"}]
    >>> data = build_fineweb_posq(rows=rows)
    >>> data.bucket_counts(), data.queries[0]["extra_buckets"]
    ({'begin': 1, 'middle': 0, 'end': 0}, ['middle'])
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias import citations
from hf_posbias.errors import InputError
from hf_posbias.positions import POSITIONS
from hf_posbias.settings import setting, shared_setting
from hf_posbias.tasks.benchmark_registry import Benchmark, TaskCard
from hf_posbias.tasks.bucketing import THIRDS
from hf_posbias.tasks.builders.common import (
    BuilderOutput,
    TaskAssembler,
    load_rows,
    sample_task_info,
    settings_build,
    stable_id,
)
from hf_posbias.tasks.taskdata import PositionTaskData

HUB_ID = "NovaSearch/FineWeb-PosQ"

CARD = TaskCard(
    name="FineWeb-PosQ",
    class_name="FineWebPosQ",
    description=(
        "Questions over long FineWeb-edu passages (500-1,024 words) labelled by where their "
        "evidence sits in the passage: begin, middle or end."
    ),
    reference="https://arxiv.org/abs/2505.13950",
    citation=citations.Z25,
    license="odc-by",
    buckets=THIRDS.labels,
    domains=("Web", "Written"),
    date=("2024-01-01", "2025-05-01"),
    sample_creation="LM-generated and verified",
    adapted_from=("FineWeb-edu",),
)
TINY_CARD = CARD.variant("-tiny", "Tiny", "Tiny variant: 1,000 queries per position.")

DEFAULT_LABEL_MAP: dict[str, str] = {
    "before": "begin",
    "begin": "begin",
    "beginning": "begin",
    "middle": "middle",
    "after": "end",
    "end": "end",
}


def build_fineweb_posq(
    source: str | Path = HUB_ID,
    tiny: bool = False,
    seed: int = 42,
    tiny_per_position: int = 1000,
    question_column: str = "question",
    passage_column: str = "content",
    label_column: str = "span_class",
    label_map: Mapping[str, str] | None = None,
    split: str = "train",
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> PositionTaskData:
    """Build FineWeb-PosQ (or FineWeb-PosQ-Tiny) as a begin/middle/end position task.

    Args:
        source: Hub id, local Hub-layout folder, or a parquet/JSONL/JSON file.
        tiny: keep ``tiny_per_position`` queries per position (corpus unchanged).
        seed: sampling seed.
        tiny_per_position: queries per position in the tiny variant.
        question_column, passage_column, label_column: column names.
        label_map: source label → ``begin``/``middle``/``end`` (default accepts Z25's
            ``before``/``middle``/``after``).
        split: split of a folder/Hub source.
        rows: rows given directly (tests, already-loaded data); ``source`` is then only a name.

    Example:
        >>> data = build_fineweb_posq("NovaSearch/FineWeb-PosQ", tiny=True)  # doctest: +SKIP
    """
    mapping = {k.lower(): v for k, v in (label_map or DEFAULT_LABEL_MAP).items()}
    bad = sorted(set(mapping.values()) - set(POSITIONS))
    if bad:
        raise InputError(f"label_map must map onto {POSITIONS}, got {bad}")
    data_rows = list(rows) if rows is not None else load_rows(source, split=split)
    if data_rows:
        missing = [c for c in (question_column, passage_column) if c not in data_rows[0]]
        if missing:
            raise InputError(
                f"{source}: missing column(s) {missing}; has {sorted(data_rows[0])} "
                "(set question_column/passage_column/label_column)"
            )
    asm = TaskAssembler(THIRDS, source=str(source))
    asm.report.read = len(data_rows)
    items: list[tuple[str, str, list[str]]] = []  # (question, doc_id, buckets: first = bucket)
    seen: set[tuple[str, str]] = set()
    multi = distractors = 0
    for row in data_rows:
        passage = row.get(passage_column)
        if not isinstance(passage, str) or not passage.strip():
            asm.report.drop("row without passage text")
            continue
        doc_id = asm.add_document(stable_id("fw", passage), passage)
        question = row.get(question_column)
        if not isinstance(question, str) or not question.strip():
            distractors += 1
            continue
        if (question, doc_id) in seen:
            asm.report.drop("duplicate (question, passage) row")
            continue
        seen.add((question, doc_id))
        labels = row.get(label_column)
        labels = [labels] if isinstance(labels, str) else list(labels or [])
        buckets = []
        for label in labels:
            bucket = mapping.get(str(label).strip().lower())
            if bucket is None:
                asm.report.drop(f"unknown position label {str(label)!r}")
            elif bucket not in buckets:
                buckets.append(bucket)
        if not buckets:
            asm.report.drop("question without a usable position label")
            continue
        multi += len(buckets) > 1
        items.append((question, doc_id, buckets))
    if tiny:
        rng = random.Random(seed)
        rng.shuffle(items)
        taken = {b: 0 for b in POSITIONS}
        sample = []
        for item in items:
            if taken[item[2][0]] < tiny_per_position:
                taken[item[2][0]] += 1
                sample.append(item)
        asm.report.drop("not in the tiny sample", len(items) - len(sample))
        items = sample
    for question, doc_id, buckets in items:
        qid = stable_id("fwq", question, doc_id)
        length = len(asm.document(doc_id)["text"])
        if asm.add_query(qid, question, [doc_id], -1, -1, doc_length=length, bucket=buckets[0]):
            asm.queries[-1]["extra_buckets"] = buckets[1:]
    asm.report.note("distractor_passages", distractors)
    asm.report.note("questions_with_several_position_labels", multi)
    info = sample_task_info(
        CARD,
        TINY_CARD,
        sample=f"{tiny_per_position} queries per position, seed {seed}" if tiny else None,
        description="Synthetic position-targeted questions over FineWeb-edu passages of 500-1,024 "
        "words, bucketed by the third of the passage that holds the answer (Zeng et al. 2025)",
        source=f"{HUB_ID} via {source}",
    )
    return asm.finish(
        info,
        extra={
            "columns": {
                "question": question_column,
                "passage": passage_column,
                "labels": label_column,
            },
            "label_map": mapping,
            "multi_label_rule": (
                "one query per question: bucket = first label, other labels in extra_buckets "
                "(the zeng2025 scoring counts the question in each, as Z25's script does)"
            ),
            "evidence_offsets": "-1: the source gives position labels only",
            "tiny": tiny,
            "seed": seed if tiny else None,
        },
    )


@dataclass(kw_only=True)
class FineWebPosQSettings(BuilderOutput):
    """``posbias benchmark build fineweb-posq``."""

    input: str = setting("Hub id, Hub-layout folder or parquet/JSONL/JSON rows", default=HUB_ID)
    tiny: bool = shared_setting("tiny", default=False)
    seed: int = shared_setting("seed")
    per_position: int = shared_setting("per_position", default=1000)
    question_column: str = setting("question column", default="question")
    passage_column: str = setting("passage column", default="content")
    label_column: str = setting("position label column", default="span_class")
    split: str = shared_setting("split", default="train")

    def builder_kwargs(self) -> dict[str, Any]:
        """``--per-position`` → ``tiny_per_position``."""
        kwargs = super().builder_kwargs()
        kwargs["tiny_per_position"] = kwargs.pop("per_position")
        return kwargs


BENCHMARK = Benchmark(
    name="fineweb-posq",
    help="NovaSearch/FineWeb-PosQ rows → FineWeb-PosQ",
    cards=(CARD, TINY_CARD),
    settings=FineWebPosQSettings,
    build=settings_build(build_fineweb_posq),
    order=20,
)
