"""Numbers from runs: PSI, per-query IR metrics, per-position protocols, bootstrap intervals,
paired comparisons, level and trend statistics, summaries.
"""

PAIRED_TESTS: tuple[str, ...] = ("bootstrap", "randomization", "t-test")
"""The paired tests of :func:`hf_posbias.statistics.uncertainty.paired_comparison`, in one place:
the ``--method`` choices of ``posbias compare`` and of every listwise verb with a paired test
(``listwise compare-tests``, ``shuffle-eval``, ``reranker-remedies``) are read from here, so a new
test is one edit here (and its code in ``uncertainty``). Kept here, not in ``uncertainty``, so that
building the CLI parser imports no numpy."""
