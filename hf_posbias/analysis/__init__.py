"""Representation analyses: evidence moving, segment profiles, pooling ablation (YHP26 §6).

- :mod:`hf_posbias.analysis.evidence_moving` — move a query's evidence to ``p1…pn``, cosine per
  slot, peak / lowest / Δ×10³; dataset runs over SciFact, training sets or user JSONL.
- :mod:`hf_posbias.analysis.segment_profile` — cosine(document, segment i), query-free.
- :mod:`hf_posbias.analysis.pooling` — one transformer under cls / mean / max / last-token pooling.
- :mod:`hf_posbias.analysis.plots` — matplotlib figures (mean ± standard error per model).

Sub-modules import torch / sentence-transformers only inside functions, so importing them is cheap.
"""
