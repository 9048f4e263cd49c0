"""The corpus: where documents come from (:mod:`~hf_posbias.corpus.sources`) and what a
document is, with its length bin and segments (:mod:`~hf_posbias.corpus.documents`)."""
