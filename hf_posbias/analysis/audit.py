"""``posbias analyze audit`` as a library call: every position measurement of one model, one report.

:func:`audit_model` evaluates the model on its tasks (:func:`~hf_posbias.evaluation.runs.runner.
evaluate_model`), runs the mirror-reversal diagnostic on each task with character evidence spans
(:func:`~hf_posbias.evaluation.runs.reversal.mirror_reversal`; a task without spans is noted, not
failed) and writes ``audit.md``, ``audit.html`` and ``reversal.json`` in ``out``.

Example:
    >>> from hf_posbias.evaluation.evaluation_settings import ModelAuditSettings
    >>> # ctx, md_path, html_path = audit_model("bm25", ["tasks/scifact-evidence"], out="runs/a")
    >>> # the same audit from the verb's settings:
    >>> s = ModelAuditSettings(model="bm25", task=("tasks/scifact-evidence",), out="runs/a")
    >>> # audit_model(s.model, s.task, **s.evaluate_kwargs(), reversal=s.reversal)
    >>> s.reversal
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.evaluation.evaluation_settings import CORPUS_CHUNK_SIZE
from hf_posbias.evaluation.runs.runner import BOOTSTRAP_SEED, DEFAULT_BOOTSTRAP
from hf_posbias.tasks.benchmark_registry import DEFAULT_TOP_K

if TYPE_CHECKING:
    from hf_posbias.evaluation.reports.report import AuditContext
    from hf_posbias.evaluation.runs.remedies import RemedySettings
    from hf_posbias.modeling.resolve import ModelSettings


def audit_model(
    model: str,
    tasks: Sequence[str | Path | Any],
    *,
    out: str | Path,
    reversal: bool = True,
    scoring: str = "default",
    top_k: int = DEFAULT_TOP_K,
    batch_size: int = 32,
    bootstrap: int | None = DEFAULT_BOOTSTRAP,
    seed: int = BOOTSTRAP_SEED,
    progress: bool = True,
    show_progress: bool = False,
    device: str | None = None,
    model_options: ModelSettings | None = None,
    remedy: RemedySettings | None = None,
    exclude_truncated: bool = False,
    corpus_chunk_size: int = CORPUS_CHUNK_SIZE,
) -> tuple[AuditContext, Path, Path]:
    """Audit ``model`` on ``tasks``; returns (context, audit.md, audit.html).

    ``reversal``: run the mirror-reversal diagnostic. The other keywords are those of
    :func:`~hf_posbias.evaluation.runs.runner.evaluate_model` (the verb's
    :class:`~hf_posbias.evaluation.evaluation_settings.ModelAuditSettings` give them:
    ``evaluate_kwargs()``). The summaries carry the evaluation's warnings (they are not also
    emitted as Python warnings). The former call, ``audit_model(settings)``, still works for
    one release (``DeprecationWarning``).
    """
    import warnings

    from hf_posbias.analysis.audit_evidence import evidence_moving_section
    from hf_posbias.errors import InputError
    from hf_posbias.evaluation.evaluation_settings import check_run_options
    from hf_posbias.evaluation.reports.report import (
        AuditContext,
        register_audit_section,
        write_audit_report,
    )
    from hf_posbias.evaluation.runs.models import load_model
    from hf_posbias.evaluation.runs.reversal import mirror_reversal
    from hf_posbias.evaluation.runs.runner import evaluate_model, load_tasks
    from hf_posbias.shards import write_json

    check_run_options(batch_size=batch_size, top_k=top_k, scoring=scoring, bootstrap=bootstrap)
    out = Path(out)
    task_objects = load_tasks(tasks, scoring=scoring, top_k=top_k)
    loaded = load_model(model, device=device, settings=model_options, remedy=remedy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        summaries = evaluate_model(
            loaded,
            task_objects,
            out=out,
            batch_size=batch_size,
            bootstrap=bootstrap,
            seed=seed,
            progress=progress,
            show_progress=show_progress,
            exclude_truncated=exclude_truncated,
            corpus_chunk_size=corpus_chunk_size,
        )
    ctx = AuditContext(
        model=model,
        out_dir=out,
        summaries=summaries,
        loaded=loaded,
        tasks=task_objects,
        progress=progress,
    )
    if reversal:
        for task in task_objects:
            name = task.metadata.name
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
            try:
                ctx.reversals.append(
                    mirror_reversal(
                        loaded,
                        task,
                        out / "reversal" / safe,
                        batch_size=batch_size,
                        top_k=top_k,
                        progress=progress,
                    )
                )
            except InputError as err:
                # A task without spans is a limitation of that task, not a failed audit.
                ctx.reversal_skipped[name] = str(err)
    write_json(out / "reversal.json", [r.to_dict() for r in ctx.reversals])
    register_audit_section(evidence_moving_section)
    md_path, html_path = write_audit_report(ctx)
    return ctx, md_path, html_path
