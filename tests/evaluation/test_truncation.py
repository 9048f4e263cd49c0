"""Truncation counts of `posbias evaluate` equal an independent count with the model's tokenizer,
and --exclude-truncated leaves exactly those queries out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

WORDS = "lantern orchard harbor glacier meadow canyon violin tractor pepper saddle comet marble"


def _task(folder: Path) -> str:
    """Eight documents of 30 words; query i's evidence is word 3 * i (early to late)."""
    from hf_posbias.tasks.builders.jsonl import build_from_records

    words = WORDS.split()
    records = []
    for i in range(8):
        doc = [f"{words[(i + k) % len(words)]}" for k in range(30)]
        doc[3 * i] = f"target{i}"
        text = " ".join(doc)
        records.append({"query": f"target{i}", "document": text,
                        "evidence_start": text.index(f"target{i}")})  # fmt: skip
    return str(build_from_records(records, name="TruncTask").save(folder))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    """A tiny random bi-encoder that reads 10 tokens."""
    from hf_posbias.testing import build_tiny_sentence_transformer

    folder = tmp_path_factory.mktemp("trunc") / "st"
    build_tiny_sentence_transformer(folder)
    config = folder / "sentence_bert_config.json"
    data = json.loads(config.read_text())
    data["max_seq_length"] = 10
    config.write_text(json.dumps(data))
    return str(folder)


def test_counts_equal_an_independent_count_and_exclusion_drops_them(tiny, tmp_path):
    from transformers import AutoTokenizer

    from hf_posbias.evaluation.runs.runner import evaluate_model
    from hf_posbias.tasks.taskdata import PositionTaskData

    task = _task(tmp_path / "task")
    [summary] = evaluate_model(tiny, [task], out=tmp_path / "run", bootstrap=20, progress=False)
    assert summary.max_seq_length == 10 and not summary.exclude_truncated
    assert summary.n_buckets == len(summary.buckets) and "[lo, hi)" in summary.bucket_scheme

    # Independent count: tokens before the evidence (no specials) + the leading [CLS].
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    data = PositionTaskData.load(task)
    docs = {d["id"]: d["text"] for d in data.corpus}
    judged = data.relevant_docs()
    expected = {b: 0 for b in data.info.buckets}
    for q in data.queries:
        [doc] = judged[q["id"]]
        before = tokenizer(docs[doc][: q["evidence_start"]], add_special_tokens=False)
        expected[q["bucket"]] += len(before["input_ids"]) + 1 >= 10
    assert summary.truncated == expected
    total = sum(expected.values())
    assert 0 < total < len(data.queries)
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["truncated"] == expected and written["max_seq_length"] == 10
    md = (tmp_path / "run" / "summary.md").read_text()
    counts = ", ".join(f"{b} {n}" for b, n in expected.items())
    assert f"max_seq_length 10; evidence at or beyond it: {counts}" in md
    assert "PSI per document token-length stratum" in md

    [kept] = evaluate_model(
        tiny, [task], out=tmp_path / "kept", bootstrap=20, progress=False, exclude_truncated=True
    )
    assert kept.exclude_truncated and kept.truncated == expected
    assert sum(kept.n_queries.values()) == sum(summary.n_queries.values()) - total
    # Every document is in the first stratum of PosIR's token lengths.
    assert set(summary.psi_by_token_length) == {"0-512"}
    assert summary.psi_by_token_length["0-512"]["n_queries"] == len(data.queries)


def test_exclude_truncated_needs_a_model_with_a_token_limit(tmp_path, capsys):
    from hf_posbias.cli import main

    task = _task(tmp_path / "task")
    argv = ["evaluate", "--model", "bm25", "--task", task, "--out", str(tmp_path / "o")]
    assert main([*argv, "--exclude-truncated", "--bootstrap", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no token limit" in err[0]
