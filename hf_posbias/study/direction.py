"""The direction check over any bucket scheme: a skewed configuration's own region and peak.

YHP26's direction check asks, for each skewed training configuration (begin, middle, end), whether
it raises the score of its own part of the document against the untrained base, and where its
curve peaks. On a thirds task the region is the bucket of that name; on any other scheme
(SQuAD-PosQ's six character buckets, PosIR's 20 relative-position bins) the ordered buckets are
cut into three contiguous thirds, bucket ``k`` of ``n`` in third ``⌊3k / n⌋``, and the region's
queries are pooled.

Example:
    >>> own_region(["begin", "middle", "end"], "end")
    ['end']
    >>> squad = ["0-100", "100-200", "200-300", "300-400", "400-500", "500-3120"]
    >>> own_region(squad, "begin"), own_region(squad, "end")
    (['0-100', '100-200'], ['400-500', '500-3120'])
    >>> region_of(squad, "300-400")
    'middle'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hf_posbias.sampling.configs import PAPER_CONFIG_NAMES

REGIONS: tuple[str, ...] = PAPER_CONFIG_NAMES[:3]
"""begin, middle, end: the regions (and the skewed configurations that target them)."""


def region_of(buckets: Sequence[str], bucket: str) -> str:
    """The third of the ordered ``buckets`` that ``bucket`` lies in (its own name on a thirds
    task)."""
    if bucket in REGIONS and set(REGIONS) <= set(buckets):
        return bucket
    return REGIONS[3 * list(buckets).index(bucket) // len(buckets)]


def own_region(buckets: Sequence[str], config: str) -> list[str]:
    """The buckets of ``config``'s own region (:func:`region_of` equal to ``config``)."""
    return [b for b in buckets if region_of(buckets, b) == config]


def pooled(
    scores: Mapping[str, Mapping[str, float]], region: Sequence[str], name: str
) -> dict[str, dict[str, float]]:
    """The per-query scores of the ``region``'s buckets as one bucket ``name`` (keys
    ``<bucket>/<query>``, so a query listed in two buckets counts in each).

    Example:
        >>> pooled({"a": {"q1": 1.0}, "b": {"q2": 0.5}, "c": {"q3": 0.0}}, ["a", "b"], "begin")
        {'begin': {'a/q1': 1.0, 'b/q2': 0.5}}
    """
    return {name: {f"{b}/{q}": v for b in region for q, v in scores.get(b, {}).items()}}
