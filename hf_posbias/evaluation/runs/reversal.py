"""Mirror-reversal diagnostic (PosIR, Zeng et al. 2026): does the score follow the evidence?

Every document is cut into 5 equal character segments
(:func:`hf_posbias.corpus.documents.segment_spans`, cuts snapped to whitespace) and reassembled in
the order 5,4,3,2,1. Queries whose evidence lies
in segments 1–2 (*front-origin*) now find it at the back (F→B); queries whose evidence lies in
segments 4–5 (*back-origin*) find it at the front (B→F). Each group is scored before and after::

    Δrev = nDCG@10(B→F) − nDCG@10(F→B)

A front-biased model gains on B→F and loses on F→B (Δrev > 0); a bag-of-words model such as
BM25 scores each group identically before and after. Queries need character spans
(``evidence_start >= 0``); a task without any (FineWeb-PosQ) gets a clear error.

Example:
    >>> from hf_posbias.evaluation.runs.reversal import mirror_text, origin_of
    >>> text = "one two three four five six seven eight nine ten"
    >>> mirrored, spans = mirror_text(text)
    >>> mirrored
    'nine ten seven eight five six three four one two'
    >>> origin_of(0, 3, spans), origin_of(44, 47, spans), origin_of(19, 23, spans)
    ('front', 'back', None)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.corpus.documents import segment_spans
from hf_posbias.errors import InputError
from hf_posbias.evaluation.reports.report import (
    AuditContext,
    ReportSection,
    register_audit_section,
)
from hf_posbias.figures import save_figure
from hf_posbias.jsonable import JsonRecord
from hf_posbias.tables import as_table
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

logger = logging.getLogger(__name__)

N_SEGMENTS = 5
FRONT, BACK = "front", "back"


def mirror_text(text: str, k: int = N_SEGMENTS) -> tuple[str, list[tuple[int, int]]]:
    """Reverse the order of ``k`` equal segments; returns the new text and the original spans.

    Segments are stripped and re-joined with one space so that no word is glued to another.
    """
    spans = segment_spans(text, k)
    pieces = [text[start:end].strip() for start, end in reversed(spans)]
    return " ".join(p for p in pieces if p), spans


def _segment_index(offset: int, spans: list[tuple[int, int]]) -> int:
    for i, (start, end) in enumerate(spans):
        if start <= offset < end:
            return i
    return len(spans) - 1


def origin_of(start: int, end: int, spans: list[tuple[int, int]]) -> str | None:
    """``front`` if the span lies in the first two segments, ``back`` if in the last two.

    Evidence in the middle segment, or straddling the middle, belongs to neither group.
    """
    if start < 0 or end <= start:
        return None
    first, last = _segment_index(start, spans), _segment_index(end - 1, spans)
    if last <= 1:
        return FRONT
    if first >= len(spans) - 2:
        return BACK
    return None


def _mirrored_offset(
    start: int, end: int, text: str, spans: list[tuple[int, int]]
) -> tuple[int, int]:
    """Where a span lands in :func:`mirror_text`'s output (``(-1, -1)`` if it is split)."""
    i, j = _segment_index(start, spans), _segment_index(end - 1, spans)
    if i != j:
        return -1, -1
    pieces = [text[s:e] for s, e in spans]
    offset = 0
    for index in reversed(range(len(spans))):
        stripped = pieces[index].strip()
        if index == i:
            lead = len(pieces[index]) - len(pieces[index].lstrip())
            local = start - spans[index][0] - lead
            if local < 0 or local + (end - start) > len(stripped):
                return -1, -1
            return offset + local, offset + local + (end - start)
        if stripped:
            offset += len(stripped) + 1
    return -1, -1


@dataclass
class ReversalSplit:
    """The two task folders of a reversal run and how queries were assigned."""

    original: Path
    mirrored: Path
    n_front: int
    n_back: int
    skipped: dict[str, int] = field(default_factory=dict)


def build_reversal_tasks(
    data: PositionTaskData, out_dir: str | Path, *, k: int = N_SEGMENTS
) -> ReversalSplit:
    """Write the original and mirrored task folders (buckets ``front``/``back``).

    Both folders hold the same front/back queries and qrels; only the corpus differs. Every
    document is mirrored, relevant or not, as in PosIR.
    """
    if not any(int(q["evidence_start"]) >= 0 for q in data.queries):
        raise InputError(
            f"{data.info.name}: no query has a character evidence span (evidence_start = -1); "
            "mirror reversal needs spans"
        )
    out = Path(out_dir)
    judged = data.relevant_docs()
    # The evidence document of a query: its highest-graded qrel, first on ties. Only those
    # documents' texts are kept (the corpus may be lazy arrow rows).
    evidence_of = {q: max(docs.items(), key=lambda kv: kv[1])[0] for q, docs in judged.items()}
    evidence_ids = set(evidence_of.values())
    texts: dict[str, str] = {}
    mirrored_docs: list[dict[str, Any]] = []
    spans_of: dict[str, list[tuple[int, int]]] = {}
    too_short: set[str] = set()
    for doc in data.corpus:
        text = str(doc["text"])
        if str(doc["id"]) in evidence_ids:
            texts[str(doc["id"])] = text
        if len(text) < k:
            too_short.add(str(doc["id"]))
            mirrored_docs.append(dict(doc))
            continue
        new_text, spans = mirror_text(text, k)
        spans_of[str(doc["id"])] = spans
        mirrored_docs.append({**doc, "text": new_text})
    skipped = {"no span": 0, "middle": 0, "span outside document": 0, "document too short": 0}
    queries_original: list[dict[str, Any]] = []
    queries_mirrored: list[dict[str, Any]] = []
    kept_ids: set[str] = set()
    for query in data.queries:
        qid = str(query["id"])
        start, end = int(query["evidence_start"]), int(query["evidence_end"])
        if start < 0:
            skipped["no span"] += 1
            continue
        doc_id = evidence_of[qid]
        if doc_id in too_short:
            skipped["document too short"] += 1
            continue
        text = texts[doc_id]
        if end > len(text):
            skipped["span outside document"] += 1
            continue
        group = origin_of(start, end, spans_of[doc_id])
        if group is None:
            skipped["middle"] += 1
            continue
        kept_ids.add(qid)
        queries_original.append({**query, "bucket": group})
        new_start, new_end = _mirrored_offset(start, end, text, spans_of[doc_id])
        queries_mirrored.append(
            {**query, "bucket": group, "evidence_start": new_start, "evidence_end": new_end}
        )
    n_front = sum(q["bucket"] == FRONT for q in queries_original)
    n_back = len(queries_original) - n_front
    if not queries_original:
        raise InputError(
            f"{data.info.name}: no query has its evidence in the first or last two of {k} "
            f"segments ({skipped}); nothing to reverse"
        )
    qrels = [r for r in data.qrels if str(r["query_id"]) in kept_ids]
    common = dict(
        buckets=[FRONT, BACK],
        bucket_scheme=f"mirror reversal, {k} segments: front = 1-2, back = {k - 1}-{k}",
        source=data.info.source,
        license=data.info.license,
        reference=data.info.reference,
        citation=data.info.citation,
    )
    original = PositionTaskData(
        info=TaskInfo(
            name=f"{data.info.name}-reversal-original",
            description=f"{data.info.name}: front/back-origin queries, original documents.",
            **common,
        ),
        corpus=data.corpus,  # unchanged: the task's own rows (saving only reads them)
        queries=queries_original,
        qrels=qrels,
    ).save(out / "original")
    mirrored = PositionTaskData(
        info=TaskInfo(
            name=f"{data.info.name}-reversal-mirrored",
            description=f"{data.info.name}: the same queries, documents mirrored 5,4,3,2,1.",
            **common,
        ),
        corpus=mirrored_docs,
        queries=queries_mirrored,
        qrels=qrels,
    ).save(out / "mirrored")
    return ReversalSplit(original, mirrored, n_front, n_back, skipped)


@dataclass
class ReversalResult(JsonRecord):
    """nDCG@10 of each origin group before/after mirroring, and Δrev."""

    task: str
    model: str
    n_front: int
    n_back: int
    front_before: float | None
    front_after: float | None
    back_before: float | None
    back_after: float | None
    delta_rev: float | None
    skipped: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_scores(
        cls,
        task: str,
        model: str,
        before: dict[str, float | None],
        after: dict[str, float | None],
        *,
        n_front: int,
        n_back: int,
        skipped: dict[str, int] | None = None,
    ) -> ReversalResult:
        """Combine per-group scores; Δrev = after[back] (B→F) − after[front] (F→B).

        Example:
            >>> r = ReversalResult.from_scores("T", "m", {"front": .8, "back": .5},
            ...                                {"front": .4, "back": .7}, n_front=3, n_back=2)
            >>> round(r.delta_rev, 3)
            0.3
        """
        f_after, b_after = after.get(FRONT), after.get(BACK)
        delta = None if f_after is None or b_after is None else b_after - f_after
        return cls(
            task=task,
            model=model,
            n_front=n_front,
            n_back=n_back,
            front_before=before.get(FRONT),
            front_after=f_after,
            back_before=before.get(BACK),
            back_after=b_after,
            delta_rev=delta,
            skipped=dict(skipped or {}),
        )

    def usage_line(self) -> str:
        """How many queries the diagnostic used and skipped, by reason.

        Example:
            >>> r = ReversalResult.from_scores("T", "m", {}, {}, n_front=3, n_back=2,
            ...                                skipped={"middle": 4, "no span": 0})
            >>> r.usage_line()
            'T: used 5 queries (3 front, 2 back); skipped 4 (middle: 4).'
        """
        skipped = {k: v for k, v in self.skipped.items() if v}
        text = f"{self.task}: used {self.n_front + self.n_back} queries ({self.n_front} front, "
        text += f"{self.n_back} back)"
        if skipped:
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items()))
            text += f"; skipped {sum(skipped.values())} ({reasons})"
        return text + "."

    def table_row(self) -> dict[str, Any]:
        """A row for the audit table."""
        return {
            "task": self.task,
            "front queries": self.n_front,
            "back queries": self.n_back,
            "front, original": self.front_before,
            "F→B": self.front_after,
            "back, original": self.back_before,
            "B→F": self.back_after,
            "Δrev": self.delta_rev,
        }


def mirror_reversal(
    model: Any,
    task: Any,
    out_dir: str | Path,
    *,
    k: int = N_SEGMENTS,
    batch_size: int = 32,
    top_k: int = 100,
    progress: bool = True,
) -> ReversalResult:
    """Run the mirror-reversal diagnostic of ``model`` on ``task``.

    Args:
        model: a model argument (as for ``posbias evaluate``), a model loaded by
            :func:`hf_posbias.modeling.loaders.load_model` or one made ready for mteb
            (:class:`~hf_posbias.evaluation.runs.mteb_models.MtebModel`).
        task: a task folder, name or task object; queries need character spans.
        out_dir: where the two derived task folders and ``reversal.json`` are written.
        progress: plain progress lines while each of the two evaluations runs.

    Example:
        >>> # mirror_reversal("bm25", "tasks/scifact-evidence", "runs/rev").delta_rev
    """
    from hf_posbias.evaluation.runs.mteb_models import MtebModel, load_mteb_model
    from hf_posbias.evaluation.runs.runner import run_task
    from hf_posbias.shards import write_json
    from hf_posbias.tasks.mteb_tasks import get_task

    task_obj = task if hasattr(task, "load_data") else get_task(task)
    task_obj.load_data()
    data = task_obj.task_data
    out = Path(out_dir)
    split = build_reversal_tasks(data, out, k=k)
    loaded = model if isinstance(model, MtebModel) else load_mteb_model(model)
    scores: dict[str, dict[str, float | None]] = {}
    for label, folder in (("before", split.original), ("after", split.mirrored)):
        derived = get_task(folder, top_k=top_k)
        run_task(
            loaded,
            derived,
            batch_size=batch_size,
            results_dir=None,
            progress=progress,
            desc=f"mirror reversal of {data.info.name} ({label}) with {loaded.name}",
        )
        [kept] = derived.last_evaluation.values()
        scores[label] = {g: kept.scores.ndcg_at_10.get(g) for g in (FRONT, BACK)}
    outcome = ReversalResult.from_scores(
        data.info.name,
        loaded.spec,
        scores["before"],
        scores["after"],
        n_front=split.n_front,
        n_back=split.n_back,
        skipped=split.skipped,
    )
    write_json(out / "reversal.json", outcome.to_dict())
    return outcome


def plot_reversal(results: list[ReversalResult], path: str | Path) -> Path:
    """Grouped bars: each origin group before and after mirror reversal, per task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(5.0, 2.2 * len(results) + 2), 3.6), dpi=110)
    width = 0.2
    for i, r in enumerate(results):
        bars = [
            ("front, original", r.front_before),
            ("front→back (F→B)", r.front_after),
            ("back, original", r.back_before),
            ("back→front (B→F)", r.back_after),
        ]
        for j, (label, value) in enumerate(bars):
            ax.bar(
                i + (j - 1.5) * width,
                0.0 if value is None else value,
                width,
                label=label if i == 0 else None,
                color=f"C{j}",
            )
    delta = ["n/a" if r.delta_rev is None else f"{r.delta_rev:+.3f}" for r in results]
    ax.set_xticks(range(len(results)))
    ax.set_xticklabels([f"{r.task}\nΔrev={d}" for r, d in zip(results, delta)], fontsize=8)
    ax.set_ylabel("nDCG@10")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return save_figure(fig, path, tight_layout=True)


@register_audit_section
def reversal_section(ctx: AuditContext) -> list[ReportSection]:
    """The mirror-reversal section of ``posbias analyze audit`` (registered when this module
    loads)."""
    if not ctx.reversals and not ctx.reversal_skipped:
        return []
    paragraphs = [
        "Mirror reversal: every document is cut into 5 equal segments and reassembled as "
        "5,4,3,2,1. Front-origin queries (evidence in segments 1–2) move to the back (F→B), "
        "back-origin queries (4–5) to the front (B→F). Δrev = nDCG@10(B→F) − nDCG@10(F→B); "
        "a front-biased model has Δrev > 0."
    ]
    paragraphs += [r.usage_line() for r in ctx.reversals]
    paragraphs += [f"{task}: not run — {why}" for task, why in ctx.reversal_skipped.items()]
    section = ReportSection("Mirror reversal", paragraphs=paragraphs)
    if ctx.reversals:
        section.tables.append(as_table([r.table_row() for r in ctx.reversals]))
        section.images.append(plot_reversal(ctx.reversals, ctx.out_dir / "plots" / "reversal.png"))
    return [section]
