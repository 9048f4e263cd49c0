"""hf-posbias: measure and control position bias in dense retrievers.

Heavy libraries (torch, sentence-transformers, mteb) are imported lazily by the sub-modules that
need them, so ``import hf_posbias`` and ``posbias --help`` stay instant.
"""

from __future__ import annotations

__version__ = "0.1.0"

POSITIONS: tuple[str, str, str] = ("begin", "middle", "end")
"""The three target positions of YHP26: character thirds of a document."""

__all__ = ["POSITIONS", "__version__"]

# Former module paths (before the rooms-by-job layout) keep importing, with a warning.
from hf_posbias.deprecation import install_moved_modules  # noqa: E402

install_moved_modules()
