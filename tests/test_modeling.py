"""Model resolution: local path → packaged model → Hub id, with one-line load errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_posbias.errors import ModelLoadError
from hf_posbias.modeling.loaders import load_cross_encoder, load_sentence_transformer
from hf_posbias.modeling.resolve import model_display_name, resolve_model


def test_local_path_wins(tmp_path: Path) -> None:
    folder = tmp_path / "all-MiniLM-L6-v2"
    folder.mkdir()
    resolved = resolve_model(str(folder))
    assert (resolved.source, resolved.location) == ("folder", str(folder))
    assert Path(resolved) == folder


def test_packaged_model_resolves_to_its_folder(minilm_path: str) -> None:
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        resolved = resolve_model(name)
        assert (resolved.source, resolved.location, resolved.is_local) == (
            "packaged",
            minilm_path,
            True,
        )
    assert (Path(minilm_path) / "modules.json").exists()


def test_other_names_pass_through_as_hub_ids() -> None:
    resolved = resolve_model("acme/no-such-model")
    assert (resolved.source, resolved.location, resolved.meta) == (
        "hub",
        "acme/no-such-model",
        None,
    )
    assert resolve_model("BAAI/bge-m3", registry=False).location == "BAAI/bge-m3"


def test_one_resolver_names_every_source(tmp_path: Path) -> None:
    registry = resolve_model("intfloat/e5-small-v2")
    assert registry.source == "registry" and registry.meta.name == "intfloat/e5-small-v2"
    assert not registry.needs_remote_code
    assert resolve_model("BM25").source == "bm25"
    assert resolve_model("openai:text-embedding-3-small").source == "endpoint"
    # A local folder wins over a registry name of the same spelling.
    folder = tmp_path / "intfloat" / "e5-small-v2"
    folder.mkdir(parents=True)
    assert resolve_model(str(folder)).source == "folder"
    with pytest.raises(ModelLoadError, match="empty"):
        resolve_model(" ")


def test_display_names_are_distinct_for_distinct_local_models(tmp_path: Path) -> None:
    a, b = tmp_path / "runs" / "uniform", tmp_path / "runs" / "begin"
    a.mkdir(parents=True)
    b.mkdir()
    assert model_display_name(a) != model_display_name(b)
    assert model_display_name("org/model") == "org/model"


def test_load_failures_are_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError) as err:
        load_sentence_transformer(broken)
    assert "\n" not in str(err.value) and "broken" in str(err.value)
    with pytest.raises(ModelLoadError):
        load_cross_encoder(tmp_path / "missing-but-not-a-hub-id" / "x")


def test_loaded_local_model_gets_unique_name(tiny_sentence_transformer: str) -> None:
    model = load_sentence_transformer(tiny_sentence_transformer)
    assert model.model_card_data.model_name == model_display_name(tiny_sentence_transformer)
    assert model.encode(["a query"]).shape == (1, 64)


def test_one_loader_loads_each_source_once(tiny_sentence_transformer: str, tmp_path: Path) -> None:
    import hf_posbias as pb
    from hf_posbias.modeling.loaders import LoadedModel, load_model
    from hf_posbias.modeling.resolve import ModelSettings, model_identity

    # bm25 and an endpoint load nothing here: an index per corpus, a server elsewhere.
    assert (load_model("bm25").source, load_model("bm25").model) == ("bm25", None)
    endpoint = load_model("openai:my-embedder", settings=ModelSettings(base_url="http://x/v1"))
    assert (endpoint.source, endpoint.model, endpoint.settings.base_url) == (
        "endpoint",
        None,
        "http://x/v1",
    )
    loaded = pb.load_model(tiny_sentence_transformer, device="cpu")
    assert isinstance(loaded, LoadedModel) and loaded.source == "folder"
    assert loaded.model.encode(["a query"]).shape == (1, 64)
    name, revision = model_identity(tiny_sentence_transformer, loaded.model)
    assert name == model_display_name(tiny_sentence_transformer)
    assert revision.startswith("local-")
    with pytest.raises(ModelLoadError, match=f"model path {tmp_path}/gone does not exist"):
        load_model(tmp_path / "gone")


def test_packaged_model_is_known_by_its_hub_id(minilm_path: str) -> None:
    from hf_posbias.modeling.resolve import model_identity

    name, revision = model_identity("all-MiniLM-L6-v2", None)
    assert name == "sentence-transformers/all-MiniLM-L6-v2" and revision.startswith("local-")
    assert model_identity("sentence-transformers/all-MiniLM-L6-v2", None) == (name, revision)
