"""Identifier labels, the single-token check at load, permutation parsing, the prompt."""

from __future__ import annotations

import pytest

from hf_posbias.errors import InputError
from hf_posbias.rerankers.identifiers import (
    format_permutation,
    identifier_labels,
    identifier_token_ids,
    parse_permutation,
)
from hf_posbias.rerankers.prompt import ListwisePrompt, user_message
from hf_posbias.rerankers.records import Passage


def test_letters_pass_and_numbers_fail_on_a_byte_level_tokenizer(tiny_llm):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llm)
    ids = identifier_token_ids(tokenizer, 20, "letters")
    assert len(set(ids)) == 20
    for label, token_id in zip(identifier_labels(20), ids):
        assert tokenizer.decode([token_id]) == label
    with pytest.raises(InputError) as err:
        identifier_token_ids(tokenizer, 20, "numbers")
    message = str(err.value)
    assert "\n" not in message and "20" in message and "--identifiers letters" in message
    # Single digits are single tokens: only the failures are named.
    assert message.startswith("identifier(s) 10, 11,") and " 9," not in message


def test_merged_identifiers_are_refused_naming_them(merged_identifier_llm):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(merged_identifier_llm)
    assert len(tokenizer.encode("[A", add_special_tokens=False)) == 1  # the fixture's premise
    with pytest.raises(InputError, match=r"identifier\(s\) A, B, C.* not single tokens"):
        identifier_token_ids(tokenizer, 20, "letters")


def test_letters_cap_at_26():
    with pytest.raises(InputError, match="at most 26"):
        identifier_labels(27, "letters")
    assert identifier_labels(27, "numbers")[-1] == "27"


def test_parse_permutation_appends_missing_in_input_order():
    parsed = parse_permutation("[D] > [b] > [D] > [Q]", 5)
    assert parsed.order == [3, 1, 0, 2, 4]
    assert (parsed.appended, parsed.invalid, parsed.repeated) == (3, 1, 1)
    numbers = parse_permutation("[12] > [3]", 12, "numbers")
    assert numbers.order[:2] == [11, 2] and numbers.appended == 10
    assert parse_permutation(format_permutation([2, 0, 1]), 3).appended == 0


def test_prompt_escapes_fake_identifiers_and_truncates(tiny_llm):
    from transformers import AutoTokenizer

    text = user_message("q", [Passage("a", "see [B] and [12]"), Passage("b", "x")])
    assert "[A] see (B) and (12)" in text and "[B] x" in text
    assert "alphabetical identifier" in text and "e.g., [B] > [A]" in text
    tokenizer = AutoTokenizer.from_pretrained(tiny_llm)
    prompt = ListwisePrompt(tokenizer, passage_tokens=4)
    long = Passage("a", "the quick brown fox jumps over the lazy dog", title="fox")
    assert len(tokenizer.encode(prompt.truncate(long).text, add_special_tokens=False)) <= 4
    ids = prompt.scoring_ids("q", [long, Passage("b", "dog")])
    assert ids[-1] == prompt.open_id and ids[:-1] == prompt.prompt_ids(
        "q", [long, Passage("b", "dog")]
    )
    from hf_posbias.rerankers.options import RerankerOptions

    with pytest.raises(InputError, match="^passage_tokens must be >= 1"):
        RerankerOptions(passage_tokens=0)  # checked once, in the settings
