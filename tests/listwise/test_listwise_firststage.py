"""First stage for the listwise commands: the package BM25 and a dense sentence-transformer."""

from __future__ import annotations

import pytest

from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.firststage import BM25FirstStage, check_k, load_first_stage
from hf_posbias.rerankers.records import Passage


def corpus() -> dict[str, Passage]:
    texts = {"d3": "dogs bark", "d1": "dogs bark", "d2": "cats purr", "d0": "birds sing loudly"}
    return {d: Passage(d, t) for d, t in texts.items()}


def test_bm25_ranks_the_whole_corpus_with_ties_by_id():
    stage = BM25FirstStage(corpus())
    assert stage.size == 4
    ranked = stage.top_k("do dogs bark", 4)
    # equal scores: id descending (trec_eval's rule, as evaluation's runs), not corpus order
    assert ranked[:2] == ["d3", "d1"]
    assert sorted(ranked) == ["d0", "d1", "d2", "d3"]
    with pytest.raises(InputError, match="corpus has 4"):
        check_k(5, stage.size)


def test_dense_first_stage(tiny_sentence_transformer):
    stage = load_first_stage(tiny_sentence_transformer, corpus())
    assert stage.name == tiny_sentence_transformer
    ranked = stage.top_k("dogs bark", 3)
    assert len(ranked) == 3 and len(set(ranked)) == 3
    assert stage.top_k("dogs bark", 3) == ranked  # deterministic


def test_cached_lists_are_keyed_on_the_dense_encoding(
    tiny_sentence_transformer, beir_task, tmp_path, monkeypatch
):
    """A changed prompt of the dense first stage recomputes ``first_stage.json``; the same
    settings reuse it without encoding the corpus."""
    import json
    import shutil

    from hf_posbias.embedding import TextEmbedder
    from hf_posbias.listwise.experiments.lists import FIRST_STAGE_FILE, first_stage_lists
    from hf_posbias.listwise.experiments.taskio import load_rerank_task

    task = load_rerank_task(beir_task)
    model = shutil.copytree(tiny_sentence_transformer, tmp_path / "model")
    embedded = []
    original = TextEmbedder.embed
    monkeypatch.setattr(
        TextEmbedder,
        "embed",
        lambda self, texts, kind: embedded.append(kind) or original(self, texts, kind),
    )

    def lists(out):
        found = first_stage_lists(
            task, task.judged_queries(), str(model), 5, out, show_progress=False
        )
        return [x.candidates for x in found]

    first = lists(tmp_path / "out")
    assert embedded.count("document") == 1
    assert lists(tmp_path / "out") == first and embedded.count("document") == 1  # cached
    config = model / "config_sentence_transformers.json"
    found = json.loads(config.read_text())
    found["prompts"] = {"query": "find the passage that supports: ", "document": ""}
    config.write_text(json.dumps(found))
    changed = lists(tmp_path / "out")
    assert embedded.count("document") == 2  # recomputed, not the stale lists
    assert changed == lists(tmp_path / "fresh")
    cached = json.loads((tmp_path / "out" / FIRST_STAGE_FILE).read_text())
    assert cached["params"]["encoding"]["prompts"]["query"].startswith("find the passage")


@pytest.mark.parametrize("stage", ["bm25", "dense"])
def test_a_changed_document_form_recomputes_cached_lists(
    stage, tiny_sentence_transformer, beir_task, tmp_path, monkeypatch
):
    """The form a first stage indexes or encodes (``hf_posbias.doctext``) joins the cache key
    and is recorded in ``first_stage.json``: lists made with another form are never reused."""
    import json

    import hf_posbias.listwise.experiments.firststage as firststage
    from hf_posbias.listwise.experiments.lists import FIRST_STAGE_FILE, first_stage_lists
    from hf_posbias.listwise.experiments.taskio import load_rerank_task

    task = load_rerank_task(beir_task)
    name = "bm25" if stage == "bm25" else tiny_sentence_transformer
    qids = task.judged_queries()
    path = tmp_path / "out" / FIRST_STAGE_FILE

    def lists(out):
        return [
            x.candidates for x in first_stage_lists(task, qids, name, 5, out, show_progress=False)
        ]

    first = lists(tmp_path / "out")
    assert json.loads(path.read_text())["params"]["encoding"]["document_form"] == "title text"
    stamp = path.stat().st_mtime_ns
    assert lists(tmp_path / "out") == first and path.stat().st_mtime_ns == stamp  # reused
    # Another form (the reranker's prompt form, say): the cached lists must not be served.
    monkeypatch.setattr(firststage, "DOCUMENT_FORM", "Title: title Content: text")
    monkeypatch.setattr(firststage, "retriever_text", lambda t, x: f"Title: {t} Content: {x}")
    changed = lists(tmp_path / "out")
    recorded = json.loads(path.read_text())["params"]["encoding"]["document_form"]
    assert recorded == "Title: title Content: text" and path.stat().st_mtime_ns != stamp
    assert changed == lists(tmp_path / "fresh")
