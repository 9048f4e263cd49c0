"""The Space's listwise tab, through its callback functions (no browser)."""

from __future__ import annotations

import json
import shutil

import pytest

from hf_posbias.errors import PosbiasError


def test_examples_task_has_a_relevant_sentence_per_query(space_app):
    task = space_app.examples_task()
    assert len(task.corpus) >= space_app.LISTWISE_K and len(task.queries) == 3
    for example in space_app.EXAMPLES:
        (relevant,) = task.relevant(example["title"])
        assert task.passage(relevant).text == example["evidence"]


def test_reranker_allow_list(space_app, monkeypatch, tmp_path, tiny_llm):
    root = tmp_path / "ckpts"
    shutil.copytree(tiny_llm, root / "plain-llm")  # no training facts: not a DebiasFirst run
    monkeypatch.setenv("POSBIAS_SPACE_CHECKPOINTS", str(root))
    allowed = space_app.listwise_rerankers()
    assert allowed[space_app.BM25] == "bm25" and "local:plain-llm" not in allowed
    with pytest.raises(PosbiasError, match="not in this Space's allow-list"):
        space_app.get_listwise_reranker(str(root / "plain-llm"), space_app.EXAMPLES_TASK)


def test_sliding_builds_the_curve_and_resets_on_a_new_query(space_app):
    queries = list(space_app.listwise_queries())
    bm25 = space_app.BM25
    state = None
    for position in (1, 20, 7):
        status, table, figure, payload, state = space_app.slide(bm25, queries[0], position, state)
    curve = json.loads(payload)
    assert curve["positions"] == [1, 7, 20] and curve["k"] == 20
    assert len(set(curve["output_rank"])) == 1 and curve["psi"] == 0.0  # BM25 ignores the slot
    assert "Input slot 7 → output rank" in status and "3 of 20 slots" in status
    assert table.count("<mark>") == 1 and figure is not None
    *_, payload, new_state = space_app.slide(bm25, queries[1], 2, state)
    assert json.loads(payload)["positions"] == [2] and new_state.query == queries[1]
    with pytest.raises(PosbiasError, match="unknown query"):
        space_app.slide(bm25, "no such query", 1, None)


def write_task(folder):
    """A BEIR folder of 24 one-line documents and two judged queries."""
    folder.mkdir()
    docs = [f"note {i}: the number {i} is {'even' if i % 2 == 0 else 'odd'}" for i in range(24)]
    lines = [json.dumps({"_id": f"n{i}", "title": "", "text": t}) for i, t in enumerate(docs)]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    queries = [{"_id": "a", "text": "is 3 odd"}, {"_id": "b", "text": "is 8 even"}]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na\tn3\t1\nb\tn8\t1\n")
    return folder


def test_a_debiasfirst_checkpoint_and_a_task_folder(space_app, monkeypatch, tmp_path, tiny_llm):
    from hf_posbias.listwise.training.finetune_settings import ListwiseTrainingSettings
    from hf_posbias.listwise.training.train import train_listwise
    from hf_posbias.listwise.training.trainset import write_train_set

    doc_ids = [f"d{i}" for i in range(4)]
    row = {"query_id": "q", "query": "q?", "doc_ids": doc_ids, "passages": doc_ids}
    data = write_train_set(tmp_path / "data", [dict(row, target=doc_ids)], {})
    root = tmp_path / "ckpts"
    settings = ListwiseTrainingSettings(
        model=tiny_llm, data=str(data), out=str(root / "tuned"), global_batch=1, max_steps=1,
        passage_tokens=6, progress=False,
    )  # fmt: skip
    train_listwise(settings)
    monkeypatch.setenv("POSBIAS_SPACE_CHECKPOINTS", str(root))
    monkeypatch.setenv(space_app.LISTWISE_TASK_ENV, str(write_task(tmp_path / "numbers")))
    assert space_app.listwise_rerankers()["local:tuned"] == str(root / "tuned")
    assert space_app._passage_tokens(str(root / "tuned")) == 6
    labels = list(space_app.listwise_queries())[3:]  # the task's queries follow the examples
    assert [label.split(":")[0] for label in labels] == ["numbers a", "numbers b"]
    status, table, _, payload, state = space_app.slide("local:tuned", labels[0], 3, None)
    curve = json.loads(payload)
    assert curve["positions"] == [3] and 1 <= curve["output_rank"][0] <= 20
    assert 'data-output-rank="' in table and state.reranker == "local:tuned"
