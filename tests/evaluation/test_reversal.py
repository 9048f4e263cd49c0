"""Mirror reversal: segment arithmetic, origin groups, derived folders, Δrev with BM25."""

from __future__ import annotations

import pytest
from task_fixtures import wiki_task

from hf_posbias.corpus.documents import segment_spans
from hf_posbias.errors import InputError
from hf_posbias.evaluation.runs.reversal import (
    ReversalResult,
    build_reversal_tasks,
    mirror_reversal,
    mirror_text,
    origin_of,
)
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

# Five labelled segments of exactly equal length (17 chars + 1 space).
SEGMENTS = [f"segment{i} alpha{i}{i}{i}" for i in range(1, 6)]
DOC = " ".join(SEGMENTS)


def _span(word: str) -> tuple[int, int]:
    start = DOC.index(word)
    return start, start + len(word)


def test_mirror_text_reverses_five_segments():
    mirrored, spans = mirror_text(DOC)
    assert spans == segment_spans(DOC, 5)
    assert mirrored == " ".join(reversed(SEGMENTS))
    assert sorted(mirrored.split()) == sorted(DOC.split())  # nothing lost, nothing glued


def test_origin_groups():
    spans = segment_spans(DOC, 5)
    assert origin_of(*_span("segment1"), spans) == "front"
    assert origin_of(*_span("alpha222"), spans) == "front"
    assert origin_of(*_span("segment3"), spans) is None  # middle segment
    assert origin_of(*_span("alpha444"), spans) == "back"
    assert origin_of(*_span("alpha555"), spans) == "back"
    # Straddling segments 2|3 belongs to neither group.
    straddle = (DOC.index("alpha222"), DOC.index("segment3") + 3)
    assert origin_of(*straddle, spans) is None
    assert origin_of(-1, -1, spans) is None


def _constructed_task() -> PositionTaskData:
    queries, qrels = [], []
    for i, word in enumerate(["alpha111", "segment2", "segment3", "alpha555", "alpha444"]):
        start, end = _span(word)
        queries.append(
            {
                "id": f"q{i}",
                "text": word,
                "bucket": "all",
                "evidence_start": start,
                "evidence_end": end,
                "doc_length": len(DOC),
            }
        )
        qrels.append({"query_id": f"q{i}", "doc_id": "d1", "score": 1})
    queries.append(
        {
            "id": "qx",
            "text": "alpha",
            "bucket": "all",
            "evidence_start": -1,
            "evidence_end": -1,
            "doc_length": len(DOC),
        }
    )
    qrels.append({"query_id": "qx", "doc_id": "d2", "score": 1})
    return PositionTaskData(
        info=TaskInfo(name="Constructed", description="d", buckets=["all"]),
        corpus=[
            {"id": "d1", "title": "", "text": DOC},
            {"id": "d2", "title": "", "text": "unrelated words only here"},
        ],
        queries=queries,
        qrels=qrels,
    )


def test_build_reversal_tasks_assigns_groups_and_moves_spans(tmp_path):
    split = build_reversal_tasks(_constructed_task(), tmp_path)
    assert (split.n_front, split.n_back) == (2, 2)
    assert split.skipped["middle"] == 1 and split.skipped["no span"] == 1
    original = PositionTaskData.load(split.original)
    mirrored = PositionTaskData.load(split.mirrored)
    assert original.bucket_counts() == mirrored.bucket_counts() == {"front": 2, "back": 2}
    new_doc = next(d["text"] for d in mirrored.corpus if d["id"] == "d1")
    assert new_doc == " ".join(reversed(SEGMENTS))
    for query in mirrored.queries:
        # The evidence is the same string at its new place, now in the opposite group's half.
        assert new_doc[query["evidence_start"] : query["evidence_end"]] == query["text"]
        moved = origin_of(query["evidence_start"], query["evidence_end"], segment_spans(new_doc, 5))
        assert moved == {"front": "back", "back": "front"}[query["bucket"]]


def test_delta_rev_arithmetic():
    r = ReversalResult.from_scores(
        "T", "m", {"front": 0.9, "back": 0.6}, {"front": 0.5, "back": 0.8}, n_front=4, n_back=3
    )
    assert (r.front_after, r.back_after) == (0.5, 0.8)
    assert r.delta_rev == pytest.approx(0.8 - 0.5)
    assert (
        ReversalResult.from_scores("T", "m", {}, {"front": 0.5}, n_front=1, n_back=0).delta_rev
        is None
    )


def test_bm25_is_order_invariant_under_reversal(shared_data, tmp_path):
    folder = wiki_task(shared_data, tmp_path / "task", n_docs=12)
    result = mirror_reversal("bm25", folder, tmp_path / "rev")
    assert result.n_front + result.n_back > 0
    assert result.n_front > 0 and result.n_back > 0
    # Bag-of-words: mirroring moves words, not their counts.
    assert result.front_after == pytest.approx(result.front_before)
    assert result.back_after == pytest.approx(result.back_before)
    assert result.delta_rev == pytest.approx(result.back_after - result.front_after)
    assert (tmp_path / "rev" / "reversal.json").exists()


def test_tasks_without_spans_are_refused(tmp_path):
    data = _constructed_task()
    for q in data.queries:
        q["evidence_start"] = q["evidence_end"] = -1
    with pytest.raises(InputError, match="no query has a character evidence span"):
        build_reversal_tasks(data, tmp_path)
