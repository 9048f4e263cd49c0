"""Bucketing rules: every value in exactly one bucket, boundaries as documented."""

from __future__ import annotations

import math

import pytest

from hf_posbias.errors import InputError
from hf_posbias.tasks.bucketing import (
    POSIR_RELATIVE_20,
    POSIR_TOKEN_LENGTH,
    SQUAD_POSQ,
    THIRDS,
    IntervalBuckets,
    parse_buckets,
    relative_position,
)


def test_thirds_boundaries():
    assert [THIRDS.assign(v) for v in (0, 0.3333, 1 / 3, 0.6666, 2 / 3, 0.99, 1)] == [
        "begin", "begin", "middle", "middle", "end", "end", "end",
    ]  # fmt: skip
    assert THIRDS.assign(-0.01) is None and THIRDS.assign(1.01) is None
    assert THIRDS.assign(math.nan) is None
    # integer offsets: start 1 of 3 chars is exactly 1/3 → middle
    assert THIRDS.assign(relative_position(1, 2, 3)) == "middle"
    assert THIRDS.assign(relative_position(2, 3, 6)) == "middle"


def test_squad_each_start_in_exactly_one_bucket():
    for start in range(0, 3121):
        hits = [b for b in SQUAD_POSQ.labels if SQUAD_POSQ.assign(start) == b]
        assert len(hits) == 1
        lo, hi = (int(x) for x in hits[0].split("-"))
        assert lo <= start < hi or (hi == 3120 and start == 3120)
    assert SQUAD_POSQ.assign(100) == "100-200"
    assert SQUAD_POSQ.assign(3121) is None
    assert "[500, 3120]" in SQUAD_POSQ.rule() and "[0, 100)" in SQUAD_POSQ.rule()


def test_posir_bins_match_pandas_cut():
    import numpy as np
    import pandas as pd

    values = np.concatenate([np.linspace(0, 1, 401), np.random.default_rng(0).random(500)])
    cut = pd.cut(values, bins=np.linspace(0, 1, 21), include_lowest=True)
    expected = list(cut.codes)
    got = [POSIR_RELATIVE_20.labels.index(POSIR_RELATIVE_20.assign(v)) for v in values]
    assert got == expected
    assert POSIR_TOKEN_LENGTH.assign(512) == "0-512"
    assert POSIR_TOKEN_LENGTH.assign(513) == "512-1024"
    assert POSIR_TOKEN_LENGTH.assign(10**6) == "1536+"
    assert POSIR_TOKEN_LENGTH.assign(0) == "0-512"


def test_parse_and_validate():
    rule = parse_buckets("0, 0.25,0.5,1")
    assert rule.labels == ("0-0.25", "0.25-0.5", "0.5-1") and rule.scheme == "relative:0,0.25,0.5,1"
    assert rule.assign(0.25) == "0.25-0.5" and rule.assign(1.0) == "0.5-1"
    assert parse_buckets("posir20") is POSIR_RELATIVE_20
    for bad in ("0,0.5,0.4", "0,a,1", "0,1.5", "0"):
        with pytest.raises(InputError):
            parse_buckets(bad)
    with pytest.raises(InputError, match="labels"):
        IntervalBuckets((0, 1, 2), labels=("a",), unit="chars")
    partial = parse_buckets("0.2,0.8")
    assert partial.assign(0.1) is None and partial.assign(0.5) == "0.2-0.8"


def test_relative_position_anchors():
    assert relative_position(90, 110, 100, "center") == 1.0  # clipped like PosIR
    assert relative_position(20, 40, 100) == 0.2
    with pytest.raises(InputError):
        relative_position(0, 1, 0)
    with pytest.raises(InputError):
        relative_position(0, 1, 10, "middle")  # type: ignore[arg-type]
