"""One builder per source; each turns raw annotations into a position task folder.

See :mod:`hf_posbias.tasks.benchmarks` for the public entry points.
"""
