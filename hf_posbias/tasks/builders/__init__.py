"""One builder per source; each turns raw annotations into a position task folder.

The benchmark registry (:mod:`hf_posbias.tasks.benchmark_registry`) names them.
"""
