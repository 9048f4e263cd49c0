#!/usr/bin/env python
"""The paper's training matrix: 8 bases × 4 position configurations = 32 runs.

Usage::

    python scripts/run_matrix.py --data out/train --out checkpoints --dry-run   # 32 commands
    python scripts/run_matrix.py --data out/train --out checkpoints --dry-run --plan-for h100 \
        --throughput throughput.json   # settings after the preflight + projected hours
    python scripts/run_matrix.py --data out/train --out checkpoints --shard 0/4 --num-processes 8

Finished runs are skipped on rerun (resumable); extra flags (``--precision bf16``,
``--global-batch 256`` …) go to every run and are checked before anything is launched.
``throughput.json`` comes from ``benchmarks/train_throughput.py --json throughput.json`` run on
the training GPU.
"""

from __future__ import annotations

import sys

from hf_posbias.modeling.bases import PAPER_MODELS
from hf_posbias.training.matrix import PAPER_CONFIGS, matrix_main

if __name__ == "__main__":
    sys.exit(
        matrix_main(None, "run_matrix.py", __doc__.splitlines()[0], PAPER_MODELS, PAPER_CONFIGS)
    )
