"""Verification: stage 3 of the data pipeline (candidates → scored pool).

- :mod:`~hf_posbias.verification.members` — the :class:`PanelMember` protocol, the cross-encoder
  and BM25 members, score normalisations and their ranges;
- :mod:`~hf_posbias.verification.pair_inputs` — cross-encoder pair inputs built from texts
  tokenized once, identical to the tokenizer's (the cross-encoder member's fast path);
- :mod:`~hf_posbias.verification.panel` — :class:`RerankerPanel` (consensus margin, each unique
  pair scored once), the spec parser :func:`parse_panel`, the δ check :func:`check_delta`;
- :mod:`~hf_posbias.verification.report` — :class:`VerificationReport`: YHP26 Table 6, the
  margin strata, retained per bin × position (computed once, shown by the CLI and the cards);
- :mod:`~hf_posbias.verification.stage` — :func:`run_verification`, resumable and shardable;
- :mod:`~hf_posbias.verification.audit` — YHP26's LLM segment audit per margin stratum.

This package imports nothing, so ``from hf_posbias.verification.report import DEFAULT_DELTA``
costs no numpy — ``posbias --help`` stays light; sentence-transformers and bm25s load when a
member needs them.

Example:
    >>> from hf_posbias.verification.panel import parse_panel
    >>> parse_panel("bm25").describe()[0]["normalization"]
    'share'
"""
