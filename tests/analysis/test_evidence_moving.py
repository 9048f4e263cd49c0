"""Evidence moving: placement, batching, Δ arithmetic, errors, loaders and a real MiniLM run."""

from __future__ import annotations

import json
import math

import pytest

from hf_posbias.analysis.evidence_cases import EvidenceCase, sentence_boundaries
from hf_posbias.analysis.evidence_moving import (
    EvidenceCurve,
    EvidenceMovingSummary,
    load_jsonl_pairs,
    load_pairs,
    load_scifact_pairs,
    mean_and_stderr,
    move_evidence,
    run_evidence_moving,
    summary_table,
    training_rows_to_pairs,
)
from hf_posbias.errors import InputError, PosbiasError
from hf_posbias.shards import write_parquet

SENTENCES = [
    f"Sentence {word} talks about topic number {i}."
    for i, word in enumerate(
        [
            "alpha",
            "beta",
            "gamma",
            "delta",
            "epsilon",
            "zeta",
            "eta",
            "theta",
            "iota",
            "kappa",
            "lambda",
            "mu",
            "nu",
            "xi",
        ]
    )
]
EVIDENCE = "The hidden treasure is buried under the old oak tree."


def make_case(n_sentences: int = 14) -> EvidenceCase:
    return EvidenceCase("Where is the treasure?", " ".join(SENTENCES[:n_sentences]), EVIDENCE)


def test_each_slot_holds_the_evidence_once_and_leaves_the_rest_unchanged() -> None:
    case = make_case()
    placements = case.placements(10)
    assert [p.position for p in placements] == [f"p{i}" for i in range(1, 11)]
    offsets = [p.offset for p in placements]
    assert offsets == sorted(set(offsets)), "slots must be distinct and increasing"
    assert offsets[0] == 0 and offsets[-1] == len(case.base)
    for p in placements:
        assert p.text.count(EVIDENCE) == 1
        assert p.text[p.evidence_start : p.evidence_end] == EVIDENCE
        # Removing the evidence and its one separating space restores the base exactly.
        if p.evidence_start == 0:
            restored = p.text[p.evidence_end + 1 :]
        elif p.evidence_end == len(p.text):
            restored = p.text[: p.evidence_start - 1]
        else:
            restored = p.text[: p.evidence_start] + p.text[p.evidence_end + 1 :]
        assert restored == case.base
        # Never inside a word: whitespace (or the text edge) on both sides of the evidence.
        assert p.evidence_start == 0 or p.text[p.evidence_start - 1].isspace()
        assert p.evidence_end == len(p.text) or p.text[p.evidence_end].isspace()
        # And only at sentence starts of the base.
        assert p.offset in sentence_boundaries(case.base)


def test_slots_are_evenly_spread() -> None:
    case = make_case()
    offsets = case.slots(10)
    gaps = [b - a for a, b in zip(offsets, offsets[1:])]
    sentence_len = len(SENTENCES[0]) + 1
    # 14 sentences into 9 gaps: every gap is one or two sentences, never a pile-up at one end.
    assert all(0 < g <= 2 * sentence_len + 2 for g in gaps)


def test_sentence_boundaries_skip_abbreviations() -> None:
    text = "He saw e.g. birds. Then U.S. troops left.\nNew para"
    assert sentence_boundaries(text) == [0, text.index("Then"), text.index("New"), len(text)]


def test_from_span_and_from_text_agree() -> None:
    document = " ".join(SENTENCES[:6] + [EVIDENCE] + SENTENCES[6:12])
    start = document.index(EVIDENCE)
    by_span = EvidenceCase.from_span("q?", document, start, start + len(EVIDENCE))
    by_text = EvidenceCase.from_text("q?", document, EVIDENCE)
    assert by_span.base == by_text.base == " ".join(SENTENCES[:12])
    assert by_span.evidence == EVIDENCE
    # A pasted evidence whose line breaks differ from the document still matches.
    wrapped = document.replace("buried under", "buried\nunder")
    assert EvidenceCase.from_text("q?", wrapped, EVIDENCE).base == by_text.base


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: EvidenceCase.from_text("q", "One. Two. Three.", "Four."), "evidence not found"),
        (lambda: EvidenceCase.from_text("  ", "One. Two.", "Two."), "query is empty"),
        (lambda: EvidenceCase("", "One. Two.", "Two."), "query is empty"),
        (lambda: EvidenceCase.from_span("q", "alphabet soup.", 2, 8), "splits a word"),
        (lambda: EvidenceCase.from_span("q", "One. Two.", 3, 99), "outside the document"),
        (lambda: EvidenceCase("q", "Five words only here.", "E.").slots(10), "too short for 10"),
    ],
)
def test_user_mistakes_are_one_line_posbias_errors(build, message: str) -> None:
    with pytest.raises(PosbiasError, match=message) as info:
        build()
    assert "\n" not in str(info.value)


def test_delta_peak_and_lowest_arithmetic() -> None:
    curve = EvidenceCurve(cosines=(0.5000, 0.5215, 0.5100, 0.4990))
    assert curve.peak_position == "p2" and curve.lowest_position == "p4"
    assert curve.delta == pytest.approx((0.5215 - 0.4990) * 1000)
    mean, stderr = mean_and_stderr([[0.60, 0.50], [0.64, 0.50]])
    assert mean == pytest.approx((0.62, 0.50))
    assert stderr == pytest.approx((0.02, 0.0))  # sd 0.0283 / sqrt(2)
    summary = EvidenceMovingSummary("B", (0.6, 0.5785, 0.59), (0, 0, 0), n_pairs=3)
    assert summary.headline() == "B peaks at p1 (Δ 21.5)"
    row = "| B | 3 (unreliable: < 20) | 0.6000 | 0.5785 | 0.5900 | p1 | p2 | 21.5 |"
    assert row in summary_table([summary])
    assert summary.to_row()["delta_e3"] == 21.5


class CountingModel:
    """Wraps a SentenceTransformer and records every encode call."""

    def __init__(self, model) -> None:
        self.model = model
        self.calls: list[tuple[int, dict]] = []

    def __getattr__(self, name):
        return getattr(self.model, name)

    def encode(self, texts, **kwargs):
        self.calls.append((len(texts), kwargs))
        return self.model.encode(texts, **kwargs)


def test_variants_are_encoded_in_one_batch_with_the_query_prompt(tiny_sentence_transformer) -> None:
    import numpy as np

    from hf_posbias.modeling.loaders import load_sentence_transformer

    st = load_sentence_transformer(tiny_sentence_transformer, device="cpu")
    st.prompts = {"query": "query: ", "document": ""}
    model = CountingModel(st)
    curve = move_evidence(model, make_case(), n=10)
    assert [size for size, _ in model.calls] == [1, 10]
    assert model.calls[0][1].get("prompt_name") == "query"
    assert "prompt_name" not in model.calls[1][1]  # empty document prompt: nothing applied
    assert model.calls[1][1]["batch_size"] >= 10  # one forward batch, not ST's default 32-chunks
    assert len(curve.cosines) == 10 and all(math.isfinite(c) for c in curve.cosines)
    # The cosines are those of the variants, recomputed independently.
    texts = [p.text for p in make_case().placements(10)]
    q = st.encode(["query: Where is the treasure?"], normalize_embeddings=True)[0]
    d = st.encode(texts, normalize_embeddings=True)
    assert np.allclose(d @ q, curve.cosines, atol=1e-5)
    assert len(set(np.round(curve.cosines, 6))) > 1, "moving the evidence must change the cosine"


def test_dataset_run_counts_skipped_pairs(tiny_sentence_transformer) -> None:
    from hf_posbias.modeling.loaders import load_sentence_transformer

    model = load_sentence_transformer(tiny_sentence_transformer, device="cpu")
    tiny = EvidenceCase("Where is the treasure?", "Too few words here.", EVIDENCE)
    cases = [make_case(14), tiny, make_case(12)]
    summary = run_evidence_moving(model, cases, n=10, label="tiny", progress=False)
    assert summary.n_pairs == 2 and summary.skipped == {"too_short_for_slots": 1}
    assert [c.index for c in summary.curves] == [0, 2]
    assert "used 2 of 3 pairs; skipped 1 too short" in summary.usage_line()
    assert "UNRELIABLE" in summary.usage_line() and not summary.reliable
    assert len(summary.mean) == len(summary.stderr) == 10
    model.max_seq_length = 16  # every variant is now longer than the model reads
    with pytest.raises(InputError, match="longer_than_model_max_seq_length: 2"):
        run_evidence_moving(model, cases, n=10, label="tiny", progress=False)
    kept = run_evidence_moving(model, cases, 10, "tiny", allow_truncation=True, progress=False)
    assert kept.n_pairs == 2 and kept.curves[0].n_truncated == 10


def test_short_documents_move_at_word_boundaries_and_say_so(tiny_sentence_transformer) -> None:
    from hf_posbias.modeling.loaders import load_sentence_transformer

    short = make_case(3)  # 3 sentences: 4 sentence boundaries < 10 slots, 21 words
    assert short.slot_unit(10) == "word" and make_case(14).slot_unit(10) == "sentence"
    for p in short.placements(10):
        assert p.text[p.evidence_start : p.evidence_end] == EVIDENCE
        before, after = p.text[: p.evidence_start], p.text[p.evidence_end :]
        assert before == "" or before.endswith(" "), "the evidence must start a word"
        assert after == "" or after.startswith(" "), "the evidence must end a word"
        assert (before + after[1:]).strip() == short.base or (before.strip() == short.base)
    model = load_sentence_transformer(tiny_sentence_transformer, device="cpu")
    summary = run_evidence_moving(model, [short, make_case(14)], 10, "tiny", progress=False)
    assert summary.n_pairs == 2 and summary.n_word_slots == 1
    assert "1 moved at word boundaries" in summary.usage_line()
    assert summary.to_row()["word_slot_pairs"] == 1


def test_compared_models_average_the_same_pairs(tiny_sentence_transformer) -> None:
    from hf_posbias.analysis.evidence_moving import common_pairs
    from hf_posbias.modeling.loaders import load_sentence_transformer

    model = load_sentence_transformer(tiny_sentence_transformer, device="cpu")
    cases = [make_case(14), make_case(12), make_case(13)]
    wide = run_evidence_moving(model, cases, 10, "wide", progress=False)
    model.max_seq_length = len(model.tokenizer(make_case(12).placements(10)[0].text)["input_ids"])
    narrow = run_evidence_moving(model, cases, 10, "narrow", progress=False)
    assert wide.n_pairs == 3 and narrow.n_pairs == 1
    wide2, narrow2 = common_pairs([wide, narrow])
    assert wide2.n_pairs == narrow2.n_pairs == 1
    assert wide2.skipped == {"not_usable_by_every_model": 2}
    assert wide2.mean == wide.curves[1].cosines and narrow2 is narrow


def test_jsonl_pairs_count_bad_lines(tmp_path) -> None:
    doc = " ".join(SENTENCES[:12] + [EVIDENCE])
    start = doc.index(EVIDENCE)
    lines = [
        json.dumps({"id": "a", "query": "treasure?", "document": doc, "evidence": EVIDENCE}),
        json.dumps(
            {"query": "t?", "document": doc, "evidence_start": start, "evidence_end": len(doc)}
        ),
        json.dumps({"query": "t?", "document": doc, "evidence": "Not in there."}),
        json.dumps({"query": "", "document": doc, "evidence": EVIDENCE}),
        "{not json",
        json.dumps({"query": "t?", "document": doc}),
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cases, report = load_pairs(path)
    assert [c.id for c in cases] == ["a", "line2"]
    assert cases[0].base == cases[1].base == " ".join(SENTENCES[:12])
    assert report.read == 6 and report.kept == 2
    assert report.skipped == {
        "evidence_not_found": 1,
        "query_is_empty": 1,
        "malformed_json": 1,
        "missing_evidence": 1,
    }
    assert load_jsonl_pairs(path)[1].summary_line().startswith(f"pairs from {path}")


def test_a_pairs_file_with_other_columns_names_those_it_needs_and_has(tmp_path, capsys) -> None:
    """Issue 52: rows without a pair's fields said "no pairs given" once every model found
    nothing; the file is refused as it is read, naming the fields it needs and those it has."""
    from hf_posbias.cli import main

    path = tmp_path / "claims.jsonl"
    rows = [{"claim": "treasure?", "text": " ".join(SENTENCES)}, {"claim": "t?", "label": 1}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(InputError, match="found: claim, label, text$") as err:
        load_pairs(path)
    assert "(query, document, and evidence or evidence_start + evidence_end)" in str(err.value)
    argv = ["analyze", "evidence-moving", "--pairs", str(path), "--model", "m"]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {path}: its rows lack the fields of a pair")
    table = tmp_path / "rows.parquet"
    write_parquet([{"query": "q", "doc": "d"}], table)
    needed = r"\(query, positive, target_position\); found: doc, query$"
    with pytest.raises(InputError, match=needed):
        load_pairs(table)


def test_training_rows_use_the_target_third_as_evidence() -> None:
    from hf_posbias.corpus.documents import segment_spans

    positive = " ".join(SENTENCES)
    rows = [
        {"query": "q1", "positive": positive, "target_position": "end", "candidate_id": "d::end"},
        {"query": "q2", "positive": positive, "target_position": "sideways"},
    ]
    cases, report = training_rows_to_pairs(rows)
    assert report.kept == 1 and report.skipped == {"missing_positive_or_target_position": 1}
    start, end = segment_spans(positive, 3)[2]
    assert cases[0].evidence == positive[start:end].strip()
    assert cases[0].base == positive[:start].strip()
    assert cases[0].id == "d::end"


def test_scifact_pairs_with_minilm(shared_data, minilm_path) -> None:
    from hf_posbias.modeling.loaders import load_sentence_transformer

    cases, report = load_scifact_pairs(shared_data / "scifact_allenai", split="validation")
    assert report.kept > 100 and report.skipped.get("no_evidence", 0) > 0
    case = cases[0]
    # Rationale sentences are removed from the fixed document and moved as one block.
    assert case.evidence not in case.base
    assert set(case.insertion_points()) >= set(case.boundaries or ())
    model = load_sentence_transformer(minilm_path, device="cpu")
    model.max_seq_length = 512  # SciFact abstracts run past MiniLM's default 256 tokens
    usable = []
    for c in cases:
        try:
            c.slots(10)
        except InputError:
            continue
        usable.append(c)
        if len(usable) == 3:
            break
    summary = run_evidence_moving(model, usable, n=10, label="minilm", progress=False)
    assert summary.n_pairs + sum(summary.skipped.values()) == 3
    assert summary.n_pairs >= 1
    assert len(summary.mean) == 10
    assert all(math.isfinite(v) and -1.0 <= v <= 1.0 for v in summary.mean)
    assert summary.delta > 0


def test_remedy_curves_against_the_plain_curve(tiny_sentence_transformer) -> None:
    """MaxP with one passage covering every variant is the plain curve; FirstP is flat once the
    evidence has left the first passage (the passage it reads is then the same text)."""
    from hf_posbias.evaluation.runs.remedies import RemedySettings, remedy_scorer
    from hf_posbias.modeling.loaders import load_sentence_transformer

    model = load_sentence_transformer(tiny_sentence_transformer, device="cpu")
    case = make_case(14)
    plain = move_evidence(model, case, 10)
    limit = model.max_seq_length
    whole = remedy_scorer(model, RemedySettings(remedy="maxp", passage_tokens=limit, stride=8))
    assert move_evidence(model, case, 10, whole).cosines == pytest.approx(plain.cosines, abs=1e-5)
    first = remedy_scorer(model, RemedySettings(remedy="firstp", passage_tokens=24, stride=8))
    curve = move_evidence(model, case, 10, first)
    assert curve.n_truncated == 10  # every variant is longer than its first passage
    # From p3 on, the first 22 text tokens are the base document's: one value, the floor.
    assert max(curve.cosines[2:]) - min(curve.cosines[2:]) < 1e-6
    assert abs(curve.cosines[0] - curve.cosines[-1]) > 1e-4
    maxp = remedy_scorer(model, RemedySettings(remedy="maxp", passage_tokens=24, stride=8))
    assert move_evidence(model, case, 10, maxp).n_truncated == 0


def test_a_passage_remedy_keeps_pairs_longer_than_the_model(tiny_sentence_transformer) -> None:
    from hf_posbias.evaluation.runs.remedies import RemedySettings, remedy_scorer
    from hf_posbias.modeling.loaders import load_sentence_transformer

    model = load_sentence_transformer(tiny_sentence_transformer, device="cpu")
    model.max_seq_length = 32  # every variant is longer than the plain model reads
    cases = [make_case(14), make_case(12)]
    with pytest.raises(InputError, match="longer_than_model_max_seq_length: 2"):
        run_evidence_moving(model, cases, 10, "plain", progress=False)
    settings = RemedySettings(remedy="sump", passage_tokens=32, stride=16)
    summary = run_evidence_moving(
        model, cases, 10, "tiny +sump", progress=False, remedy=remedy_scorer(model, settings)
    )
    assert summary.n_pairs == 2 and summary.curves[0].n_truncated == 0
    balanced = remedy_scorer(model, RemedySettings(remedy="segment-balanced"))
    with pytest.raises(InputError, match="longer_than_model_max_seq_length: 2"):
        run_evidence_moving(model, cases, 10, "b", progress=False, remedy=balanced)


def test_a_remedy_needs_a_dense_bi_encoder(tiny_sentence_transformer) -> None:
    import numpy as np

    from hf_posbias.embedding import TextEmbedder
    from hf_posbias.evaluation.runs.remedies import RemedySettings, remedy_scorer

    endpoint = TextEmbedder("e", lambda texts, kind: np.ones((len(texts), 2)), kind="endpoint")
    with pytest.raises(
        InputError, match="^remedy needs a dense bi-encoder, not an endpoint model$"
    ):
        remedy_scorer(endpoint, RemedySettings(remedy="maxp"))
    assert remedy_scorer(endpoint, RemedySettings()) is None
