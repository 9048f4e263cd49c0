"""Hugging Face ``evaluate`` metric modules shipped with hf-posbias (loaded by local path).

Example:
    >>> from hf_posbias.statistics.metrics import psi_metric_path
    >>> psi_metric_path().name
    'psi'
"""

from __future__ import annotations

from pathlib import Path


def psi_metric_path() -> Path:
    """Folder of the ``psi`` metric: ``evaluate.load(str(psi_metric_path()))`` works offline."""
    return Path(__file__).resolve().parent / "psi"
