"""The evidence-moving section of ``posbias analyze audit``: the representation view next to the
scores.

For every audited task whose queries carry character evidence spans, the evidence of a sample of
(query, gold document) pairs is moved through the document (p1…p10) and the mean cosine curve
is reported with its peak, lowest position and Δ×10³ (YHP26 §6). BM25 and rerankers have no
embedding to probe, so the section says so instead.
"""

from __future__ import annotations

from typing import Any

from hf_posbias.errors import InputError

MAX_PAIRS = 100
"""Pairs sampled per task: enough for a stable mean curve, cheap on CPU."""


def task_cases(data: Any) -> tuple[list[Any], dict[str, int]]:
    """Evidence-moving cases from a :class:`~hf_posbias.tasks.taskdata.PositionTaskData`.

    A query yields a case when it has a non-empty evidence span inside its first relevant
    document; the others are counted by reason.

    Example:
        >>> from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo
        >>> doc = "One fact here. Two facts here. Three facts here."
        >>> data = PositionTaskData(TaskInfo("t", "t", ["begin"]),
        ...     [{"id": "d", "title": "", "text": doc}],
        ...     [{"id": "q", "text": "two", "bucket": "begin", "evidence_start": 15,
        ...       "evidence_end": 30, "doc_length": len(doc)}],
        ...     [{"query_id": "q", "doc_id": "d", "score": 1}])
        >>> cases, skipped = task_cases(data)
        >>> cases[0].evidence, skipped
        ('Two facts here.', {})
    """
    from hf_posbias.analysis.evidence_cases import EvidenceCase

    documents = {str(d["id"]): d["text"] for d in data.corpus}
    relevant = data.relevant_docs()
    cases: list[Any] = []
    skipped: dict[str, int] = {}
    for query in data.queries:
        start, end = int(query["evidence_start"]), int(query["evidence_end"])
        if start < 0 or end <= start:
            skipped["no_evidence_span"] = skipped.get("no_evidence_span", 0) + 1
            continue
        doc_id = next(iter(relevant[str(query["id"])]))
        try:
            cases.append(
                EvidenceCase.from_span(
                    query["text"], documents[doc_id], start, end, str(query["id"])
                )
            )
        except InputError:
            skipped["unusable_span"] = skipped.get("unusable_span", 0) + 1
    return cases, skipped


def evidence_moving_section(ctx: Any, max_pairs: int = MAX_PAIRS) -> list[Any]:
    """Audit section builder.

    See :func:`hf_posbias.evaluation.reports.report.register_audit_section`.

    Each task's paragraph states how many queries gave a pair, how many were sampled, how many
    the curve used and how many it skipped by reason; a curve under
    :data:`~hf_posbias.analysis.evidence_moving.MIN_RELIABLE_PAIRS` pairs is marked unreliable.
    """
    from hf_posbias.analysis.evidence_moving import (
        pairs_cell,
        run_evidence_moving,
        sample_pairs,
        save_evidence_moving_plot,
    )
    from hf_posbias.evaluation.reports.report import ReportSection
    from hf_posbias.tables import MarkdownTable

    section = ReportSection(
        "Evidence moving",
        paragraphs=[
            "The evidence span of each sampled (query, gold document) pair is moved to 10 evenly "
            "spaced sentence boundaries (p1 = start … p10 = end) with the rest of the document "
            "fixed (word boundaries where a document has fewer than 10 sentence boundaries); "
            "the curve is the mean cosine(query, document) per position. Δ = (peak − "
            "lowest) × 10³ (YHP26 §6)."
        ],
    )
    model = ctx.loaded.sentence_transformer if ctx.loaded is not None else None
    if model is None:
        section.paragraphs.append("Not run: the audited model has no embedding to probe.")
        return [section]
    for task in ctx.tasks:
        name = task.metadata.name
        cases, skipped = task_cases(task.task_data)
        sampled = sample_pairs(cases, max_pairs, seed=42)
        source = (
            f"{name}: {len(cases)} queries with an evidence span in their gold document"
            + "".join(f", {v} without ({k.replace('_', ' ')})" for k, v in sorted(skipped.items()))
            + f"; {len(sampled)} sampled (seed 42)."
        )
        try:
            summary = run_evidence_moving(model, sampled, label=ctx.model, progress=ctx.progress)
        except InputError as err:
            section.paragraphs.append(f"{source} Not run — {err}")
            continue
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
        png = save_evidence_moving_plot(
            [summary],
            ctx.out_dir / "plots" / f"evidence-moving-{safe}.png",
            title=f"Evidence moving — {name}",
        )
        section.paragraphs.append(source)
        section.paragraphs.append(summary.usage_line())
        section.paragraphs.append(
            f"{name}: {summary.headline()} over {summary.n_pairs} pairs"
            + ("." if summary.reliable else " (unreliable: too few pairs).")
        )
        section.tables.append(
            MarkdownTable(
                ["task", "pairs", *summary.positions, "peak", "lowest", "Δ×10³"],
                [
                    [
                        name,
                        pairs_cell(summary),
                        *(f"{v:.4f}" for v in summary.mean),
                        summary.peak_position,
                        summary.lowest_position,
                        f"{summary.delta:.1f}",
                    ]
                ],
            )
        )
        section.images.append(png)
    return [section]
