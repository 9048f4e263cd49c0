"""What a benchmark build leaves behind: the task folder (with ``construction.json`` and
``build_report.json``), the tiny task, and the Hub dataset repo folder whose card carries the
construction table.

Example:
    >>> print(construction_markdown([{"stage": "faq", "begin": 4, "middle": 5, "end": 3}]))
    | stage | begin | middle | end | total |
    |---|---|---|---|---|
    | faq | 4 | 5 | 3 | 12 |
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.positions import POSITIONS
from hf_posbias.shards import write_json

if TYPE_CHECKING:
    from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings
    from hf_posbias.tasks.taskdata import PositionTaskData

STAGES = (
    "faq",
    "stage1_rerankers",
    "stage1_downsample",
    "stage1_judge",
    "stage2_false_negatives",
    "tiny",
)
"""The rows of ``construction.json``, in order."""

HUB_SPLIT = "test"
"""The split of every config in the Hub dataset folder (an evaluation set)."""


def construction_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The construction table as markdown (counts per stage and position, with totals)."""
    lines = ["| stage | begin | middle | end | total |", "|---|---|---|---|---|"]
    for row in rows:
        counts = [int(row[p]) for p in POSITIONS]
        lines.append(f"| {row['stage']} | " + " | ".join(map(str, counts)) + f" | {sum(counts)} |")
    return "\n".join(lines)


def position_task(
    settings: BenchmarkBuildSettings,
    passages: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    extra: dict[str, Any],
    tiny: bool,
) -> PositionTaskData:
    """The position task of ``questions`` over ``passages`` (the tiny one: ``-tiny`` named)."""
    from hf_posbias.tasks.bucketing import THIRDS
    from hf_posbias.tasks.builders.common import TaskAssembler
    from hf_posbias.tasks.taskdata import TaskInfo

    asm = TaskAssembler(THIRDS, source=str(settings.corpus))
    for p in passages:
        asm.add_document(p["id"], p["text"], p["title"])
    for q in questions:
        asm.add_query(
            q["qid"], q["question"], [q["passage_id"]], q["start"], q["end"], bucket=q["tag"]
        )
    info = TaskInfo(
        name=settings.task_name + ("-tiny" if tiny else ""),
        description=(
            "Position-labelled questions built with Z25's FineWeb-PosQ recipe "
            f"(posbias benchmark from-corpus) from {settings.corpus}"
        ),
        buckets=list(POSITIONS),
        source=str(settings.corpus),
        reference="https://arxiv.org/abs/2505.13950",
    )
    return asm.finish(info, extra=extra)


def hub_notes(settings: BenchmarkBuildSettings, construction: list[dict[str, Any]]) -> str:
    """What the Hub card of a built benchmark adds to a task's card: the recipe's models and the
    construction table."""
    return (
        "## Construction\n\n"
        "Questions labelled by where their evidence sits in the passage (begin / middle / end), "
        "built with Z25's FineWeb-PosQ recipe by `posbias benchmark from-corpus` (hf-posbias).\n\n"
        f"Source corpus: `{settings.corpus}`. LLM: `{settings.llm_model}` "
        f"({settings.llm_backend}); rerankers: `{settings.rerankers}`; embedder: "
        f"`{settings.embedder}`; false-negative judges: `{settings.fn_judges}`.\n\n"
        "Questions per position after each step:\n\n"
        f"{construction_markdown(construction)}\n\n"
        "Each query's `evidence_start`/`evidence_end` are the character span of the chunk it was "
        "generated from; its bucket is Algorithm 1's tag on character offsets. The config "
        "`queries_tiny` holds the queries of the tiny task (`<out>/tiny`)."
    )


def write_outputs(
    settings: BenchmarkBuildSettings,
    passages: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    tiny: Sequence[dict[str, Any]],
    report: dict[str, Any],
) -> Path:
    """Write the task folder (``settings.out``), its ``tiny`` task and the Hub folder
    (``settings.hub_dir``: :func:`hf_posbias.publish.task_repo.write_task_repo`, the layout of
    every published position task, ``eval.yaml`` included); ``report`` is the build report (its
    ``construction`` rows go into the task's metadata, ``construction.json`` and the card).
    Returns the task folder."""
    from hf_posbias.publish.task_repo import write_task_repo
    from hf_posbias.settings import settings_record

    construction = report["construction"]
    extra = {"construction": construction, "settings": settings_record(settings)}
    data = position_task(settings, passages, questions, extra, tiny=False)
    folder = data.save(settings.out)
    write_json(folder / "construction.json", construction)
    write_json(folder / "build_report.json", report)
    if tiny:
        position_task(settings, passages, list(tiny), extra, tiny=True).save(folder / "tiny")
    tiny_ids = {q["qid"] for q in tiny}
    write_task_repo(
        folder,
        settings.hub_dir,
        notes=hub_notes(settings, construction),
        extra_configs={"queries_tiny": [q for q in data.queries if q["id"] in tiny_ids]},
        overwrite=True,
    )
    return folder
