"""`posbias benchmark build beir|msmarco|trec-dl`: standard sets from a folder, the Hub (datasets
patched at its boundary) or ir_datasets (the module patched), as one-bucket task folders that
`posbias evaluate` reads."""

from __future__ import annotations

import json
import sys
import types

import pytest

from hf_posbias.cli import main
from hf_posbias.tasks.beir import write_beir_folder
from hf_posbias.tasks.taskdata import PositionTaskData

CORPUS = {"d1": ("Cats", "cats purr and sleep"), "d2": ("", "dogs bark loudly"),
          "d3": ("", "fish swim in water")}  # fmt: skip
QUERIES = {"q1": "do cats purr", "q2": "which animal barks", "q3": "unjudged"}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 2, "d9": 1}}


def _check_task(folder, name="scifact"):
    data = PositionTaskData.load(folder)
    assert data.info.name == name and data.info.bucket_scheme == "none"
    assert data.bucket_counts() == {"all": 2}
    assert {(q["query_id"], q["doc_id"]) for q in data.qrels} == {("q1", "d1"), ("q2", "d2")}
    assert data.info.extra["dropped"] == {
        "qrels naming an unknown document": 1,
        "queries without a relevant document": 1,
    }
    return data


def test_beir_from_a_downloaded_folder_is_evaluated_like_any_task(
    tmp_path, tiny_sentence_transformer
):
    source = write_beir_folder(tmp_path / "scifact", CORPUS, QUERIES, QRELS)
    out = tmp_path / "task"
    assert (
        main(["benchmark", "build", "beir", "scifact", "--input", str(source), "--out", str(out)])
        == 0
    )
    _check_task(out)
    runs = tmp_path / "runs"
    argv = ["evaluate", "--model", tiny_sentence_transformer, "--task", str(out)]
    argv += ["--out", str(runs)]
    assert main([*argv, "--bootstrap", "10"]) == 0
    summary = json.loads((runs / "summary.json").read_text())
    assert summary["buckets"] == ["all"] and summary["n_queries"] == {"all": 2}
    assert summary["n_buckets"] == 1 and summary["truncated"] == {"all": 0}


def _rows(mapping_rows):
    from datasets import Dataset

    keys = list(mapping_rows[0])
    return Dataset.from_dict({k: [r[k] for r in mapping_rows] for k in keys})


@pytest.fixture
def fake_hub(monkeypatch):
    """datasets.load_dataset answering BeIR/scifact(-qrels) and mteb/scifact from memory."""
    import datasets

    corpus = _rows([{"_id": i, "title": t, "text": x} for i, (t, x) in CORPUS.items()])
    queries = _rows([{"_id": i, "text": x} for i, x in QUERIES.items()])
    qrels = _rows([{"query-id": q, "corpus-id": d, "score": s}
                   for q, docs in QRELS.items() for d, s in docs.items()])  # fmt: skip
    answers = {
        ("BeIR/scifact", "corpus", "corpus"): corpus,
        ("BeIR/scifact", "queries", "queries"): queries,
        ("BeIR/scifact-qrels", None, "test"): qrels,
        ("mteb/scifact", "corpus", "corpus"): corpus,
        ("mteb/scifact", "queries", "queries"): queries,
        ("mteb/scifact", "default", "test"): qrels,
    }
    calls = []

    def load_dataset(path, name=None, split=None, **kwargs):
        calls.append((path, name, split))
        if (path, name, split) not in answers:
            raise FileNotFoundError(f"Dataset {path} ({name}, {split}) doesn't exist on the Hub")
        return answers[(path, name, split)]

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


@pytest.mark.parametrize("source", [None, "mteb/scifact"])
def test_beir_by_name_reads_the_hub_ids_users_know(fake_hub, tmp_path, source):
    out = tmp_path / "task"
    extra = [] if source is None else ["--input", source]
    assert main(["benchmark", "build", "beir", "scifact", *extra, "--out", str(out)]) == 0
    _check_task(out)
    repo = source or "BeIR/scifact"
    assert (repo, "corpus", "corpus") in fake_hub and (repo, "queries", "queries") in fake_hub


def test_a_missing_hub_set_is_one_line(fake_hub, tmp_path, capsys):
    assert main(["benchmark", "build", "beir", "nosuchset", "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "BeIR/nosuchset" in err[0]


def test_trec_dl_and_msmarco_read_ir_datasets(monkeypatch, tmp_path):
    Doc = types.SimpleNamespace
    seen = []

    def load(dataset_id):
        seen.append(dataset_id)
        return Doc(
            docs_iter=lambda: [Doc(doc_id=i, text=x) for i, (_, x) in CORPUS.items()],
            queries_iter=lambda: [Doc(query_id=q, text=t) for q, t in QUERIES.items()],
            qrels_iter=lambda: [Doc(query_id=q, doc_id=d, relevance=s, iteration="0")
                                for q, docs in QRELS.items() for d, s in docs.items()],
        )  # fmt: skip

    monkeypatch.setitem(sys.modules, "ir_datasets", types.SimpleNamespace(load=load))
    out = tmp_path / "dl20"
    assert main(["benchmark", "build", "trec-dl", "--year", "2020", "--out", str(out)]) == 0
    _check_task(out, name="TREC-DL20")
    assert seen == ["msmarco-passage/trec-dl-2020/judged"]
    out = tmp_path / "dev"
    irds = "irds:msmarco-passage/dev/small"
    assert main(["benchmark", "build", "msmarco", "--input", irds, "--out", str(out)]) == 0
    _check_task(out, name="MSMARCO-dev")


def test_ir_datasets_missing_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # import fails
    assert main(["benchmark", "build", "trec-dl", "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install ir_datasets" in err[0]


def test_real_beir_scifact_folder_gives_beirs_test_split(shared_data, tmp_path):
    """BEIR's SciFact written from the allenai CSV export: 5,183 abstracts, 300 claims, 339
    judgements, all kept."""
    from hf_posbias.tasks.builders.scifact import build_scifact_beir

    source = build_scifact_beir(shared_data / "scifact_allenai", tmp_path / "scifact")
    out = tmp_path / "task"
    assert (
        main(["benchmark", "build", "beir", "scifact", "--input", str(source), "--out", str(out)])
        == 0
    )
    data = PositionTaskData.load(out)
    assert (len(data.corpus), len(data.queries), len(data.qrels)) == (5183, 300, 339)
    assert data.info.extra["dropped"] == {}


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


# BEIR's HotpotQA and FEVER folders as BEIR's download leaves them: queries and corpus lines
# carry `metadata`, HotpotQA's ids are numbers and hex strings, FEVER's are Wikipedia page ids,
# some beginning with a quote. YHP26 §4.3 averages both (with SciFact and Climate-FEVER) in
# Table 4.
BEIR_SHAPES = {
    "hotpotqa": (
        [
            {
                "_id": "12",
                "title": "Anarchism",
                "text": "Anarchism is a political philosophy.",
                "metadata": {},
            },
            {
                "_id": "25",
                "title": "Autism",
                "text": "Autism is a developmental disorder.",
                "metadata": {},
            },
        ],
        [
            {
                "_id": "5a8b57f25542995d1e6f1371",
                "text": "Which philosophy rejects rulers?",
                "metadata": {"answer": "Anarchism"},
            },
            {
                "_id": "5a8c7595554299585d9e36b6",
                "text": "What disorder affects development?",
                "metadata": {"answer": "Autism"},
            },
        ],
        [("5a8b57f25542995d1e6f1371", "12"), ("5a8c7595554299585d9e36b6", "25")],
    ),
    "fever": (
        [
            {
                "_id": '"Heroes"_(David_Bowie_album)',
                "title": '"Heroes" (David Bowie album)',
                "text": "Heroes is the twelfth studio album by David Bowie.",
                "metadata": {},
            },
            {
                "_id": "Nikolaj_Coster-Waldau",
                "title": "Nikolaj Coster-Waldau",
                "text": "Nikolaj Coster-Waldau is a Danish actor.",
                "metadata": {},
            },
        ],
        [
            {"_id": "75397", "text": "Heroes was recorded by David Bowie.", "metadata": {}},
            {"_id": "150448", "text": "Nikolaj Coster-Waldau is an actor.", "metadata": {}},
        ],
        [("75397", '"Heroes"_(David_Bowie_album)'), ("150448", "Nikolaj_Coster-Waldau")],
    ),
}


@pytest.mark.parametrize("name", sorted(BEIR_SHAPES))
def test_beir_hotpotqa_and_fever_folders_keep_every_judgement(tmp_path, name):
    corpus, queries, qrels = BEIR_SHAPES[name]
    source = tmp_path / name
    (source / "qrels").mkdir(parents=True)
    _write_jsonl(source / "corpus.jsonl", corpus)
    _write_jsonl(source / "queries.jsonl", queries)
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t1" for q, d in qrels)]
    (source / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "task"
    assert (
        main(["benchmark", "build", "beir", name, "--input", str(source), "--out", str(out)]) == 0
    )
    data = PositionTaskData.load(out)
    assert data.info.name == name and data.bucket_counts() == {"all": 2}
    assert {(q["query_id"], q["doc_id"]) for q in data.qrels} == set(qrels)
    assert data.info.extra["dropped"] == {}
