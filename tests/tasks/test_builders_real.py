"""SciFact and Climate-FEVER builders on the real files in ../shared/data (skipped when absent).

Counts are recomputed independently from the raw files (pandas / json), offsets are checked
against the evidence sentence text, buckets against the offsets.
"""

from __future__ import annotations

import json
import re

import pytest

from hf_posbias.cli import main
from hf_posbias.tasks.bucketing import THIRDS
from hf_posbias.tasks.builders.climate_fever import build_climate_fever
from hf_posbias.tasks.builders.scifact import build_scifact, parse_sentence_list
from hf_posbias.tasks.taskdata import PositionTaskData

pytestmark = pytest.mark.shared_data


def _third(start: int, length: int) -> str:
    # Independent of positions.py: integer arithmetic on 3 * start vs length.
    if 3 * start < length:
        return "begin"
    if 3 * start < 2 * length:
        return "middle"
    return "end"


@pytest.fixture(scope="module")
def scifact_task(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("scifact")
    assert main(["benchmark", "build", "scifact", "--input", str(shared_data / "scifact_allenai"),
                 "--out", str(out)]) == 0  # fmt: skip
    return PositionTaskData.load(out)


@pytest.fixture(scope="module")
def climate_task(shared_data):
    return build_climate_fever(shared_data / "climate_fever" / "climate-fever.jsonl")


def test_scifact_counts_match_the_csv(shared_data, scifact_task):
    import pandas as pd

    claims = pd.read_csv(shared_data / "scifact_allenai" / "claims_validation.csv")
    with_evidence = claims[claims["evidence_doc_id"].notna()]
    assert claims["id"].nunique() == 300  # BEIR SciFact test = validation split
    assert len(scifact_task.queries) == with_evidence["id"].nunique()
    pairs = {(str(r.id), str(int(r.evidence_doc_id))) for r in with_evidence.itertuples()}
    got = {(str(r["query_id"]), str(r["doc_id"])) for r in scifact_task.qrels}
    assert got == pairs
    corpus = pd.read_csv(shared_data / "scifact_allenai" / "corpus_train.csv")
    assert len(scifact_task.corpus) == len(corpus)
    report = scifact_task.info.extra["build_report"]
    assert report["dropped"] == {"claim without evidence": 300 - len(scifact_task.queries)}


def test_scifact_offsets_point_at_the_first_evidence_sentence(shared_data, scifact_task):
    import pandas as pd

    claims = pd.read_csv(shared_data / "scifact_allenai" / "claims_validation.csv")
    corpus = pd.read_csv(shared_data / "scifact_allenai" / "corpus_train.csv")
    abstracts = {str(r.doc_id): r.abstract for r in corpus.itertuples()}
    docs = {d["id"]: d for d in scifact_task.corpus}
    first_doc = {}
    indices: dict[tuple[str, str], list[int]] = {}
    for r in claims[claims["evidence_doc_id"].notna()].itertuples():
        key = (str(r.id), str(int(r.evidence_doc_id)))
        first_doc.setdefault(str(r.id), key[1])
        indices.setdefault(key, []).extend(int(x) for x in re.findall(r"\d+", r.evidence_sentences))
    qrels = scifact_task.relevant_docs()
    for q in scifact_task.queries:
        doc_id = first_doc[q["id"]]
        assert doc_id in qrels[q["id"]]
        sentence = parse_sentence_list(abstracts[doc_id])[min(indices[(q["id"], doc_id)])]
        text = docs[doc_id]["text"]
        assert text[q["evidence_start"] : q["evidence_end"]] == sentence
        assert q["doc_length"] == len(text)
        assert q["bucket"] == _third(q["evidence_start"], q["doc_length"])


def test_scifact_abstract_parsing_keeps_quotes(shared_data):
    import pandas as pd

    corpus = pd.read_csv(shared_data / "scifact_allenai" / "corpus_train.csv")
    # numpy writes a sentence containing an apostrophe with double quotes: "It's …"
    row = corpus[corpus["abstract"].str.contains('\n "', regex=False)].iloc[0]
    sentences = parse_sentence_list(row["abstract"])
    assert any("'" in s for s in sentences)
    assert not any(s.startswith(("'", '"')) and s.endswith(("'", '"')) for s in sentences)
    # every sentence is in the document text exactly once in order
    assert len(sentences) == row["abstract"].count("\n ") + 1


def test_scifact_train_split_and_cli_refuses_test(shared_data):
    data = build_scifact(shared_data / "scifact_allenai", split="train")
    assert data.info.name == "SciFact-Evidence-train"
    import pandas as pd

    claims = pd.read_csv(shared_data / "scifact_allenai" / "claims_train.csv")
    assert len(data.queries) == claims[claims["evidence_doc_id"].notna()]["id"].nunique()
    with pytest.raises(SystemExit) as exc:
        main(["benchmark", "build", "scifact", "--input", str(shared_data / "scifact_allenai"),
              "--out", "x", "--split", "test"])  # fmt: skip
    assert exc.value.code == 2


def test_scifact_test_split_has_no_labels(shared_data):
    from hf_posbias.errors import InputError

    with pytest.raises(InputError, match="no usable queries"):
        build_scifact(shared_data / "scifact_allenai", split="test")


def test_climate_fever_counts_match_the_release(shared_data, climate_task):
    rows = [
        json.loads(line)
        for line in (shared_data / "climate_fever" / "climate-fever.jsonl").open()
        if line.strip()
    ]
    keep = {"SUPPORTS", "REFUTES"}
    selected = [r for r in rows if any(e["evidence_label"] in keep for e in r["evidences"])]
    assert len(climate_task.queries) == len(selected)
    pairs = {
        (r["claim_id"], e["article"])
        for r in selected
        for e in r["evidences"]
        if e["evidence_label"] in keep
    }
    assert {(q["query_id"], q["doc_id"]) for q in climate_task.qrels} == pairs
    articles = {e["article"] for r in rows for e in r["evidences"]}
    assert {d["id"] for d in climate_task.corpus} == articles
    assert climate_task.info.extra["position_mode"] == "reconstructed"
    assert "approximation" in climate_task.info.extra["position_note"]
    dropped = climate_task.info.extra["build_report"]["dropped"]
    assert sum(dropped.values()) == len(rows) - len(selected)


def test_climate_fever_offsets_point_at_the_evidence(shared_data, climate_task):
    rows = {
        r["claim_id"]: r
        for r in map(json.loads, (shared_data / "climate_fever" / "climate-fever.jsonl").open())
    }
    docs = {d["id"]: d["text"] for d in climate_task.corpus}
    for q in climate_task.queries:
        first = next(
            e for e in rows[q["id"]]["evidences"] if e["evidence_label"] in ("SUPPORTS", "REFUTES")
        )
        text = docs[first["article"]]
        assert text[q["evidence_start"] : q["evidence_end"]] == first["evidence"]
        assert q["bucket"] == _third(q["evidence_start"], len(text))
    # reconstruction keeps sentence order: sentence k+1 starts after sentence k
    order = {}
    for r in rows.values():
        for e in r["evidences"]:
            title, _, idx = e["evidence_id"].rpartition(":")
            order.setdefault(title, {})[int(idx)] = e["evidence"]
    title = max(order, key=lambda t: len(order[t]))
    text = docs[title]
    starts = [text.index(order[title][i]) for i in sorted(order[title])]
    assert starts == sorted(starts)


def test_climate_fever_exact_mode_with_a_beir_corpus(shared_data, tmp_path, climate_task):
    # A BEIR-format corpus holding longer article texts: the evidence is found inside them.
    docs = {d["id"]: d["text"] for d in climate_task.corpus}
    corpus = tmp_path / "corpus.jsonl"
    with corpus.open("w") as f:
        for title, text in docs.items():
            padded = "Lead paragraph that the release never quotes. " * 20 + text
            f.write(json.dumps({"_id": title, "title": title, "text": padded}) + "\n")
    data = build_climate_fever(shared_data / "climate_fever" / "climate-fever.jsonl", corpus=corpus)
    assert data.info.extra["position_mode"] == "exact"
    assert len(data.queries) == len(climate_task.queries)
    shifted = {q["id"]: q for q in data.queries}
    prefix = len("Lead paragraph that the release never quotes. ") * 20
    for q in climate_task.queries[:50]:
        assert shifted[q["id"]]["evidence_start"] == q["evidence_start"] + prefix
    assert THIRDS.labels == tuple(data.info.buckets)
