#!/usr/bin/env python
"""Pooling ablation: ModernBERT-base × 4 poolings (cls/mean/max/lasttoken) × 4 configurations.

The ablation is a study with pooling as an axis (``studies/yhp26-pooling.yaml``): this script is
``posbias study run studies/yhp26-pooling.yaml`` with its flags passed on, so it trains, evaluates
every checkpoint and every pooled untrained base, and reports PSI by pooling × configuration.

Usage::

    python scripts/pooling_ablation.py --out pooling --dry-run --plan-for h100
    python scripts/pooling_ablation.py --out pooling --data out/train --tasks SQuAD-PosQ
"""

from __future__ import annotations

import sys
from pathlib import Path

from hf_posbias.cli import main

SPEC = Path(__file__).resolve().parents[1] / "studies" / "yhp26-pooling.yaml"

if __name__ == "__main__":
    sys.exit(main(["study", "run", str(SPEC), *sys.argv[1:]]))
