"""Panel members: score normalisations and their ranges, BM25 against bm25s and on real text."""

from __future__ import annotations

import math

import numpy as np
import pytest
from verification_rows import wikipedia_candidates

from hf_posbias.errors import InputError
from hf_posbias.positions import POSITIONS
from hf_posbias.verification.members import BM25Member, normalize_scores, score_range
from hf_posbias.verification.panel import RerankerPanel


def test_normalizations() -> None:
    x = np.array([[0.0, 1.0, 3.0], [0.0, 0.0, 0.0]])
    assert normalize_scores(x, "share").tolist() == [[0.0, 0.25, 0.75], [0.0, 0.0, 0.0]]
    assert normalize_scores(x, "saturate", 1.0)[0].tolist() == [0.0, 0.5, 0.75]
    soft = normalize_scores(x, "softmax")
    assert soft.sum(axis=1) == pytest.approx([1.0, 1.0])
    assert soft[1] == pytest.approx([1 / 3] * 3)
    assert normalize_scores(np.array([[0.0, 2.0, -2.0]]), "sigmoid")[0] == pytest.approx(
        [0.5, 1 / (1 + np.exp(-2)), 1 / (1 + np.exp(2))]
    )
    with pytest.raises(InputError):
        normalize_scores(np.array([[-1.0, 0.0, 1.0]]), "share")
    with pytest.raises(InputError):
        normalize_scores(x, "zscore")


def test_every_normalisation_stays_inside_its_stated_range() -> None:
    raw = np.array([[-30.0, 0.0, 4.0], [0.0, 0.0, 0.0], [2.0, 7.0, 1.0]])
    for method in ("sigmoid", "softmax"):
        lo, hi = score_range(method)
        out = normalize_scores(raw, method)
        assert (out >= lo).all() and (out <= hi).all(), method
    for method in ("share", "saturate"):
        lo, hi = score_range(method)
        out = normalize_scores(np.abs(raw), method)
        assert (out >= lo).all() and (out <= hi).all(), method
    assert score_range("none") == (-math.inf, math.inf)
    with pytest.raises(InputError, match="unknown normalisation"):
        score_range("zscore")


def test_bm25_matches_bm25s_scores() -> None:
    import bm25s

    corpus = [
        "The cat sat on the mat while the dog slept.",
        "Dogs and cats are common household pets.",
        "Quantum mechanics describes particles at small scales.",
        "The mat was red and the cat was black.",
    ]
    member = BM25Member(normalization="none")
    member.fit(corpus)
    query = "black cat on a red mat"
    ours = member.score_pairs([query] * len(corpus), corpus)
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
    )
    theirs = retriever.get_scores(
        bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
    )
    assert ours == pytest.approx(theirs, rel=1e-5)
    assert ours[2] == 0.0 and ours[3] > ours[0] > 0


def test_bm25_prefers_the_segment_holding_the_query_on_wikipedia(shared_data) -> None:
    rows = wikipedia_candidates(shared_data, n_docs=40)
    assert len(rows) >= 90
    panel = RerankerPanel([BM25Member()])
    panel.prepare(rows)
    result = panel.score(rows, progress=False)
    targets = [POSITIONS.index(r["target_position"]) for r in rows]
    top = result.raw[:, 0, :].argmax(axis=1)
    agree = float(np.mean(top == np.array(targets)))
    # The query is a sentence of the target segment: BM25 must rank that segment first.
    assert agree >= 0.95, agree
    assert (result.normalized >= 0).all() and (result.normalized <= 1).all()
    # A query taken from another document's segment scores lower against these segments.
    other = dict(rows[0], query=rows[-1]["query"])
    assert panel.score([other], False).raw[0, 0].max() < result.raw[0, 0].max()
