"""Pooling ablation: the same transformer under cls / mean / max / last-token pooling."""

from __future__ import annotations

import itertools

import pytest

from hf_posbias.analysis.evidence_cases import EvidenceCase
from hf_posbias.analysis.pooling import build_pooled_models, pooling_ablation, pooling_table
from hf_posbias.errors import InputError
from hf_posbias.modeling.bases import POOLINGS

TEXT = " ".join(f"Sentence {i} describes a small fact about rivers and hills." for i in range(12))


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_four_poolings_give_four_different_embeddings(tiny_models, family: str) -> None:
    import numpy as np

    models = build_pooled_models(tiny_models(family), device="cpu")
    assert list(models) == list(POOLINGS)
    vectors = {}
    for mode, model in models.items():
        assert model[1].get_config_dict()["pooling_mode"] == mode
        vectors[mode] = model.encode(["a river runs", TEXT], convert_to_numpy=True)
    for a, b in itertools.combinations(POOLINGS, 2):
        assert not np.allclose(vectors[a], vectors[b], atol=1e-4), f"{a} == {b}"
    # One transformer shared by all four: only the pooling differs.
    assert len({id(m[0]) for m in models.values()}) == 1


def test_sentence_transformer_folder_keeps_prompts(tiny_sentence_transformer) -> None:
    from hf_posbias.modeling.loaders import load_sentence_transformer

    st = load_sentence_transformer(tiny_sentence_transformer)
    st.prompts = {"query": "query: "}
    folder = tiny_sentence_transformer + "-prompted"
    st.save(folder)
    models = build_pooled_models(folder, modes=("cls", "lasttoken"))
    assert models["cls"].prompts["query"] == "query: "


def test_ablation_table_has_one_row_per_mode(tiny_models) -> None:
    case = EvidenceCase("where are the hills?", TEXT, "The hills are green and tall.")
    rows = pooling_ablation(tiny_models("bert"), [case], [("d", TEXT)], n=10, progress=False)
    assert [r.pooling for r in rows] == list(POOLINGS)
    assert all(len(r.evidence.mean) == 10 and len(r.profile.mean) == 10 for r in rows)
    assert len({r.evidence.mean for r in rows}) == 4
    table = pooling_table(rows).splitlines()
    assert len(table) == 2 + 4 and "evidence_delta_e3" in table[0] and "profile_range" in table[0]


def test_unknown_mode_and_empty_inputs() -> None:
    with pytest.raises(InputError, match="unknown pooling mode"):
        build_pooled_models("all-MiniLM-L6-v2", modes=("median",))
    with pytest.raises(InputError, match="needs evidence pairs, documents"):
        pooling_ablation("all-MiniLM-L6-v2")
