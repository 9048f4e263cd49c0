"""hf-posbias's own cache folder (mteb registry names, dequantised GGUF copies)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


CACHE_ENV = "POSBIAS_CACHE"
"""Environment variable naming hf-posbias's own cache folder (default ``~/.cache/hf_posbias``)."""


def cache_root() -> Path:
    """hf-posbias's cache folder: ``$POSBIAS_CACHE`` or ``~/.cache/hf_posbias``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hf_posbias").expanduser()
