"""Z25's recipe, model-free parts: Algorithm 1 on boundaries, the splitter, passages, filters."""

from __future__ import annotations

import json

import pytest

from hf_posbias.construction import recipe
from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings
from hf_posbias.errors import InputError


@pytest.mark.parametrize(
    ("start", "end", "length", "tag"),
    [
        (0, 10, 30, "begin"),  # third = 10: the last character (9) lies before it
        (0, 11, 30, "middle"),  # one character into the second third
        (10, 20, 30, "middle"),
        (19, 30, 30, "middle"),  # starts one character before 2·third
        (20, 30, 30, "end"),  # starts exactly at 2·third
        (20, 31, 31, "end"),  # third = ⌊31/3⌋ = 10 → 2·third = 20, the remainder goes to end
        (0, 10, 31, "begin"),
        (0, 31, 31, "middle"),  # a chunk spanning the whole passage
        (0, 1, 2, "end"),  # third = 0: every chunk starts at or after 2·third
    ],
)
def test_algorithm_1_boundaries(start: int, end: int, length: int, tag: str) -> None:
    assert recipe.position_tag(start, end, length) == tag


def test_algorithm_1_rejects_a_chunk_outside_the_passage() -> None:
    with pytest.raises(ValueError, match="not inside"):
        recipe.position_tag(5, 40, 30)
    with pytest.raises(ValueError, match="not inside"):
        recipe.position_tag(5, 5, 30)


def test_third_spans_match_algorithm_1() -> None:
    for length in (3, 10, 31, 1000):
        spans = recipe.third_spans(length)
        assert spans[0][0] == 0 and spans[-1][1] == length
        for (a, b), tag in zip(spans, ("begin", "middle", "end"), strict=True):
            if b > a:
                assert recipe.position_tag(a, b, length) == tag


def test_recursive_splitter_keeps_every_word_in_order_within_size() -> None:
    para = " ".join(f"w{i}" for i in range(25)) + "."
    text = "\n\n".join([para, "short one.", para.replace("w", "v")])
    spans = recipe.split_recursive(text, 10)
    words = [w for a, b in spans for w in text[a:b].split()]
    assert words == text.split()
    assert all(recipe.word_count(text[a:b]) <= 10 for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))
    # paragraph breaks are preferred: the short paragraph joins no long paragraph's words
    assert "short one." in [text[a:b] for a, b in spans] or any(
        text[a:b].endswith("short one.") for a, b in spans
    )


def test_recursive_splitter_merges_lines_up_to_the_size() -> None:
    text = "\n".join(" ".join(f"l{i}w{j}" for j in range(10)) for i in range(5))
    spans = recipe.split_recursive(text, 20)
    assert [recipe.word_count(text[a:b]) for a, b in spans] == [20, 20, 10]
    assert text[spans[1][0] :].startswith("l2w0")


def test_cut_passages_counts_out_of_range_and_rejects_duplicate_ids() -> None:
    records = [
        {"id": "ok", "text": "w " * 8},
        {"id": "short", "text": "w " * 3},
        {"id": "long", "text": "w " * 20},
    ]
    drops = recipe.DropCounts()
    rows = recipe.cut_passages(records, min_words=5, max_words=10, drops=drops)
    assert [r["id"] for r in rows] == ["ok"]
    assert drops.counts == {"passage shorter than 5 words": 1, "passage longer than 10 words": 1}
    with pytest.raises(InputError, match="duplicate id 'ok'"):
        recipe.cut_passages(records + [{"id": "ok", "text": "x"}], min_words=5, max_words=10)


def test_cut_long_windows_stay_in_range_and_keep_paragraphs_whole() -> None:
    text = "\n".join(" ".join(f"p{i}w{j}" for j in range(4)) for i in range(11))
    drops = recipe.DropCounts()
    rows = recipe.cut_passages(
        [{"id": "a", "text": text}], min_words=6, max_words=10, cut_long=True, drops=drops
    )
    # 11 paragraphs of 4 words: windows of 2 paragraphs (8 words; a third would make 12)
    assert [r["id"] for r in rows] == [f"a#p{k}" for k in range(5)]
    assert all(6 <= recipe.word_count(r["text"]) <= 10 for r in rows)
    assert rows[1]["text"].startswith("p2w0") and rows[1]["source_id"] == "a"
    assert drops.counts == {"leftover shorter than 6 words": 1}  # the 11th paragraph


def test_stage1_reranker_filter_hand_worked() -> None:
    # two members × (begin, middle, end); label = middle
    assert recipe.stage1_reranker_keep([[0.1, 0.8, 0.3], [0.2, 0.5, 0.4]], "middle")
    assert not recipe.stage1_reranker_keep([[0.1, 0.8, 0.3], [0.2, 0.4, 0.5]], "middle")
    assert not recipe.stage1_reranker_keep([[0.0, 0.0, 0.0]], "end")  # no evidence anywhere


def test_downsample_to_the_smallest_position_is_seeded() -> None:
    rows = [{"id": i, "tag": t} for i, t in enumerate(["begin"] * 5 + ["middle"] * 2 + ["end"] * 3)]
    once, again = recipe.downsample(rows, seed=3), recipe.downsample(rows, seed=3)
    assert once == again
    assert recipe.position_counts(once, "s") == {"stage": "s", "begin": 2, "middle": 2, "end": 2}
    assert [r["id"] for r in once if r["tag"] == "middle"] == [5, 6]


def test_stage1_judge_filter_hand_worked() -> None:
    assert recipe.stage1_judge_keep([3, 1, 2], "begin")  # 3 ≥ 3 and 1 above 2
    assert not recipe.stage1_judge_keep([3, 1, 3], "begin")  # tie with end
    assert not recipe.stage1_judge_keep([2, 0, 0], "begin")  # below 3
    assert recipe.stage1_judge_keep([0, 2, 4], "end")
    assert not recipe.stage1_judge_keep([0, None, 4], "end")  # a reply outside 0-4
    assert recipe.stage1_judge_keep([0, 3, 4], "end", min_gap=1)
    assert not recipe.stage1_judge_keep([0, 3, 4], "end", min_gap=2)


def test_stage2_prelabel_and_false_negative_vote_hand_worked() -> None:
    assert recipe.prelabel_positive([0.5, 0.7, 0.2])  # two of three at 0.5 or above
    assert not recipe.prelabel_positive([0.49, 0.7, 0.2])
    assert not recipe.prelabel_positive([0.9, 0.1])  # one of two is no majority
    assert recipe.false_negative([3, 3, 0]) and recipe.false_negative([4, 4, 4])
    assert not recipe.false_negative([4, 2, None])
    assert not recipe.false_negative([3, 3, 0], min_score=4)


def test_tiny_sample_names_each_short_position() -> None:
    rows = [{"tag": "begin"}] * 4 + [{"tag": "middle"}] * 1 + [{"tag": "end"}] * 3
    kept, short = recipe.tiny_sample(rows, 3, seed=0)
    assert recipe.position_counts(kept, "tiny") == {
        "stage": "tiny",
        "begin": 3,
        "middle": 1,
        "end": 3,
    }
    assert short == ["tiny: position middle has 1 question(s), fewer than 3"]


def test_faq_reply_parsing_drops_bad_items() -> None:
    reply = (
        '{"faqs": [{"question": " What  is X? ", "answer": "X.", "type": "complicated"},'
        ' {"question": "Q2?", "answer": "", "type": "other"}, "junk"]}'
    )
    assert recipe.parse_faq(reply) == [
        {"question": "What is X?", "answer": "X.", "type": "complicated"}
    ]
    assert recipe.parse_faq('{"faq": []}') is None


def test_settings_refuse_bad_values_in_one_line() -> None:
    with pytest.raises(InputError, match="larger than the passage range"):
        BenchmarkBuildSettings(corpus="demo", out="o", chunk_words=1025)
    with pytest.raises(InputError, match="^fn_min_votes \\(3\\) is more than the 2 judge"):
        BenchmarkBuildSettings(corpus="demo", out="o", fn_judges="a,b", fn_min_votes=3)
    with pytest.raises(InputError, match="judge_min_score must be between 0 and 4"):
        BenchmarkBuildSettings(corpus="demo", out="o", judge_min_score=5)
    assert BenchmarkBuildSettings(corpus="demo", out="x/t/").hub_dir == "x/t-hub"


def test_parse_faq_reads_the_papers_top_level_json_list():
    # Zeng et al. print the FAQ reply as a top-level JSON list; free-form decoding
    # (--no-constrained) returns it as such (issue 43).
    from hf_posbias.construction.recipe import parse_faq

    items = [{"question": "Why?", "answer": "A.", "type": "simple"},
             {"question": "", "answer": "B", "type": "simple"}]  # fmt: skip
    listed = "Here you go:\n" + json.dumps(items)
    assert parse_faq(listed) == [items[0]]
    assert parse_faq(json.dumps({"faqs": items})) == parse_faq(listed)
    assert parse_faq("[not json") is None
