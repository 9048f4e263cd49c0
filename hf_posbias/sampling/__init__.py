"""Controlled sampling of training sets: the position configurations
(:mod:`~hf_posbias.sampling.configs`) and the seeded draw (:mod:`~hf_posbias.sampling.draw`)."""
