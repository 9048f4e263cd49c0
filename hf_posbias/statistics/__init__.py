"""Numbers from runs: PSI, per-query IR metrics, per-position protocols, bootstrap intervals,
paired comparisons, level and trend statistics, summaries.
"""
