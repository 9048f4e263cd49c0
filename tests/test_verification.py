"""Verification panel: margins, dedup, BM25 on real text, end-to-end run, reports, audit."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from hf_posbias import POSITIONS
from hf_posbias.errors import InputError, ModelLoadError, PosbiasError
from hf_posbias.verification import (
    PAPER_PANEL,
    AuditReport,
    BM25Member,
    CrossEncoderMember,
    RerankerPanel,
    VerificationReport,
    audit_segments,
    consensus_margin,
    margin_stratum,
    normalize_scores,
    parse_panel,
    run_verification,
    stratum_labels,
)

# --------------------------------------------------------------------------- helpers


class TableMember:
    """Returns fixed raw scores looked up by passage text; records every pair it is asked."""

    def __init__(self, name: str, table: dict[str, float], normalization: str = "none") -> None:
        self.name = name
        self.normalization = normalization
        self.table = table
        self.calls: list[tuple[str, str]] = []
        self.batch_size = 2  # small, so the panel splits the work into several calls

    def score_pairs(self, queries: list[str], passages: list[str]) -> np.ndarray:
        self.calls.extend(zip(queries, passages))
        return np.array([self.table[p] for p in passages], dtype=float)


def row(cid: str, target: str, segments: list[str], query: str = "q", length_bin: str = "x"):
    return {
        "candidate_id": cid,
        "doc_id": cid.split("::")[0],
        "title": cid,
        "length_bin": length_bin,
        "target_position": target,
        "query": query,
        "positive": " ".join(segments),
        "segments": segments,
        "answer": "",
        "generator": "test",
        "meta": "{}",
    }


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def wikipedia_candidates(shared_data, n_docs: int) -> list[dict]:
    """Paragraphs of real Wikipedia articles as documents; a query is the longest sentence of
    the target segment (an ICT-style pseudo-query), one candidate per (document, position)."""
    from hf_posbias.corpus import prepare_documents, read_wikiextractor

    records = []
    for article in read_wikiextractor(shared_data / "wikipedia_enwiki_wikiextractor"):
        for i, para in enumerate(p.strip() for p in article["text"].split("\n")):
            if 600 <= len(para) < 1800:
                records.append(
                    {"id": f"{article['id']}-{i}", "title": article["title"], "text": para}
                )
    docs, _ = prepare_documents(records[:n_docs])
    rows = []
    for doc in docs:
        segments = [s.text for s in doc.segments]
        for pos, seg in zip(POSITIONS, segments):
            sentences = [s for s in _SENTENCE.split(seg.strip()) if len(s.split()) >= 5]
            if not sentences:
                continue
            query = max(sentences, key=len)
            cand = row(f"{doc.id}::{pos}", pos, segments, query, doc.length_bin)
            cand["positive"] = doc.text
            rows.append(cand)
    return rows


# --------------------------------------------------------------------------- margins


def test_consensus_margin_hand_computed() -> None:
    scores = np.array([[0.9, 0.2, 0.5], [0.7, 0.6, 0.1]])
    margins, m = consensus_margin(scores, 0)
    assert margins == pytest.approx([0.4, 0.1]) and m == pytest.approx(0.1)
    margins, m = consensus_margin(scores, 2)  # end is not top for either member
    assert margins == pytest.approx([-0.4, -0.6]) and m == pytest.approx(-0.6)
    margins, m = consensus_margin(scores, 1)
    assert margins == pytest.approx([-0.7, -0.1]) and m == pytest.approx(-0.7)


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


def test_panel_margins_through_normalisation() -> None:
    seg = ["alpha", "beta", "gamma"]
    a = TableMember("a", {"alpha": 2.0, "beta": 0.0, "gamma": -1.0}, "sigmoid")
    b = TableMember("b", {"alpha": 1.0, "beta": 3.0, "gamma": 0.0}, "none")
    panel = RerankerPanel([a, b])
    result = panel.score([row("d::begin", "begin", seg), row("d::middle", "middle", seg)], False)
    sig = 1 / (1 + np.exp(-np.array([2.0, 0.0, -1.0])))
    assert result.normalized[0, 0] == pytest.approx(sig)
    assert result.normalized[0, 1] == pytest.approx([1.0, 3.0, 0.0])
    # begin: a: σ(2) − σ(0); b: 1 − 3 = −2 → consensus −2.
    assert result.member_margins[0] == pytest.approx([sig[0] - sig[1], -2.0])
    assert result.margin[0] == pytest.approx(-2.0)
    # middle: a: σ(0) − σ(2) < 0; b: 3 − 1 = 2 → consensus is a's margin.
    assert result.margin[1] == pytest.approx(sig[1] - sig[0])


def test_each_unique_pair_is_scored_once() -> None:
    shared = ["s-begin", "s-middle", "s-end"]
    table = {s: float(i) for i, s in enumerate([*shared, "other-1", "other-2"])}
    member = TableMember("count", table)
    rows = [
        row("d1::begin", "begin", shared, "q1"),
        row("d1::middle", "middle", shared, "q2"),
        row("d1::end", "end", shared, "q1"),  # same query as d1::begin → same three pairs
        row("d2::begin", "begin", ["other-1", "s-middle", "other-2"], "q2"),  # one pair repeats
    ]
    result = RerankerPanel([member]).score(rows, progress=False)
    assert result.pairs_total == 12
    assert len(member.calls) == len(set(member.calls)) == result.pairs_scored == 8
    # Every cell still gets its own pair's score.
    assert result.raw[:, 0, :].tolist() == [[0, 1, 2], [0, 1, 2], [0, 1, 2], [3, 1, 4]]
    # Pairs reach the member longest first (length-sorted batches).
    lengths = [len(q) + len(p) for q, p in member.calls]
    assert lengths == sorted(lengths, reverse=True)


# --------------------------------------------------------------------------- BM25


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


# --------------------------------------------------------------------------- end to end


def test_tiny_cross_encoder_panel_end_to_end_with_resume(
    tiny_cross_encoder, tmp_path, monkeypatch
) -> None:
    from sentence_transformers import CrossEncoder

    segs = [
        ["Owls nest in old trees at night.", "Fish swim in the river.", "Lions hunt at dusk."],
        ["The model encodes a query.", "Documents are long texts.", "The end reveals answers."],
    ]
    rows = [
        row(f"d{d}::{p}", p, s, f"question {d} {p}", "256-512")
        for d, s in enumerate(segs)
        for p in POSITIONS
    ]
    # Same query and segments as d0::end, in the same shard: its 3 pairs are scored once.
    rows.insert(3, row("d9::end", "end", segs[0], "question 0 end", "512-1024"))
    panel = parse_panel(f"bm25,{tiny_cross_encoder}", batch_size=4)
    out = tmp_path / "verify"
    pool, report = run_verification(rows, panel, out, delta=0.05, shard_size=4, progress=False)

    assert [r["candidate_id"] for r in pool] == [r["candidate_id"] for r in rows]
    for r in pool:
        assert set(rows[0]) <= set(r)
        assert np.array(r["panel_scores"]).shape == (2, 3)
        assert r["margin"] == pytest.approx(min(r["member_margins"]))
        assert r["retained"] == (r["margin"] >= 0.05)
    # The cross-encoder's normalised scores are the sigmoid of its logits — the same numbers as
    # CrossEncoder.predict's default activation for a one-label model.
    expected = CrossEncoder(tiny_cross_encoder).predict(
        [(rows[0]["query"], s) for s in rows[0]["segments"]]
    )
    assert pool[0]["panel_scores"][1] == pytest.approx(expected.tolist(), abs=1e-5)
    assert report.pairs_total == 21 and report.pairs_scored == 18
    assert pool[3]["panel_scores"] == pool[2]["panel_scores"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [m["name"] for m in manifest["params"]["panel"]] == ["bm25", tiny_cross_encoder]
    assert [m["normalization"] for m in manifest["params"]["panel"]] == ["share", "sigmoid"]
    assert manifest["params"]["delta"] == 0.05
    assert json.loads((out / "report.json").read_text())["retained"] == report.retained

    # Resume: every shard is done, so nothing is fitted or scored again.
    def boom(*args, **kwargs):
        raise AssertionError("scored again on resume")

    monkeypatch.setattr(CrossEncoderMember, "score_pairs", boom)
    monkeypatch.setattr(BM25Member, "score_pairs", boom)
    monkeypatch.setattr(BM25Member, "fit", boom)
    again, report2 = run_verification(rows, panel, out, delta=0.05, shard_size=4, progress=False)
    assert again == pool and report2.retained == report.retained
    # Another δ is another run: refused instead of mixing outputs.
    with pytest.raises(InputError, match="other parameters"):
        run_verification(rows, panel, out, delta=0.3, shard_size=4, progress=False)


def test_run_verification_rejects_bad_candidates(tmp_path) -> None:
    panel = RerankerPanel([BM25Member()])
    good = row("d::begin", "begin", ["a b", "c d", "e f"], "a")
    with pytest.raises(InputError, match="segments"):
        run_verification([dict(good, segments=["a", "b"])], panel, tmp_path / "1")
    with pytest.raises(InputError, match="target_position"):
        run_verification([dict(good, target_position="top")], panel, tmp_path / "2")
    with pytest.raises(InputError, match="more than once"):
        run_verification([good, good], panel, tmp_path / "3")
    with pytest.raises(InputError, match="delta"):
        run_verification([good], panel, tmp_path / "4", delta=-0.1)
    with pytest.raises(InputError, match="no candidates"):
        run_verification([], panel, tmp_path / "5")


# --------------------------------------------------------------------------- report


def test_report_tables_are_consistent() -> None:
    margins = {
        "begin": [-0.5, 0.0, 0.05, 0.12, 0.26, 0.4, 0.9],
        "middle": [-0.2, -0.01, 0.1, 0.21, 0.25],
        "end": [0.19, 0.3, 0.31],
    }
    rows = [
        {"margin": m, "target_position": p, "length_bin": "512-1024" if i % 2 else "256-512"}
        for p, ms in margins.items()
        for i, m in enumerate(ms)
    ]
    rep = VerificationReport.from_rows(rows, delta=0.25)
    assert [c["threshold"] for c in rep.cumulative] == [0.0, 0.1, 0.2, 0.25]
    assert stratum_labels(0.25) == ["failed", "[0,0.1)", "[0.1,0.2)", "[0.2,0.25)", ">=0.25"]
    # Hand counts: failed −0.5, −0.2, −0.01; m ≥ 0.2 adds 0.21 to the six with m ≥ 0.25
    # (0.26 0.4 0.9 0.25 0.3 0.31); [0.1,0.2) holds 0.12, 0.1 and 0.19.
    assert rep.failed["count"] == 3 and rep.failed["pct"] == pytest.approx(20.0)
    assert [c["count"] for c in rep.cumulative] == [12, 10, 7, 6]
    assert [s["count"] for s in rep.strata] == [3, 2, 3, 1, 6]
    assert rep.cumulative[-1]["end"] == 2 and rep.cumulative[-1]["begin"] == 3
    assert rep.retained == 6
    # Consistency: cumulative monotone, failed + m≥0 = all, strata partition every position.
    counts = [c["count"] for c in rep.cumulative]
    assert counts == sorted(counts, reverse=True)
    assert rep.failed["count"] + rep.cumulative[0]["count"] == rep.generated == 15
    assert sum(s["count"] for s in rep.strata) == rep.generated
    for pos in POSITIONS:
        assert sum(s[pos] for s in rep.strata) == rep.generated_per_position[pos]
        assert rep.strata[-1][pos] == rep.cumulative[-1][pos]
    assert sum(sum(c.values()) for c in rep.retained_per_bin.values()) == rep.retained
    assert list(rep.retained_per_bin) == ["256-512", "512-1024"]
    md = rep.to_markdown()
    assert "| m ≥ 0.25 | 6 | 40.00 | 3 | 1 | 2 |" in md
    assert "| fails top-rank check | 3 (removed) | 20.00 |" in md
    assert any("m >= 0.25: 6" in line for line in rep.summary_lines())
    assert json.loads(json.dumps(rep.to_dict()))["strata"][0]["stratum"] == "failed"
    assert margin_stratum(0.25, 0.25) == ">=0.25" and margin_stratum(0.2499, 0.25) == "[0.2,0.25)"


# --------------------------------------------------------------------------- panel specs


def test_parse_panel_specs(tiny_cross_encoder) -> None:
    panel = parse_panel("paper", load=False)
    assert panel.names == list(PAPER_PANEL)
    assert {m["normalization"] for m in panel.describe()} == {"sigmoid"}
    panel = parse_panel(f"bm25@softmax, {tiny_cross_encoder}@none")
    assert [(m.name, m.normalization) for m in panel.members] == [
        ("bm25", "softmax"),
        (tiny_cross_encoder, "none"),
    ]
    # A panel-wide normalisation applies where it is valid for the member kind.
    panel = parse_panel(f"bm25,{tiny_cross_encoder}", normalization="softmax")
    assert [m.normalization for m in panel.members] == ["softmax", "softmax"]
    panel = parse_panel(f"bm25,{tiny_cross_encoder}", normalization="saturate")
    assert [m.normalization for m in panel.members] == ["saturate", "sigmoid"]


@pytest.mark.parametrize(
    "spec",
    ["", "  ", "bm25,,bm25", "bm25,bm25", "bm25@sigmoid", "bm25@", "@share", "/no/such/reranker"],
)
def test_bad_panel_specs_raise_one_line_errors(spec: str) -> None:
    with pytest.raises(PosbiasError) as info:
        parse_panel(spec)
    assert "\n" not in str(info.value)
    if spec.startswith("/"):
        assert isinstance(info.value, ModelLoadError)


def test_panel_wide_normalisation_must_apply_somewhere() -> None:
    with pytest.raises(InputError, match="applies to no member"):
        parse_panel("bm25", normalization="sigmoid")


# --------------------------------------------------------------------------- audit


class SubstringJudge:
    """A ChatBackend-protocol judge: 'yes' iff the question text occurs in the passage."""

    def __init__(self) -> None:
        self.requests: list[list[dict[str, str]]] = []

    def complete_many(self, batch, *, temperature=1.0, top_p=1.0, max_tokens=256, seeds=None):
        assert seeds is not None and len(seeds) == len(batch)
        out: list[str | Exception] = []
        for messages in batch:
            self.requests.append(messages)
            user = messages[-1]["content"]
            passage = user.split("Passage:\n", 1)[1].split("\n\nQuestion: ", 1)[0]
            question = user.split("\n\nQuestion: ", 1)[1].split("\n\n", 1)[0]
            if "garble" in question:
                out.append("I am not sure.")
            elif "broken" in question and "zzz" in passage:
                out.append(RuntimeError("HTTP 500"))
            else:
                out.append("Yes." if question in passage else "No")
        return out


def test_audit_segments_counts_per_stratum() -> None:
    rows = [
        # ≥0.3: exclusive (target yes, both distractors no)
        dict(row("a::begin", "begin", ["owls nest", "fish", "lions"], "owls nest"), margin=0.5),
        # ≥0.3: target yes but a distractor also yes → not exclusive
        dict(row("b::end", "end", ["fish swim", "owls", "fish swim"], "fish swim"), margin=0.4),
        # failed: target judged no, one distractor yes
        dict(row("c::middle", "middle", ["cats", "dogs", "birds"], "cats"), margin=-0.2),
        # [0,0.1): every reply unparseable
        dict(row("d::begin", "begin", ["x", "y", "z"], "garble"), margin=0.05),
        # [0.1,0.2): one failed call (on the middle segment) → incomplete, excluded from Exclusive
        dict(row("e::begin", "begin", ["broken", "zzz", "q"], "broken"), margin=0.15),
    ]
    judge = SubstringJudge()
    report = audit_segments(rows, judge, per_stratum=10, seed=1, progress=False, batch_size=4)
    assert isinstance(report, AuditReport)
    assert len(judge.requests) == 15
    # The judge never learns which segment is the target.
    assert not any("target" in m[-1]["content"].lower() for m in judge.requests)
    s = {x.stratum: x for x in report.strata}
    top = s[">=0.3"]
    assert (top.audited, top.target_yes, top.distractor_no, top.exclusive) == (2, 100.0, 75.0, 50.0)
    failed = s["failed"]
    assert (failed.target_yes, failed.distractor_no, failed.exclusive) == (0.0, 50.0, 0.0)
    low = s["[0,0.1)"]
    assert (low.unparsed_answers, low.target_yes, low.exclusive) == (3, None, None)
    mid = s["[0.1,0.2)"]
    assert (mid.failed_calls, mid.incomplete_candidates, mid.target_yes) == (1, 1, 100.0)
    assert mid.exclusive is None and mid.distractor_no == 100.0
    assert s["[0.2,0.3)"].audited == 0
    assert "| >=0.3 | 2 | 100.0 | 75.0 | 50.0 |" in report.to_markdown()


def test_audit_sampling_is_seeded_and_capped() -> None:
    rows = [
        dict(row(f"d{i}::begin", "begin", [f"w{i}", "a", "b"], f"w{i}"), margin=0.5)
        for i in range(20)
    ]
    first = SubstringJudge()
    audit_segments(rows, first, per_stratum=5, seed=3, progress=False)
    second = SubstringJudge()
    audit_segments(list(reversed(rows)), second, per_stratum=5, seed=3, progress=False)
    assert len(first.requests) == 15 and first.requests == second.requests
    third = SubstringJudge()
    audit_segments(rows, third, per_stratum=5, seed=4, progress=False)
    assert third.requests != first.requests
    with pytest.raises(InputError, match="no margin"):
        audit_segments([row("x::begin", "begin", ["a", "b", "c"])], first, progress=False)
