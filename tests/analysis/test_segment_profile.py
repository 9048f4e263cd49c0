"""Segment profile on real Wikipedia text (all-MiniLM-L6-v2) and its bookkeeping."""

from __future__ import annotations

import math

import pytest

from hf_posbias.analysis.evidence_cases import sentence_boundaries
from hf_posbias.analysis.segment_profile import (
    SegmentProfile,
    document_profile,
    profile_table,
    segment_profile,
)
from hf_posbias.errors import InputError


def wikipedia_leads(shared_data, count: int, max_chars: int = 900) -> list[tuple[str, str]]:
    """The first ~900 characters (cut at a sentence start) of real Wikipedia articles."""
    from hf_posbias.corpus.sources import read_wikiextractor

    docs = []
    for record in read_wikiextractor(shared_data / "wikipedia_enwiki_wikiextractor"):
        text = record["text"]
        if len(text) < 2 * max_chars:
            continue
        cut = max(c for c in sentence_boundaries(text) if c <= max_chars)
        docs.append((record["id"], text[:cut].strip()))
        if len(docs) == count:
            break
    return docs


def test_segment_profile_on_wikipedia_with_minilm(shared_data, minilm_path) -> None:
    from hf_posbias.modeling.loaders import load_sentence_transformer

    model = load_sentence_transformer(minilm_path, device="cpu")
    calls: list[int] = []
    original = model.encode

    def counting_encode(texts, **kwargs):
        calls.append(len(texts))
        return original(texts, **kwargs)

    model.encode = counting_encode
    docs = wikipedia_leads(shared_data, 6)
    assert len(docs) == 6
    docs.append(("tiny", "Too short."))
    profile = segment_profile(model, docs, n=10, label="minilm", progress=False)
    assert profile.n_docs == 6 and profile.skipped == {"too_short_for_segments": 1}
    assert calls == [11] * 6  # document + 10 segments in one call per document
    assert len(profile.mean) == 10
    assert all(math.isfinite(v) and 0.0 < v < 1.0 for v in profile.mean)
    # A segment is a tenth of the document: similar but never identical to the whole.
    assert max(profile.mean) < 0.99
    assert profile.range == pytest.approx(max(profile.mean) - min(profile.mean))
    assert profile.range > 0
    # YHP26 App. C's range: segments 1–9 of the ten, the last left out.
    assert profile.app_c_segments == (1, 9)
    assert profile.app_c_range == pytest.approx(max(profile.mean[:9]) - min(profile.mean[:9]))
    row = profile.to_row()
    assert row["documents"] == 6 and row["peak"] == profile.peak_position
    assert row["app_c_range"] == pytest.approx(profile.app_c_range, abs=1e-6)
    # The same document alone reproduces its row of the average.
    single = document_profile(model, docs[0][1], n=10)
    assert single == pytest.approx(profile.per_document[0][1])


def test_profile_table_and_errors() -> None:
    profile = SegmentProfile("m", (0.7, 0.5, 0.6), (0.0, 0.0, 0.0), 2)
    assert profile.peak_position == "p1" and profile.lowest_position == "p2"
    assert "| m | 2 | 0.7000 | 0.5000 | 0.6000 | p1 | p2 | 0.2000 | 0.2000 |" in profile_table(
        [profile]
    )


def test_app_c_range_leaves_the_last_segment_out() -> None:
    # A profile whose last segment drops: the range over all ten sees the drop, App. C's range
    # over segments 1–9 does not.
    curve = (0.80, 0.78, 0.76, 0.75, 0.74, 0.74, 0.73, 0.72, 0.70, 0.40)
    profile = SegmentProfile("m", curve, (0.0,) * 10, 5)
    assert profile.range == pytest.approx(0.40)
    assert profile.app_c_range == pytest.approx(0.10)
    table = profile_table([profile])
    assert "range p1–p9 (App. C) |" in table.splitlines()[0]
    assert table.splitlines()[-1].endswith("| 0.4000 | 0.1000 |")


def test_no_usable_document_is_an_error(tiny_sentence_transformer) -> None:
    from hf_posbias.modeling.loaders import load_sentence_transformer

    model = load_sentence_transformer(tiny_sentence_transformer, device="cpu")
    with pytest.raises(InputError, match="no usable documents for tiny"):
        segment_profile(model, [("a", "short")], n=10, label="tiny", progress=False)
