"""Listwise rerankers: the protocol, FIRST scoring, generation mode, the pointwise control,
prompts, identifiers, the sliding window and loading by name.
"""
