"""``posbias audit`` as a library call: every position measurement of one model, one report.

:func:`audit_model` evaluates the model on its tasks (:func:`~hf_posbias.evaluation.runs.runner.
evaluate_model`), runs the mirror-reversal diagnostic on each task with character evidence spans
(:func:`~hf_posbias.evaluation.runs.reversal.mirror_reversal`; a task without spans is noted, not
failed) and writes ``audit.md``, ``audit.html`` and ``reversal.json`` in ``settings.out``.

Example:
    >>> from hf_posbias.evaluation.settings import ModelAuditSettings
    >>> s = ModelAuditSettings(model="bm25", task=("tasks/scifact-evidence",), out="runs/audit")
    >>> s.reversal
    True
    >>> # ctx, md_path, html_path = audit_model(s)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hf_posbias.evaluation.reports.report import AuditContext
    from hf_posbias.evaluation.settings import ModelAuditSettings


def audit_model(
    settings: ModelAuditSettings, *, show_progress: bool = False
) -> tuple[AuditContext, Path, Path]:
    """Audit ``settings.model`` on ``settings.task``; returns (context, audit.md, audit.html).

    ``show_progress``: mteb's and sentence-transformers' own bars. The summaries carry the
    evaluation's warnings (they are not also emitted as Python warnings).
    """
    import warnings

    from hf_posbias.analysis.audit_evidence import evidence_moving_section
    from hf_posbias.errors import InputError
    from hf_posbias.evaluation.reports.report import (
        AuditContext,
        register_audit_section,
        write_audit_report,
    )
    from hf_posbias.evaluation.runs.models import load_model
    from hf_posbias.evaluation.runs.reversal import mirror_reversal
    from hf_posbias.evaluation.runs.runner import evaluate_model, load_tasks
    from hf_posbias.shards import write_json

    s = settings
    out = Path(s.out)
    tasks = load_tasks(s.task, scoring=s.scoring, top_k=s.top_k)
    loaded = load_model(s.model, device=s.device, settings=s, remedy=s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        summaries = evaluate_model(s, tasks, loaded=loaded, show_progress=show_progress)
    ctx = AuditContext(
        model=s.model,
        out_dir=out,
        summaries=summaries,
        loaded=loaded,
        tasks=tasks,
        progress=s.progress,
    )
    if s.reversal:
        for task in tasks:
            name = task.metadata.name
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
            try:
                ctx.reversals.append(
                    mirror_reversal(
                        loaded,
                        task,
                        out / "reversal" / safe,
                        batch_size=s.batch_size,
                        top_k=s.top_k,
                        progress=s.progress,
                    )
                )
            except InputError as err:
                # A task without spans is a limitation of that task, not a failed audit.
                ctx.reversal_skipped[name] = str(err)
    write_json(out / "reversal.json", [r.to_dict() for r in ctx.reversals])
    register_audit_section(evidence_moving_section)
    md_path, html_path = write_audit_report(ctx)
    return ctx, md_path, html_path
