"""Pair inputs built from texts tokenized once: ids equal to the tokenizer's, scores equal to
``CrossEncoder.predict``, and the fallback where inputs cannot be rebuilt."""

from __future__ import annotations

import random

import numpy as np
import pytest
from verification_rows import wikipedia_candidates

from hf_posbias.verification.members import CrossEncoderMember, fast_inputs
from hf_posbias.verification.pair_inputs import (
    PairEncoder,
    longest_first_lengths,
    pair_encoder_for,
)
from hf_posbias.verification.panel import RerankerPanel

# Word counts that put either text, both or neither over every budget below; 0 is an empty text.
# The tokenizer itself also builds every overflow piece of both texts (their product), so long
# texts meet only budgets that cut them into a few pieces.
LENGTHS = (0, 1, 2, 3, 5, 8, 13, 40)
MAX_LENGTHS = (6, 7, 9, 16, 33, 512)
LONG = (300, 700)
ATOL = 1e-6


def _texts(seed: int = 0, lengths: tuple[int, ...] = LENGTHS) -> list[str]:
    rng = random.Random(seed)
    words = [
        "the",
        "a",
        "positional",
        "retrieval",
        "bias",
        "unbelievably",
        "xyzzy",
        "answers",
        "42",
        "café",
        ",",
        ".",
        "don't",
    ]
    return [" ".join(rng.choice(words) for _ in range(n)) for n in lengths]


def _assert_same_ids(
    tokenizer, encoder: PairEncoder, texts: list[str], max_lengths: tuple[int, ...] = MAX_LENGTHS
) -> int:
    """Every ordered pair of ``texts`` under every budget: ids (and type ids) as the tokenizer."""
    checked = 0
    for max_length in max_lengths:
        encoder.max_length, encoder.budget = max_length, max_length - encoder.template.n_special
        if encoder.budget <= 0:
            continue
        for a in texts:
            for b in texts:
                # A batch of pairs, as CrossEncoder.predict calls it (a lone empty second text
                # would be dropped by the unbatched call, not by the batched one).
                ref = tokenizer(
                    [(a, b)],
                    truncation="longest_first",
                    max_length=max_length,
                    return_token_type_ids=encoder.with_types,
                )
                ids, types = encoder.pair(a, b)
                assert ids == ref["input_ids"][0], (max_length, len(a), len(b))
                if encoder.with_types:
                    assert types == ref["token_type_ids"][0]
                checked += 1
        # The whole grid as one padded batch: padding side, attention mask, pad type ids.
        pairs = [(a, b) for a in texts for b in texts]
        ref = tokenizer(
            pairs,
            padding=True,
            truncation="longest_first",
            max_length=max_length,
            return_token_type_ids=encoder.with_types,
            return_tensors="np",
        )
        batch = encoder.batch(encoder.encode([a for a, _ in pairs], [b for _, b in pairs]))
        assert sorted(batch) == sorted(ref.keys())
        for key, value in batch.items():
            assert (value == ref[key]).all(), (key, max_length)
    return checked


def test_longest_first_lengths_hand_worked() -> None:
    assert longest_first_lengths(3, 4, 8) == (3, 4)  # fits
    assert longest_first_lengths(3, 10, 8) == (3, 5)  # only the longer is cut
    assert longest_first_lengths(10, 3, 8) == (5, 3)
    assert longest_first_lengths(10, 12, 9) == (4, 5)  # both cut, odd token to the second
    assert longest_first_lengths(12, 10, 9) == (5, 4)  # ... to the longer after the swap back
    assert longest_first_lengths(20, 20, 2) == (1, 1)
    assert longest_first_lengths(0, 50, 6) == (0, 6)


def test_ids_equal_the_tokenizers_on_edge_cases(tiny_cross_encoder) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    encoder = pair_encoder_for(tokenizer)
    assert encoder is not None and encoder.template.n_special == 3
    assert _assert_same_ids(tokenizer, encoder, _texts()) > 300
    # Texts of 300-700 words (the passage range): cut to 512 and 200 tokens.
    assert _assert_same_ids(tokenizer, encoder, _texts(2, (3, 40, *LONG)), (200, 512)) == 32


def test_ids_equal_a_real_tokenizer_with_a_two_token_middle_and_left_truncation(
    minilm_path,
) -> None:
    """The packaged MiniLM's uncased WordPiece (token type ids), then RoBERTa's template
    (``<s> A </s></s> B </s>``, as XLM-R rerankers such as bge-reranker-v2-m3) cut on the left."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    texts = _texts(1) + ["Ünïcode accents and CamelCase wörds, split into sub-words!"]
    assert pair_encoder_for(tokenizer).with_types
    assert _assert_same_ids(tokenizer, pair_encoder_for(tokenizer), texts) > 300

    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    tokenizer.truncation_side = tokenizer.padding_side = "left"
    encoder = pair_encoder_for(tokenizer)
    assert encoder is not None and encoder.template.middle == (sep, sep)
    assert encoder.left and encoder.pad_left
    assert _assert_same_ids(tokenizer, encoder, texts) > 300
    assert _assert_same_ids(tokenizer, encoder, _texts(3, (3, *LONG)), (256,)) == 9


def test_a_budget_below_the_special_tokens_falls_back(tiny_cross_encoder) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    assert pair_encoder_for(tokenizer, max_length=3) is None
    assert pair_encoder_for(None) is None


@pytest.mark.parametrize("max_length", [None, 40])
def test_member_scores_equal_predict_on_wikipedia(
    tiny_cross_encoder, shared_data, max_length
) -> None:
    """Real paragraphs (512 tokens: nothing cut; 40: every pair cut), duplicates included."""
    import torch

    rows = wikipedia_candidates(shared_data, 6)
    queries = [r["query"] for r in rows for _ in r["segments"]] + ["", "x"]
    passages = [s for r in rows for s in r["segments"]] + [rows[0]["segments"][0], ""]
    member = CrossEncoderMember(tiny_cross_encoder, batch_size=7, max_length=max_length)
    model = member.load()
    assert fast_inputs(model) is not None
    fast = member.score_pairs(queries, passages)
    reference = model.predict(
        list(zip(queries, passages)), batch_size=7, activation_fn=torch.nn.Identity()
    )
    assert fast.shape == (len(queries),)
    assert np.abs(fast - reference).max() <= ATOL
    assert np.ptp(fast) > 10 * ATOL  # a random head still tells the pairs apart


def test_panel_scores_equal_a_naive_predict_loop(tiny_cross_encoder, shared_data) -> None:
    rows = wikipedia_candidates(shared_data, 5)
    rows.append({**rows[0], "candidate_id": "again"})  # a whole candidate twice
    member = CrossEncoderMember(tiny_cross_encoder, batch_size=4)
    panel = RerankerPanel([member], chunk_batches=2)
    result = panel.score(rows, progress=False)
    assert result.pairs_scored == 3 * (len(rows) - 1)
    naive = np.array(
        [member.load().predict([(r["query"], s) for s in r["segments"]]) for r in rows]
    )
    assert np.abs(result.normalized[:, 0, :] - naive).max() <= ATOL


def test_a_model_with_a_prompt_takes_predict(tiny_cross_encoder) -> None:
    """A default prompt changes the inputs: the member must not rebuild them itself."""
    import torch

    member = CrossEncoderMember(tiny_cross_encoder)
    model = member.load()
    model.prompts, model.default_prompt_name = {"rel": "Relevant? "}, "rel"
    assert fast_inputs(model) is None
    pairs = [("owls", "owls nest in old trees"), ("fish", "lions hunt")]
    scores = member.score_pairs([q for q, _ in pairs], [p for _, p in pairs])
    assert member._encoder is None
    reference = model.predict(pairs, activation_fn=torch.nn.Identity())
    assert np.abs(scores - reference).max() <= ATOL
