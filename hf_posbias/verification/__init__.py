"""Verification: stage 3 of the data pipeline (candidates → scored pool).

- :mod:`~hf_posbias.verification.members` — the :class:`PanelMember` protocol, the cross-encoder
  and BM25 members, score normalisations and their ranges;
- :mod:`~hf_posbias.verification.panel` — :class:`RerankerPanel` (consensus margin, each unique
  pair scored once), the spec parser :func:`parse_panel`, the δ check :func:`check_delta`;
- :mod:`~hf_posbias.verification.report` — :class:`VerificationReport`: YHP26 Table 6, the
  margin strata, retained per bin × position (computed once, shown by the CLI and the cards);
- :mod:`~hf_posbias.verification.stage` — :func:`run_verification`, resumable and shardable;
- :mod:`~hf_posbias.verification.audit` — YHP26's LLM segment audit per margin stratum.

Nothing is imported here until a name is used (each name loads its module on first access), so
``from hf_posbias.verification.report import DEFAULT_DELTA`` costs no numpy — ``posbias --help``
stays light; sentence-transformers and bm25s load when a member needs them.

Example:
    >>> from hf_posbias.verification import parse_panel
    >>> parse_panel("bm25").describe()[0]["normalization"]
    'share'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hf_posbias.verification.audit import (
        AUDIT_SCHEMA,
        AuditReport,
        AuditStratum,
        audit_segments,
    )
    from hf_posbias.verification.judge import (
        RELEVANCE_0_4,
        SEGMENT_AUDIT,
        JudgePrompt,
        judge_pairs,
        parse_judge_reply,
        parse_relevance_score,
        parse_yes_no,
    )
    from hf_posbias.verification.members import (
        BM25_NORMALIZATIONS,
        CROSS_ENCODER_NORMALIZATIONS,
        BM25Member,
        CrossEncoderMember,
        PanelMember,
        normalize_scores,
        score_range,
    )
    from hf_posbias.verification.panel import (
        PAPER_PANEL,
        PanelScores,
        RerankerPanel,
        check_delta,
        consensus_margin,
        margin_ceiling,
        parse_panel,
    )
    from hf_posbias.verification.report import (
        DEFAULT_DELTA,
        REPORT_THRESHOLDS,
        VerificationReport,
        margin_stratum,
        report_thresholds,
        stratum_labels,
    )
    from hf_posbias.verification.stage import load_scored_pool, run_verification

_HOME: dict[str, str] = {
    "AUDIT_SCHEMA": "audit",
    "AuditReport": "audit",
    "AuditStratum": "audit",
    "audit_segments": "audit",
    "RELEVANCE_0_4": "judge",
    "SEGMENT_AUDIT": "judge",
    "JudgePrompt": "judge",
    "judge_pairs": "judge",
    "parse_judge_reply": "judge",
    "parse_relevance_score": "judge",
    "parse_yes_no": "judge",
    "BM25_NORMALIZATIONS": "members",
    "CROSS_ENCODER_NORMALIZATIONS": "members",
    "BM25Member": "members",
    "CrossEncoderMember": "members",
    "PanelMember": "members",
    "normalize_scores": "members",
    "score_range": "members",
    "PAPER_PANEL": "panel",
    "PanelScores": "panel",
    "RerankerPanel": "panel",
    "check_delta": "panel",
    "consensus_margin": "panel",
    "margin_ceiling": "panel",
    "parse_panel": "panel",
    "DEFAULT_DELTA": "report",
    "REPORT_THRESHOLDS": "report",
    "VerificationReport": "report",
    "margin_stratum": "report",
    "report_thresholds": "report",
    "stratum_labels": "report",
    "load_scored_pool": "stage",
    "run_verification": "stage",
}
"""Each exported name → the submodule that defines it (imported on first access)."""


def __getattr__(name: str) -> Any:
    """Import the submodule of an exported name on first use (PEP 562)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AUDIT_SCHEMA",
    "RELEVANCE_0_4",
    "SEGMENT_AUDIT",
    "JudgePrompt",
    "judge_pairs",
    "parse_relevance_score",
    "BM25_NORMALIZATIONS",
    "CROSS_ENCODER_NORMALIZATIONS",
    "DEFAULT_DELTA",
    "PAPER_PANEL",
    "REPORT_THRESHOLDS",
    "AuditReport",
    "AuditStratum",
    "BM25Member",
    "CrossEncoderMember",
    "PanelMember",
    "PanelScores",
    "RerankerPanel",
    "VerificationReport",
    "audit_segments",
    "check_delta",
    "consensus_margin",
    "load_scored_pool",
    "margin_ceiling",
    "margin_stratum",
    "normalize_scores",
    "parse_panel",
    "parse_judge_reply",
    "parse_yes_no",
    "report_thresholds",
    "run_verification",
    "score_range",
    "stratum_labels",
]
