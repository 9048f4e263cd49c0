"""The three target positions of YHP26, the names every room uses for a document's thirds.

A ground-floor module (it imports nothing of the package): the corpus, the tasks, training and
the face all read the names from here; ``hf_posbias.POSITIONS`` is this tuple.

Example:
    >>> from hf_posbias.positions import POSITIONS
    >>> POSITIONS
    ('begin', 'middle', 'end')
"""

from __future__ import annotations

POSITIONS: tuple[str, str, str] = ("begin", "middle", "end")
"""The three target positions of YHP26: character thirds of a document."""
