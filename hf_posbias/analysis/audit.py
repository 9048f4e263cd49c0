"""``posbias analyze audit`` as a library call: every position measurement of one model, one report.

:func:`audit_model` evaluates the model on its tasks (:func:`~hf_posbias.evaluation.runs.runner.
evaluate_model`), runs the mirror-reversal diagnostic on each task with character evidence spans
(:func:`~hf_posbias.evaluation.runs.reversal.mirror_reversal`; a task without spans is noted, not
failed) and writes ``audit.md``, ``audit.html`` and ``reversal.json`` in ``out``.

It takes the verb's settings,
:class:`~hf_posbias.evaluation.evaluation_settings.ModelAuditSettings`: the options it shares
with ``posbias evaluate`` are declared once there (typed, with their help and checks), and
reach :func:`~hf_posbias.evaluation.runs.runner.evaluate_model` as its keywords through
:meth:`~hf_posbias.evaluation.evaluation_settings.EvaluationOptions.evaluate_kwargs`.

Example:
    >>> from hf_posbias.evaluation.evaluation_settings import ModelAuditSettings
    >>> s = ModelAuditSettings(model="bm25", task=("tasks/scifact-evidence",), out="runs/a")
    >>> # ctx, md_path, html_path = audit_model(s)
    >>> s.reversal, s.evaluate_kwargs()["top_k"]
    (True, 100)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hf_posbias.evaluation.evaluation_settings import ModelAuditSettings
    from hf_posbias.evaluation.reports.report import AuditContext


def audit_model(
    settings: ModelAuditSettings, *, show_progress: bool = False
) -> tuple[AuditContext, Path, Path]:
    """Audit ``settings.model`` on ``settings.task``; returns (context, audit.md, audit.html).

    ``settings.reversal``: run the mirror-reversal diagnostic. ``show_progress``: the progress
    bars of mteb and sentence-transformers (as :func:`~hf_posbias.evaluation.runs.runner.
    evaluate_model`'s). The summaries carry the evaluation's warnings (they are not also
    emitted as Python warnings).
    """
    import warnings

    from hf_posbias.analysis.audit_evidence import evidence_moving_section
    from hf_posbias.errors import InputError
    from hf_posbias.evaluation.reports.report import (
        AuditContext,
        register_audit_section,
        write_audit_report,
    )
    from hf_posbias.evaluation.runs.mteb_models import load_mteb_model
    from hf_posbias.evaluation.runs.reversal import mirror_reversal
    from hf_posbias.evaluation.runs.runner import evaluate_model, load_tasks
    from hf_posbias.shards import write_json

    s = settings
    out = Path(s.out)
    task_objects = load_tasks(s.task, scoring=s.scoring, top_k=s.top_k)
    # Loaded once: the evaluation and the reversal run the same model.
    loaded = load_mteb_model(s.model, device=s.device, settings=s, remedy=s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        summaries = evaluate_model(
            loaded, task_objects, **s.evaluate_kwargs(), show_progress=show_progress
        )
    ctx = AuditContext(
        model=s.model,
        out_dir=out,
        summaries=summaries,
        loaded=loaded,
        tasks=task_objects,
        progress=s.progress,
    )
    if s.reversal:
        for task in task_objects:
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
