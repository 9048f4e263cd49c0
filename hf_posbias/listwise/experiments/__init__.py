"""Listwise experiments: candidate lists and the first stage, the controlled 1…k test, original vs
shuffled order, propensities, aggregation, comparisons, plots and rank_llm exchange files.
"""
