"""HotpotQA evidence-position subset, from the distractor-setting annotation format.

HotpotQA (Yang et al. 2018), distractor format: ``_id``, ``question``, ``supporting_facts``
(``[[title, sent_idx], …]``, or the Hub's ``{"title": […], "sent_id": […]}``), ``context``
(``[[title, [sentences…]], …]``, or ``{"title": […], "sentences": [[…], …]}``). The context
paragraphs contain the sentences themselves, so positions are exact: a paragraph's text is its
sentences concatenated as given (HotpotQA sentences carry their own leading spaces). The corpus
is every paragraph of every question, one per title; gold documents are the supporting
paragraphs; the position is the first listed supporting fact (how many questions have supporting
facts in different buckets is counted in the build report).

Example:
    >>> from hf_posbias.tasks.builders.hotpotqa import build_hotpotqa
    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "hotpot.json")
    >>> with open(path, "w") as f:
    ...     json.dump([{"_id": "a", "question": "Who?", "supporting_facts": [["P", 1]],
    ...                 "context": [["P", ["First.", " Second."]]]}], f)
    >>> build_hotpotqa(path).queries[0]["evidence_start"]
    7
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias import citations
from hf_posbias.errors import InputError
from hf_posbias.settings import setting, shared_setting
from hf_posbias.tasks.benchmark_registry import Benchmark
from hf_posbias.tasks.bucketing import Anchor, IntervalBuckets
from hf_posbias.tasks.builders.common import (
    BuilderOutput,
    RelativeBuckets,
    TaskAssembler,
    evidence_card,
    load_rows,
    require_fields,
    settings_build,
)
from hf_posbias.tasks.taskdata import PositionTaskData

CARD = evidence_card(
    name="HotpotQA-Evidence",
    class_name="HotpotQAEvidence",
    description=(
        "HotpotQA (distractor) questions retrieving their supporting Wikipedia paragraphs; "
        "queries are bucketed by the relative position of the first supporting sentence."
    ),
    reference="https://hotpotqa.github.io/",
    citation=citations.HOTPOTQA,
    license="cc-by-sa-4.0",
    date=("2018-01-01", "2018-09-01"),
    task_subtypes=("Question answering",),
    adapted_from=("HotpotQA",),
)


def _pairs(value: Any, keys: tuple[str, str], where: str) -> list[tuple[Any, Any]]:
    """``[[a, b], …]`` or ``{keys[0]: [a…], keys[1]: [b…]}`` → list of pairs."""
    if isinstance(value, dict):
        if not set(keys) <= set(value):
            raise InputError(f"{where}: expected keys {keys}, got {sorted(value)}")
        return list(zip(value[keys[0]], value[keys[1]]))
    if isinstance(value, list):
        if any(not isinstance(v, (list, tuple)) or len(v) != 2 for v in value):
            raise InputError(f"{where}: expected a list of [{keys[0]}, {keys[1]}] pairs")
        return [(a, b) for a, b in value]
    raise InputError(f"{where}: expected a list of pairs or a dict of lists")


def build_hotpotqa(
    source: str | Path,
    buckets: str | IntervalBuckets = "thirds",
    anchor: Anchor = "start",
    split: str = "validation",
    name: str = CARD.name,
) -> PositionTaskData:
    """Build the HotpotQA evidence-position task from the distractor format.

    Args:
        source: ``hotpot_dev_distractor_v1.json`` (a JSON list), a JSONL/parquet of the same
            rows, or a Hub-layout folder/id (``hotpotqa/hotpot_qa`` ``distractor``) with ``split``.
        buckets: bucketing rule (default thirds).
        anchor: ``start`` or ``center`` of the first supporting sentence.
        split: split of a folder/Hub source.
        name: task name.

    Example:
        >>> data = build_hotpotqa("hotpot_dev_distractor_v1.json")  # doctest: +SKIP
    """
    rows = load_rows(source, split=split)
    asm = TaskAssembler(buckets, anchor=anchor, source=str(source))
    asm.report.read = len(rows)
    # title -> {sent_idx: (start, end)}
    spans: dict[str, dict[int, tuple[int, int]]] = {}
    parsed = []
    for i, row in enumerate(rows):
        where = f"{source}: row {i}"
        require_fields(row, ("question", "supporting_facts", "context"), where)
        paragraphs = _pairs(row["context"], ("title", "sentences"), where)
        facts = _pairs(row["supporting_facts"], ("title", "sent_id"), where)
        for title, sentences in paragraphs:
            title = str(title)
            text = "".join(sentences)
            if title in spans:
                if asm.document(title)["text"] != text:
                    asm.report.count_note("paragraph_title_with_different_text_kept_first")
                continue
            if not text.strip():
                continue
            pos, by_idx = 0, {}
            for idx, sentence in enumerate(sentences):
                # skip the sentence's own leading space so the offset is its first character
                lead = len(sentence) - len(sentence.lstrip())
                by_idx[idx] = (pos + lead, pos + len(sentence.rstrip()))
                pos += len(sentence)
            spans[title] = by_idx
            asm.add_document(title, text, title, where)
        parsed.append((str(row.get("_id", row.get("id", i))), str(row["question"]), facts))
    asm.report.note("questions_whose_supporting_facts_span_several_buckets", 0)
    for qid, question, facts in parsed:
        located = []
        for title, idx in facts:
            title = str(title)
            if title not in spans:
                asm.report.drop("supporting fact: paragraph not in context")
            elif int(idx) not in spans[title]:
                asm.report.drop("supporting fact: sentence index out of range")
            else:
                located.append((title, *spans[title][int(idx)]))
        if not located:
            asm.report.drop("question: no supporting fact located")
            continue
        asm.add_located_query(
            qid, question, located, "questions_whose_supporting_facts_span_several_buckets"
        )
    info = CARD.task_info(
        name=name,
        description=(
            "HotpotQA (distractor) questions retrieving their supporting Wikipedia paragraphs, "
            "bucketed by the relative character position of the first supporting sentence."
        ),
        source=f"HotpotQA distractor via {source}",
    )
    return asm.finish(
        info,
        extra={
            "document_text": "paragraph sentences concatenated as given (exact offsets)",
            "position": "first listed supporting fact",
            "corpus": "every context paragraph of every question, one per title",
        },
    )


@dataclass(kw_only=True)
class HotpotQASettings(RelativeBuckets, BuilderOutput):
    """``posbias benchmark build hotpotqa``."""

    input: str = setting("hotpot_*_distractor JSON, JSONL/parquet rows, or a Hub-layout folder")
    split: str = shared_setting("split", default="validation")


BENCHMARK = Benchmark(
    name="hotpotqa",
    help="HotpotQA distractor file → evidence-position task",
    cards=(CARD,),
    settings=HotpotQASettings,
    build=settings_build(build_hotpotqa),
    order=70,
)
