"""Representation analyses: evidence moving, segment profiles, pooling ablation."""
