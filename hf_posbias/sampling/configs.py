"""Position configurations: which begin:middle:end mix a training set is drawn with.

YHP26's four (``begin``, ``middle``, ``end``, ``uniform``) and any ``b:m:e`` ratio, each with
the name its Hub config and training run go by. Drawing the sets is
:mod:`hf_posbias.sampling.draw`.

Example:
    >>> from hf_posbias.sampling.configs import PositionConfig
    >>> PositionConfig.parse("U").label, PositionConfig.parse("50:25:25").name
    ('33:33:33', 'r50-25-25')
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hf_posbias.errors import InputError
from hf_posbias.positions import POSITIONS

_ALIASES = {"b": "begin", "m": "middle", "e": "end", "u": "uniform"}
# The canonical name of a custom ratio: "r" + weights joined by "-", "." written "p"
# (50:25:25 → r50-25-25, 0.5:0.25:0.25 → r0p5-0p25-0p25): safe as a Hub config and folder name.
_CUSTOM_NAME = re.compile(r"^r([0-9p]+)-([0-9p]+)-([0-9p]+)$")


def _fmt_weight(x: float) -> str:
    return f"{x:g}".replace(".", "p")


@dataclass(frozen=True)
class PositionConfig:
    """A position configuration: its name, begin:middle:end weights and canonical label.

    The one home of "which configuration": sampling draws with it, the pipeline names its
    training sets by :attr:`name` (the Hub config name), training looks the same name up
    (``posbias train --config 50:25:25`` finds what ``posbias data build --config 50:25:25`` wrote),
    and cards and the training matrix state :attr:`label`. :meth:`parse` accepts every
    spelling: ``begin``/``B``, ``middle``/``M``, ``end``/``E``, ``uniform``/``U``, ``b:m:e`` and
    a canonical name such as ``r50-25-25``.

    Attributes:
        name: the configuration (and Hub config) name: ``begin``, ``uniform``, ``r50-25-25`` …
        weights: begin, middle, end weights (any non-negative scale).
        label: the canonical ``b:m:e`` label, as YHP26 writes it (``uniform`` is ``33:33:33``).

    Example:
        >>> PositionConfig.parse("B").name, PositionConfig.parse("U").label
        ('begin', '33:33:33')
        >>> PositionConfig.parse("50:25:25").name
        'r50-25-25'
        >>> PositionConfig.parse("r50-25-25") == PositionConfig.parse("50:25:25")
        True
        >>> PositionConfig.parse("33:33:33") is UNIFORM  # YHP26 §3 writes uniform this way
        True
    """

    name: str
    weights: tuple[float, float, float]
    label: str

    @classmethod
    def parse(cls, text: str | PositionConfig) -> PositionConfig:
        """The configuration a user wrote (see the class docstring); one-line error otherwise."""
        if isinstance(text, PositionConfig):
            return text
        if not isinstance(text, str) or not text.strip():
            raise InputError(
                "position configuration is empty: give begin, middle, end, uniform or b:m:e"
            )
        key = text.strip().lower()
        key = _ALIASES.get(key, key)
        if key in _BY_NAME:
            return _BY_NAME[key]
        custom = _CUSTOM_NAME.match(key)
        parts = [p.replace("p", ".") for p in custom.groups()] if custom else key.split(":")
        if len(parts) != len(POSITIONS):
            from hf_posbias.suggestions import suggest

            raise InputError(
                f"position configuration {text!r}{suggest(key, _BY_NAME)} is not begin, middle, "
                "end, uniform (B/M/E/U) or three numbers b:m:e such as 50:25:25"
            )
        try:
            weights = tuple(float(p) for p in parts)
        except ValueError:
            raise InputError(f"position configuration {text!r}: b:m:e must be numbers") from None
        if any(not math.isfinite(w) or w < 0 for w in weights):
            raise InputError(
                f"position configuration {text!r}: weights must be finite and non-negative"
            )
        total = sum(weights)
        if total <= 0:
            raise InputError(
                f"position configuration {text!r}: at least one weight must be positive"
            )
        # A custom ratio that equals a preset's distribution is the preset, so the same data
        # never appears under two configuration names.
        for preset in PAPER_CONFIGS:
            ref = sum(preset.weights)
            if all(math.isclose(w / total, p / ref) for w, p in zip(weights, preset.weights)):
                return preset
        name = "r" + "-".join(_fmt_weight(w) for w in weights)
        label = ":".join(f"{w:g}" for w in weights)
        return cls(name, weights, label)  # type: ignore[arg-type]

    @property
    def distribution(self) -> str:
        """The canonical ``b:m:e`` label (alias of :attr:`label`)."""
        return self.label

    def counts(self, budget: int) -> dict[str, int]:
        """Examples per position for one bin: ``floor(budget × w / Σw)``, at least 1 where w > 0.

        The floor is YHP26 §3's rule (8,189 → 2,729 per position for uniform). A weighted
        position is never rounded down to nothing: on a small pool (budget 2, say) a uniform set
        still gets one example per position instead of none.

        Example:
            >>> UNIFORM.counts(8189)
            {'begin': 2729, 'middle': 2729, 'end': 2729}
            >>> UNIFORM.counts(2)
            {'begin': 1, 'middle': 1, 'end': 1}
        """
        total = sum(self.weights)
        # Integer arithmetic where possible so 8189 × 1 / 3 floors exactly (no 2728.9999).
        out = {}
        for pos, w in zip(POSITIONS, self.weights):
            if float(w).is_integer() and float(total).is_integer():
                out[pos] = (budget * int(w)) // int(total)
            else:
                out[pos] = math.floor(budget * w / total + 1e-9)
            if w > 0 and budget > 0:
                out[pos] = max(1, out[pos])
        return out


BEGIN = PositionConfig("begin", (100.0, 0.0, 0.0), "100:0:0")
"""YHP26's B: every example targets the beginning."""
MIDDLE = PositionConfig("middle", (0.0, 100.0, 0.0), "0:100:0")
"""YHP26's M: every example targets the middle."""
END = PositionConfig("end", (0.0, 0.0, 100.0), "0:0:100")
"""YHP26's E: every example targets the end."""
UNIFORM = PositionConfig("uniform", (1.0, 1.0, 1.0), "33:33:33")
"""YHP26's U: a third of each bin's budget per position."""
PAPER_CONFIGS: tuple[PositionConfig, ...] = (BEGIN, MIDDLE, END, UNIFORM)
"""YHP26's four configurations B, M, E, U, in its order (§3, Table 3)."""
PAPER_CONFIG_NAMES: tuple[str, ...] = tuple(c.name for c in PAPER_CONFIGS)
"""Their names: ``("begin", "middle", "end", "uniform")`` (CLI defaults, the training matrix)."""
_BY_NAME = {c.name: c for c in PAPER_CONFIGS}


def config_label(text: str) -> str:
    """The canonical ``b:m:e`` label of a configuration, ``""`` for any other name (``ips``).

    Example:
        >>> config_label("uniform"), config_label("50:25:25"), config_label("ips")
        ('33:33:33', '50:25:25', '')
    """
    try:
        return PositionConfig.parse(text).label
    except InputError:
        return ""
