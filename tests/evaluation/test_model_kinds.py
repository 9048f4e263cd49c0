"""Every model kind the resolver takes, each with a local stand-in: sparse, late-interaction,
an OpenAI-compatible embeddings endpoint, an mteb registry name, remote code, unknown names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai_server import LocalChatServer, sentence_transformer_embed
from task_fixtures import wiki_task

from hf_posbias.errors import BackendError, ModelLoadError
from hf_posbias.evaluation.runs.mteb_models import load_mteb_model
from hf_posbias.evaluation.runs.runner import evaluate_model
from hf_posbias.modeling.resolve import ModelSettings

N_DOCS = 9


@pytest.fixture(scope="module")
def task_folder(shared_data, tmp_path_factory) -> Path:
    return wiki_task(shared_data, tmp_path_factory.mktemp("kinds") / "task", n_docs=N_DOCS)


@pytest.mark.parametrize("kind", ["sparse", "multi-vector"])
def test_sparse_and_late_interaction_encoders_evaluate(kind, task_folder, tmp_path):
    from hf_posbias.testing import build_tiny_multi_vector_encoder, build_tiny_sparse_encoder

    build = build_tiny_sparse_encoder if kind == "sparse" else build_tiny_multi_vector_encoder
    folder = build(tmp_path / "model")
    [s] = evaluate_model(folder, [task_folder], out=tmp_path / "out", bootstrap=50)
    assert s.model_kind == kind
    assert s.n_queries == {"begin": 3, "middle": 3, "end": 3}
    assert all(0.0 <= v <= 1.0 for v in s.ndcg_at_10.values())
    if kind == "sparse":  # the late-interaction model is searched by mteb's MaxSim index
        assert s.encode_stats["encoded_by_type"] == {"document": N_DOCS, "query": N_DOCS}


def test_endpoint_scores_equal_the_same_model_loaded_locally(
    task_folder, tiny_sentence_transformer, tmp_path
):
    [local] = evaluate_model(
        tiny_sentence_transformer, [task_folder], out=tmp_path / "l", bootstrap=50
    )
    with LocalChatServer(embed=sentence_transformer_embed(tiny_sentence_transformer)) as server:
        [remote] = evaluate_model(
            "openai:tiny",
            [task_folder],
            out=tmp_path / "r",
            bootstrap=50,
            model_options=ModelSettings(
                base_url=server.url, endpoint_batch_size=4, max_concurrency=2
            ),
        )
        batches = [len(r["input"]) for r in server.requests]
    assert remote.model_kind == "endpoint" and remote.model_name == "openai/tiny"
    assert max(batches) == 4 and sum(batches) == 2 * N_DOCS  # batched; every text once
    assert remote.ndcg_at_10 == pytest.approx(local.ndcg_at_10, abs=1e-6)
    assert remote.psi == pytest.approx(local.psi, abs=1e-6)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (lambda texts: [[0.1] * (3 + (i % 2)) for i, _ in enumerate(texts)], "vectors of size"),
        (lambda texts: [[float("nan"), 1.0] for _ in texts], "NaN or inf"),
    ],
)
def test_endpoint_with_bad_vectors_fails_in_one_line(bad, message, task_folder, tmp_path):
    with LocalChatServer(embed=bad) as server:
        loaded = load_mteb_model("openai:bad", settings=ModelSettings(base_url=server.url))
        with pytest.raises(BackendError, match=message) as caught:
            evaluate_model(loaded, [task_folder], out=tmp_path / "o")
    assert "\n" not in str(caught.value)


def test_registry_name_loads_with_its_prompts_offline(
    task_folder, tiny_sentence_transformer, tmp_path, offline_hub_weights
):
    """intfloat/e5-small-v2 through mteb's registry loader; the weights (the boundary: a Hub
    download) are the tiny local model's."""
    asked = offline_hub_weights("SentenceTransformer", tiny_sentence_transformer)
    meta = __import__("mteb").get_model_meta("intfloat/e5-small-v2")
    [s] = evaluate_model("intfloat/e5-small-v2", [task_folder], out=tmp_path / "o", bootstrap=50)
    assert asked == [("intfloat/e5-small-v2", meta.revision)]
    assert (s.model_kind, s.model_name, s.model_revision) == (
        "registry",
        "intfloat/e5-small-v2",
        meta.revision,
    )
    saved = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert saved["model_revision"] == meta.revision
    loaded = load_mteb_model("intfloat/e5-small-v2")
    assert len(asked) == 2
    assert loaded.encoder.model.model_prompts == {"query": "query: ", "document": "passage: "}


def test_unknown_name_suggests_registry_names(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="did you mean 'intfloat/e5-small-v2'") as caught:
        load_mteb_model("intfloat/e5-smal-v2")
    assert "\n" not in str(caught.value)


def test_remote_code_needs_the_flag(tiny_models, tmp_path):
    import shutil

    folder = Path(shutil.copytree(tiny_models("bert"), tmp_path / "custom"))
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="posbias-custom", auto_map={"AutoModel": "modeling_custom.Custom"})
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="--trust-remote-code") as caught:
        load_mteb_model(str(folder))
    assert "\n" not in str(caught.value)
