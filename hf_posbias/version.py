"""The package's version: the one place it is written (``pyproject.toml`` reads it from here).

Example:
    >>> from hf_posbias.version import __version__
    >>> __version__.count(".")
    2
"""

from __future__ import annotations

__version__ = "0.2.0"
