#!/usr/bin/env python
"""Pooling ablation: ModernBERT-base × 4 poolings (cls/mean/max/lasttoken) × 4 configurations.

Usage::

    python scripts/pooling_ablation.py --data out/train --out checkpoints/pooling --dry-run

Same mechanics as ``run_matrix.py`` (resumable, ``--shard i/n``, extra flags passed on).
"""

from __future__ import annotations

import sys

from hf_posbias.training.matrix import ABLATION_POOLINGS, PAPER_CONFIGS, matrix_main

if __name__ == "__main__":
    sys.exit(
        matrix_main(
            None,
            "pooling_ablation.py",
            __doc__.splitlines()[0],
            ["modernbert-base"],
            PAPER_CONFIGS,
            ABLATION_POOLINGS,
        )
    )
