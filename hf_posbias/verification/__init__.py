"""Verification: stage 3 of the data pipeline (candidates → scored pool).

- :mod:`~hf_posbias.verification.members` — the :class:`PanelMember` protocol, the cross-encoder
  and BM25 members, score normalisations and their ranges;
- :mod:`~hf_posbias.verification.panel` — :class:`RerankerPanel` (consensus margin, each unique
  pair scored once), the spec parser :func:`parse_panel`, the δ check :func:`check_delta`;
- :mod:`~hf_posbias.verification.report` — :class:`VerificationReport`: YHP26 Table 6, the
  margin strata, retained per bin × position (computed once, shown by the CLI and the cards);
- :mod:`~hf_posbias.verification.stage` — :func:`run_verification`, resumable and shardable;
- :mod:`~hf_posbias.verification.audit` — YHP26's LLM segment audit per margin stratum.

Only numpy is imported here; sentence-transformers and bm25s load when a member needs them.

Example:
    >>> from hf_posbias.verification import parse_panel
    >>> parse_panel("bm25").describe()[0]["normalization"]
    'share'
"""

from __future__ import annotations

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
