"""One resolver for embedding models outside ``mteb.evaluate``: the listwise dense first stage
and ``posbias analyze`` take registry names (with their prompts) and ``openai:`` endpoints."""

from __future__ import annotations

import numpy as np
import pytest
from openai_server import LocalChatServer, sentence_transformer_embed

from hf_posbias.embedding import load_embedder
from hf_posbias.errors import ModelLoadError
from hf_posbias.listwise.experiments.firststage import load_first_stage
from hf_posbias.modeling.resolve import ModelSettings
from hf_posbias.rerankers.records import Passage

TEXTS = ["dogs bark at night", "cats purr softly", "birds sing at dawn", "fish swim in rivers"]


def test_endpoint_first_stage_ranks_as_the_local_model(tiny_sentence_transformer):
    corpus = {f"d{i}": Passage(f"d{i}", t) for i, t in enumerate(TEXTS)}
    local = load_first_stage(tiny_sentence_transformer, corpus)
    with LocalChatServer(embed=sentence_transformer_embed(tiny_sentence_transformer)) as server:
        settings = ModelSettings(base_url=server.url, endpoint_batch_size=2)
        served = load_first_stage("openai:tiny", corpus, settings)
        assert served.top_k("why do dogs bark", 4) == local.top_k("why do dogs bark", 4)
        assert max(len(r["input"]) for r in server.requests) == 2


def test_registry_name_embeds_with_its_prompts(tiny_sentence_transformer, offline_hub_weights):
    """intfloat/e5-small-v2 resolved offline (the weights, a Hub download, are the tiny local
    model's): mteb's loader applies the registry's "query: " / "passage: " prompts."""
    from sentence_transformers import SentenceTransformer

    plain = SentenceTransformer(tiny_sentence_transformer, device="cpu")
    asked = offline_hub_weights("SentenceTransformer", tiny_sentence_transformer)
    embedder = load_embedder("intfloat/e5-small-v2")
    assert (embedder.kind, embedder.name) == ("registry", "intfloat/e5-small-v2")
    assert [name for name, _ in asked] == ["intfloat/e5-small-v2"]
    for kind, prefix in (("query", "query: "), ("document", "passage: ")):
        expected = plain.encode([prefix + TEXTS[0]], normalize_embeddings=True)
        assert np.allclose(embedder.embed([TEXTS[0]], kind), expected, atol=1e-5)


def test_bm25_and_unknown_names_are_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="does not embed"):
        load_embedder("bm25")
    with pytest.raises(ModelLoadError, match="did you mean 'intfloat/e5-small-v2'") as caught:
        load_embedder("intfloat/e5-smal-v2")
    assert "\n" not in str(caught.value)
