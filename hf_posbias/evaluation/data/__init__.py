"""Position tasks on disk and in mteb: the task-folder format, bucketing rules, the benchmark
registry, plain BEIR / MS MARCO folders and the mteb task classes.
"""
