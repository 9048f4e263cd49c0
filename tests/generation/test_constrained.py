"""The llguidance logits processor: batched rows, install and tokenizer errors, early checks."""

from __future__ import annotations

import json
import sys

import pytest

from hf_posbias.errors import InputError, ModelLoadError
from hf_posbias.generation.constrained import (
    JsonSchemaLogitsProcessor,
    compile_json_schema,
    grammar_tokenizer,
)
from hf_posbias.generation.generator_registry import make_generator

VERDICT = {
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no"]}, "why": {"type": "string", "maxLength": 8}},
    "required": ["answer", "why"],
    "additionalProperties": False,
}


def test_processor_keeps_every_row_of_a_padded_batch_valid(one_torch_thread, tiny_models):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tiny_models("llama", "causal-lm")
    tok = AutoTokenizer.from_pretrained(path)
    tok.pad_token, tok.padding_side = tok.eos_token, "left"
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    inputs = tok(
        ["Is it?", "A much longer prompt about reef fish and corals."],
        return_tensors="pt",
        padding=True,
    )
    width = inputs["input_ids"].shape[1]
    processor = JsonSchemaLogitsProcessor(
        grammar_tokenizer(tok, model.config.vocab_size, tok.eos_token_id),
        compile_json_schema(VERDICT),
        prompt_length=width,
    )
    torch.manual_seed(0)
    out = model.generate(
        **inputs,
        do_sample=True,
        top_k=0,
        max_new_tokens=40,
        logits_processor=[processor],
        pad_token_id=tok.eos_token_id,
    )
    for row in range(2):
        value = json.loads(tok.decode(out[row, width:], skip_special_tokens=True))
        assert value["answer"] in ("yes", "no") and len(value["why"]) <= 8
        assert processor.finished(row)
    assert processor.errors == []


def test_slow_tokenizer_is_a_one_line_model_error():
    class SlowTokenizer:
        eos_token_id = 0

    with pytest.raises(ModelLoadError, match="needs a fast .*--no-constrained"):
        grammar_tokenizer(SlowTokenizer(), 100, 0, name="slow-model")


def test_missing_llguidance_fails_before_any_model_loads(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llguidance", None)  # `import llguidance` raises
    with pytest.raises(InputError, match=r"needs the package 'llguidance': pip install") as info:
        make_generator("local-lm", model=str(tmp_path / "no-such-model"))
    assert "--no-constrained" in str(info.value)
    # Free-form decoding does not need it.
    gen = make_generator("local-lm", model=str(tmp_path / "no-such-model"), constrained=False)
    assert gen.params()["constrained"] is False and gen.params()["schemas"] is None
