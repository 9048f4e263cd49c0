"""Plain retrieval folders (BEIR, MS MARCO TSV): one reader, standard scores checked by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hf_posbias.errors import InputError
from hf_posbias.evaluation.runs.exports import read_trec_run
from hf_posbias.listwise.experiments.taskio import load_rerank_task
from hf_posbias.tasks.beir import read_plain_folder, write_beir_folder

N_QUERIES = 20


@pytest.fixture(scope="module")
def scifact_small(shared_data, tmp_path_factory) -> Path:
    """BEIR SciFact (test split) cut to 20 claims, their cited abstracts and 30 others, plus
    one judgement naming a document that is not in the corpus."""
    from hf_posbias.tasks.builders.scifact import build_scifact_beir

    full = read_plain_folder(
        build_scifact_beir(shared_data / "scifact_allenai", tmp_path_factory.mktemp("full"))
    )
    assert (len(full.corpus), len(full.queries)) == (5183, 300)
    assert sum(len(d) for d in full.qrels.values()) == 339  # BEIR SciFact test: 339 qrels
    qids = list(full.qrels)[:N_QUERIES]
    cited = {d for q in qids for d in full.qrels[q]}
    others = [d for d in full.corpus if d not in cited][:30]
    corpus = {d: full.corpus[d] for d in [*cited, *others]}
    qrels = {q: dict(full.qrels[q]) for q in qids}
    qrels[qids[0]]["no-such-doc"] = 1
    return write_beir_folder(
        tmp_path_factory.mktemp("small"), corpus, {q: full.queries[q] for q in qids}, qrels
    )


def _ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    """Textbook nDCG@10 with linear gains, written independently of the package."""
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def test_bm25_on_a_beir_folder_matches_an_independent_ndcg(scifact_small, tmp_path):
    from hf_posbias.evaluation.runs.runner import evaluate_model

    [summary] = evaluate_model("bm25", [scifact_small], out=tmp_path / "out", bootstrap=200)
    assert summary.buckets == ["all"] and summary.n_queries == {"all": N_QUERIES}
    assert any("1 qrels naming an unknown document (dropped)" in w for w in summary.warnings)
    qrels = read_plain_folder(scifact_small).qrels
    run = read_trec_run(summary.run_path)
    by_hand = []
    recall = []
    for qid, rel in qrels.items():
        ranked = [d for d, _ in sorted(run[qid].items(), key=lambda kv: (-kv[1], kv[0]))]
        by_hand.append(_ndcg_at_10(ranked, rel))
        recall.append(len(set(ranked[:100]) & set(rel)) / len(rel))
    assert summary.mean == pytest.approx(sum(by_hand) / len(by_hand), abs=1e-4)
    assert summary.metrics["recall_at_100"]["all"] == pytest.approx(sum(recall) / len(recall))
    low, high = summary.interval(what="mean")
    assert low < summary.mean < high
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["mean"] == pytest.approx(summary.mean)
    assert Path(summary.per_query_path).is_file()


def test_msmarco_tsv_and_listwise_share_the_reader(tmp_path):
    folder = tmp_path / "marco"
    folder.mkdir()
    (folder / "collection.tsv").write_text("0\tcats purr\n1\tdogs bark\n")
    (folder / "queries.dev.tsv").write_text("7\twhat purrs\n8\twho barks\n")
    (folder / "qrels.dev.tsv").write_text("7 0 0 1\n8 0 1 1\n8 0 5 1\n")
    data = read_plain_folder(folder, "dev")
    assert data.format == "msmarco" and data.qrels == {"7": {"0": 1}, "8": {"1": 1}}
    assert data.dropped == {"qrels naming an unknown document": 1}
    task = load_rerank_task(folder, "dev")
    assert task.passage("1").text == "dogs bark" and task.judged_queries() == ["7", "8"]
    with pytest.raises(InputError, match="no qrels.test.tsv or qrels.tsv"):
        read_plain_folder(folder)
