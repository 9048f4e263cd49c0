"""Builders on small fixtures written in the upstream formats: SQuAD v2, FineWeb-PosQ, PosIR,
FEVER, HotpotQA."""

from __future__ import annotations

import json
import random

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.tasks.builders.fever import build_fever
from hf_posbias.tasks.builders.fineweb import build_fineweb_posq
from hf_posbias.tasks.builders.hotpotqa import build_hotpotqa
from hf_posbias.tasks.builders.posir import build_posir
from hf_posbias.tasks.builders.squad import build_squad_posq
from hf_posbias.tasks.taskdata import PositionTaskData

# ---------------------------------------------------------------------------------- SQuAD v2

SQUAD_STARTS = [0, 99, 100, 150, 200, 300, 400, 499, 500, 3120, 3121]


def _squad_json(tmp_path, n_extra: int = 0):
    context = "".join(chr(ord("a") + i % 26) for i in range(3200))
    other = "A second passage that only unanswerable questions use."
    qas = [
        {
            "id": f"q{start}",
            "question": f"What is at {start}?",
            "is_impossible": False,
            "answers": [
                {"text": context[start : start + 3], "answer_start": start},
                {"text": "zzz", "answer_start": 5},  # only the FIRST answer counts
            ],
        }
        for start in SQUAD_STARTS
    ]
    qas += [
        {"id": f"x{i}", "question": f"Extra {i}?", "is_impossible": False,
         "answers": [{"text": context[10:12], "answer_start": 10}]}
        for i in range(n_extra)
    ]  # fmt: skip
    train = {"data": [{"title": "T", "paragraphs": [{"context": context, "qas": qas}]}]}
    dev = {
        "data": [
            {
                "title": "U",
                "paragraphs": [
                    {
                        "context": other,
                        "qas": [
                            {
                                "id": "u1",
                                "question": "Unanswerable?",
                                "is_impossible": True,
                                "answers": [],
                                "plausible_answers": [{"text": "A", "answer_start": 0}],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    folder = tmp_path / "squad"
    folder.mkdir()
    (folder / "train-v2.0.json").write_text(json.dumps(train))
    (folder / "dev-v2.0.json").write_text(json.dumps(dev))
    return folder, context, other


def test_squad_boundaries_each_query_in_exactly_one_bucket(tmp_path):
    folder, context, other = _squad_json(tmp_path)
    out = tmp_path / "task"
    assert (
        main(["benchmark", "build", "squad-posq", "--input", str(folder), "--out", str(out)]) == 0
    )
    data = PositionTaskData.load(out)
    buckets = {q["id"]: q["bucket"] for q in data.queries}
    assert buckets["q0"] == "0-100" and buckets["q99"] == "0-100"
    assert buckets["q100"] == "100-200"  # Z25's lo <= start <= hi would also count it in 0-100
    assert buckets["q200"] == "200-300" and buckets["q500"] == "500-3120"
    assert buckets["q499"] == "400-500" and buckets["q3120"] == "500-3120"
    assert "q3121" not in buckets and "u1" not in buckets
    assert len(data.queries) == len(set(buckets)) == len(SQUAD_STARTS) - 1
    assert sorted(d["text"] for d in data.corpus) == sorted([context, other])
    q = next(q for q in data.queries if q["id"] == "q150")
    assert (q["evidence_start"], q["evidence_end"], q["doc_length"]) == (150, 153, 3200)
    assert data.info.buckets == ["0-100", "100-200", "200-300", "300-400", "400-500", "500-3120"]
    assert "lo <= start <= hi" in data.info.extra["bucket_boundary_rule"]
    dropped = data.info.extra["build_report"]["dropped"]
    assert dropped["unanswerable question"] == 1
    assert sum(v for k, v in dropped.items() if "outside the bucket range" in k) == 1
    assert data.info.citation.count("@") == 2 and "2505.13950" in data.info.reference


def test_squad_tiny_is_the_seed_42_sample(tmp_path):
    folder, _, _ = _squad_json(tmp_path, n_extra=40)
    one = build_squad_posq(folder, tiny=True, tiny_size=12)
    two = build_squad_posq(folder, tiny=True, tiny_size=12)
    ids = [q["id"] for q in one.queries]
    assert ids == [q["id"] for q in two.queries]
    # Z25: random.seed(42); random.shuffle(answerable); [:n] — recomputed here independently
    answerable = [f"q{s}" for s in SQUAD_STARTS] + [f"x{i}" for i in range(40)]
    random.seed(42)
    random.shuffle(answerable)
    expected = [i for i in answerable[:12] if i != "q3121"]
    assert ids == expected
    assert len(one.corpus) == 2  # corpus unchanged
    assert build_squad_posq(folder, tiny=True, tiny_size=12, seed=7).queries != one.queries


def test_squad_hub_layout_parquet_folder(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "squad_v2" / "squad_v2"
    folder.mkdir(parents=True)
    ctx = "x" * 120 + "answer here" + "y" * 50
    for split, qid in (("train", "t1"), ("validation", "v1")):
        rows = [
            {"id": qid, "title": "T", "context": ctx, "question": f"{qid}?",
             "answers": {"text": ["answer"], "answer_start": [120]}},
            {"id": qid + "u", "title": "T", "context": "other " * 10, "question": "no?",
             "answers": {"text": [], "answer_start": []}},
        ]  # fmt: skip
        pq.write_table(pa.Table.from_pylist(rows), folder / f"{split}-00000-of-00001.parquet")
    data = build_squad_posq(tmp_path / "squad_v2")
    assert {q["id"]: q["bucket"] for q in data.queries} == {"t1": "100-200", "v1": "100-200"}
    assert len(data.corpus) == 2


def test_squad_bad_source_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": "v2.0"}')
    assert (
        main(["benchmark", "build", "squad-posq", "--input", str(bad), "--out", str(tmp_path)]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1


# ------------------------------------------------------------------------------ FineWeb-PosQ


def _fineweb_rows(n: int = 30):
    rows = []
    for i in range(n):
        passage = f"Passage {i}. " + "word " * 200
        labels = [["before"], ["middle"], ["after"], ["before", "middle"]][i % 4]
        rows.append({"question": f"Question {i}?", "content": passage, "span_class": labels,
                     "answer": "a", "span": [0, 5]})  # fmt: skip
    rows.append({"question": None, "content": "A distractor passage. " * 30, "span_class": []})
    rows.append({"question": "", "content": "Another distractor. " * 30, "span_class": []})
    rows.append({"question": "Odd?", "content": "Odd passage " * 40, "span_class": ["sideways"]})
    rows.append(dict(rows[0]))  # exact duplicate row
    return rows


def test_fineweb_labels_multilabel_and_distractors(tmp_path):
    path = tmp_path / "fineweb.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _fineweb_rows()))
    out = tmp_path / "task"
    assert (
        main(["benchmark", "build", "fineweb-posq", "--input", str(path), "--out", str(out)]) == 0
    )
    data = PositionTaskData.load(out)
    # expected counts recomputed from the label pattern: one query per question, in its first
    # label's bucket; the other labels are extra_buckets (what the zeng2025 scoring counts)
    expected = {"begin": 0, "middle": 0, "end": 0}
    for i in range(30):
        expected[["begin", "middle", "end", "begin"][i % 4]] += 1
    assert data.bucket_counts() == expected
    extra = [q["extra_buckets"] for q in data.queries if q["extra_buckets"]]
    assert extra == [["middle"]] * sum(1 for i in range(30) if i % 4 == 3)
    assert len(data.corpus) == 30 + 3  # + 2 distractors + the passage of the odd question
    assert all(q["evidence_start"] == -1 for q in data.queries)
    report = data.info.extra["build_report"]
    assert report["dropped"]["duplicate (question, passage) row"] == 1
    assert report["dropped"]["unknown position label 'sideways'"] == 1
    assert report["notes"]["distractor_passages"] == 2
    multi = sum(1 for i in range(30) if i % 4 == 3)
    assert report["notes"]["questions_with_several_position_labels"] == multi


def test_fineweb_tiny_is_deterministic_and_balanced(tmp_path):
    rows = _fineweb_rows(60)
    one = build_fineweb_posq(rows=rows, tiny=True, tiny_per_position=5)
    two = build_fineweb_posq(rows=rows, tiny=True, tiny_per_position=5)
    assert one.bucket_counts() == {"begin": 5, "middle": 5, "end": 5}
    assert [q["id"] for q in one.queries] == [q["id"] for q in two.queries]
    other = build_fineweb_posq(rows=rows, tiny=True, tiny_per_position=5, seed=1)
    assert {q["id"] for q in other.queries} != {q["id"] for q in one.queries}
    assert len(one.corpus) == len(build_fineweb_posq(rows=rows).corpus)


def test_fineweb_configurable_columns(tmp_path):
    rows = [{"q": "Where?", "passage": "text " * 50, "pos": "end"}]
    data = build_fineweb_posq(rows=rows, question_column="q", passage_column="passage",
                              label_column="pos")  # fmt: skip
    assert data.bucket_counts()["end"] == 1
    with pytest.raises(InputError, match="missing column"):
        build_fineweb_posq(rows=rows)


# ------------------------------------------------------------------------------------ PosIR


def _posir_snapshot(root):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for domain, n in (("law_judiciary", 6), ("news_media", 4), ("sports", 3)):
        folder = root / "eng-Latn" / domain
        (folder / "qrels").mkdir(parents=True)
        corpus, queries, qrels = [], [], []
        for i in range(n):
            text = "w" * (400 + 100 * i)
            corpus.append({"_id": f"d{i}", "title": "", "text": text})
            start = (len(text) * i) // n
            queries.append({"_id": f"q{i}", "text": f"{domain} query {i}",
                            "pos_char_span": [start, start + 20], "pos_char_length": len(text),
                            "pos_token_length": 300 * (i + 1)})  # fmt: skip
            qrels.append({"query-id": f"q{i}", "corpus-id": f"d{i}", "score": 1})
        queries.append({"_id": "bad", "text": "no span", "pos_char_span": [-1, -1],
                        "pos_char_length": 0, "pos_token_length": 0})  # fmt: skip
        qrels.append({"query-id": "bad", "corpus-id": "d0", "score": 1})
        pq.write_table(pa.Table.from_pylist(corpus), folder / "corpus.parquet")
        pq.write_table(pa.Table.from_pylist(queries), folder / "queries.parquet")
        pq.write_table(pa.Table.from_pylist(qrels), folder / "qrels" / "test.parquet")
    return root


def test_posir_20_bins_centre_position(tmp_path):
    root = _posir_snapshot(tmp_path / "PosIR")
    data = build_posir(root, domains=["Law Judiciary", "News-Media"])
    assert len(data.info.buckets) == 20 and data.info.name == "PosIR"
    assert len(data.queries) == 10
    assert all(q["id"].split("/")[0] in ("law_judiciary", "news_media") for q in data.queries)
    for q in data.queries:
        centre = (q["evidence_start"] + q["evidence_end"]) / 2 / q["doc_length"]
        # PosIR's pd.cut(np.linspace(0, 1, 21), right=True, include_lowest=True)
        index = max(0, -(-round(centre * 20 * 1e9) // int(1e9)) - 1)
        assert data.info.buckets.index(q["bucket"]) == index
    assert data.info.extra["build_report"]["dropped"] == {
        "missing or invalid pos_char_span / pos_char_length": 2
    }


def test_posir_token_length_and_thirds_and_cli(tmp_path):
    root = _posir_snapshot(tmp_path / "PosIR")
    tok = build_posir(root, domains=["law judiciary"], scheme="token-length")
    # token lengths 300, 600, ..., 1800 → (0,512]: 300; (512,1024]: 600, 900; …
    assert tok.bucket_counts() == {"0-512": 1, "512-1024": 2, "1024-1536": 2, "1536+": 1}
    out = tmp_path / "thirds"
    assert main(["benchmark", "build", "posir", "--input", str(root), "--out", str(out),
                 "--domains", "all", "--scheme", "thirds"]) == 0  # fmt: skip
    thirds = PositionTaskData.load(out)
    assert thirds.info.buckets == ["begin", "middle", "end"]
    assert len(thirds.queries) == 6 + 4 + 3
    with pytest.raises(InputError, match="not found.*available: law_judiciary"):
        build_posir(root, domains=["Subject Education"])


# ------------------------------------------------------------------------------------ FEVER


def test_fever_claims_and_wiki_pages(tmp_path):
    pages = tmp_path / "wiki-pages"
    pages.mkdir()
    page_rows = [
        {"id": "Nikolaj_Coster-Waldau", "text": "x",
         "lines": "0\tNikolaj Coster-Waldau is a Danish actor .\tDanish\n1\t\n"
                  "2\tHe played Jaime Lannister .\tJaime Lannister\n3\tHe lives in Copenhagen ."},
        {"id": "Fox_Broadcasting_Company", "text": "x",
         "lines": "0\tThe Fox Broadcasting Company is an American network .\n"
                  "1\tIt launched in 1986 .\n2\tIt is owned by Fox Corporation ."},
        {"id": "Unrelated_page", "text": "x", "lines": "0\tNothing to see here ."},
    ]  # fmt: skip
    (pages / "wiki-001.jsonl").write_text("\n".join(json.dumps(p) for p in page_rows))
    claims = [
        {"id": 1, "verifiable": "VERIFIABLE", "label": "SUPPORTS",
         "claim": "Nikolaj Coster-Waldau worked with the Fox Broadcasting Company.",
         "evidence": [[[1, 2, "Nikolaj_Coster-Waldau", 2], [1, 3, "Fox_Broadcasting_Company", 0]]]},
        {"id": 2, "verifiable": "VERIFIABLE", "label": "REFUTES",
         "claim": "Fox launched in 2001.",
         "evidence": [[[4, 5, "Fox_Broadcasting_Company", 2]], [[4, 6, "Missing_page", 0]]]},
        {"id": 3, "verifiable": "NOT VERIFIABLE", "label": "NOT ENOUGH INFO",
         "claim": "Something unknowable.", "evidence": [[[7, None, None, None]]]},
    ]  # fmt: skip
    claims_path = tmp_path / "shared_task_dev.jsonl"
    claims_path.write_text("\n".join(json.dumps(c) for c in claims))
    out = tmp_path / "task"
    argv = ["benchmark", "build", "fever", "--input", str(claims_path), "--wiki-pages", str(pages)]
    assert main([*argv, "--out", str(out)]) == 0
    data = PositionTaskData.load(out)
    docs = {d["id"]: d["text"] for d in data.corpus}
    assert set(docs) == {"Nikolaj_Coster-Waldau", "Fox_Broadcasting_Company", "Unrelated_page"}
    q1 = next(q for q in data.queries if q["id"] == "1")
    assert docs["Nikolaj_Coster-Waldau"][q1["evidence_start"] : q1["evidence_end"]] == (
        "He played Jaime Lannister ."
    )
    assert data.relevant_docs()["1"] == {"Nikolaj_Coster-Waldau": 1, "Fox_Broadcasting_Company": 1}
    q2 = next(q for q in data.queries if q["id"] == "2")
    assert docs["Fox_Broadcasting_Company"][q2["evidence_start"] :].startswith("It is owned")
    assert q2["bucket"] == "end"
    dropped = data.info.extra["build_report"]["dropped"]
    assert dropped["evidence: page not in the wiki dump"] == 1
    assert sum(v for k, v in dropped.items() if k.startswith("claim label")) == 1
    small = build_fever(claims_path, pages, all_pages=False)
    assert {d["id"] for d in small.corpus} == {"Nikolaj_Coster-Waldau", "Fox_Broadcasting_Company"}


# --------------------------------------------------------------------------------- HotpotQA


def test_hotpotqa_distractor_format_exact_offsets(tmp_path):
    rows = [
        {"_id": "5a8b57f25542995d1e6f1371", "type": "comparison", "level": "hard",
         "question": "Were Scott Derrickson and Ed Wood of the same nationality?",
         "answer": "yes",
         "supporting_facts": [["Scott Derrickson", 0], ["Ed Wood", 2]],
         "context": [
             ["Ed Wood", ["Edward Davis Wood Jr. was an American filmmaker.",
                          " He was born in 1924.", " He directed Plan 9."]],
             ["Scott Derrickson", ["Scott Derrickson is an American director.",
                                   " He lives in Los Angeles."]],
             ["Distractor", ["Nothing relevant here.", " At all."]],
         ]},
        {"_id": "b", "question": "Broken fact?", "answer": "x",
         "supporting_facts": [["Ed Wood", 9]],
         "context": [["Ed Wood", ["Edward Davis Wood Jr. was an American filmmaker.",
                                  " He was born in 1924.", " He directed Plan 9."]]]},
    ]  # fmt: skip
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps(rows))
    out = tmp_path / "task"
    assert main(["benchmark", "build", "hotpotqa", "--input", str(path), "--out", str(out)]) == 0
    data = PositionTaskData.load(out)
    assert len(data.queries) == 1 and len(data.corpus) == 3
    q = data.queries[0]
    docs = {d["id"]: d["text"] for d in data.corpus}
    assert docs["Scott Derrickson"][q["evidence_start"] : q["evidence_end"]] == (
        "Scott Derrickson is an American director."
    )
    assert q["bucket"] == "begin"
    assert data.relevant_docs()[q["id"]] == {"Scott Derrickson": 1, "Ed Wood": 1}
    report = data.info.extra["build_report"]
    assert report["dropped"]["supporting fact: sentence index out of range"] == 1
    assert report["notes"]["questions_whose_supporting_facts_span_several_buckets"] == 1
    # the Hub's dict-of-lists layout gives the same task
    hub = [{"id": r["_id"], "question": r["question"],
            "supporting_facts": {"title": [t for t, _ in r["supporting_facts"]],
                                 "sent_id": [i for _, i in r["supporting_facts"]]},
            "context": {"title": [t for t, _ in r["context"]],
                        "sentences": [s for _, s in r["context"]]}} for r in rows]  # fmt: skip
    hub_path = tmp_path / "hub.jsonl"
    hub_path.write_text("\n".join(json.dumps(r) for r in hub))
    assert build_hotpotqa(hub_path).queries == data.queries
