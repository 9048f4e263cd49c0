"""Pos-Aug, build-train, and reading RankZephyr / FIRST training data."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.training.augment import augment_rows, pos_aug
from hf_posbias.listwise.training.trainset import (
    read_train_set,
    rows_from_conversations,
    target_ranks,
    write_train_set,
)


def make_row(k: int, qid: str = "q") -> dict:
    doc_ids = [f"{qid}-d{i}" for i in range(k)]
    return {
        "query_id": qid,
        "query": f"query {qid}",
        "doc_ids": doc_ids,
        "passages": [f"text of {d}" for d in doc_ids],
        "target": list(reversed(doc_ids)),
    }


@pytest.mark.parametrize(("k", "groups"), [(20, 4), (20, 5), (20, 20), (6, 1), (12, 3)])
def test_every_passage_visits_every_group_slot_once(k, groups):
    row = make_row(k)
    rows = pos_aug(row, groups, seed=7, source_id="s")
    assert len(rows) == groups and [r["rotation"] for r in rows] == list(range(groups))
    size = k // groups
    slots: dict[str, Counter] = {d: Counter() for d in row["doc_ids"]}
    for r in rows:
        assert r["target"] == row["target"] and r["source_id"] == "s"
        assert sorted(r["doc_ids"]) == sorted(row["doc_ids"])
        assert [row["passages"][row["doc_ids"].index(d)] for d in r["doc_ids"]] == r["passages"]
        for position, doc in enumerate(r["doc_ids"]):
            slots[doc][position // size] += 1
    assert all(counter == Counter(range(groups)) for counter in slots.values())


def test_augment_is_seeded_and_refuses_groups_not_dividing_k():
    rows = [make_row(6, "a"), make_row(6, "b")]
    assert augment_rows(rows, 3, seed=1) == augment_rows(rows, 3, seed=1)
    assert augment_rows(rows, 3, seed=1) != augment_rows(rows, 3, seed=2)
    with pytest.raises(InputError, match="--groups 4 does not divide the window size k=6"):
        augment_rows(rows, 4)


def test_augment_cli_round_trip(tmp_path, capsys):
    source = write_train_set(tmp_path / "train", [make_row(20, "a"), make_row(20, "b")], {})
    code = main(
        [
            "listwise",
            "augment",
            "--data",
            str(source),
            "--groups",
            "4",
            "--out",
            str(tmp_path / "aug"),
        ]
    )
    assert code == 0
    rows = read_train_set(tmp_path / "aug")
    assert len(rows) == 8 and {r["source_id"] for r in rows} == {"a:0", "b:1"}
    info = json.loads((tmp_path / "aug" / "info.json").read_text())
    assert info["rows"] == 8 and info["pos_aug_groups"] == 4
    code = main(
        [
            "listwise",
            "augment",
            "--data",
            str(source),
            "--groups",
            "3",
            "--out",
            str(tmp_path / "bad"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--groups 3 does not divide" in err and not (tmp_path / "bad").exists()


def test_build_train_puts_relevant_first_then_the_first_stage(beir_task, tmp_path):
    code = main(
        [
            "listwise",
            "build-train",
            "--task",
            str(beir_task),
            "--k",
            "5",
            "--out",
            str(tmp_path / "bt"),
            "--no-progress",
        ]
    )
    assert code == 0
    rows = read_train_set(tmp_path / "bt")
    assert {r["query_id"] for r in rows} == {"q1", "q3", "q5", "q7"}  # the train split
    for row in rows:
        assert row["target"][0] == f"d{int(row['query_id'][1:]):02d}"
        rest = [d for d in row["doc_ids"] if d != row["target"][0]]
        assert row["target"][1:] == rest  # first-stage order after the relevant one
    info = json.loads((tmp_path / "bt" / "info.json").read_text())
    assert "stand-in" in info["labels"] and info["split"] == "train"


def test_build_train_with_a_cross_encoder_teacher(beir_task, tmp_path, tiny_cross_encoder):
    code = main(
        [
            "listwise",
            "build-train",
            "--task",
            str(beir_task),
            "--k",
            "4",
            "--teacher",
            tiny_cross_encoder,
            "--max-queries",
            "2",
            "--out",
            str(tmp_path / "bt"),
            "--no-progress",
        ]
    )
    assert code == 0
    rows = read_train_set(tmp_path / "bt")
    assert len(rows) == 2 and all(sorted(r["target"]) == sorted(r["doc_ids"]) for r in rows)


def rankzephyr_record(rid: str, style: str, answer: str) -> dict:
    kind = "alphabetical" if style == "letters" else "numerical"
    labels = ["A", "B", "C"] if style == "letters" else ["1", "2", "3"]
    passages = ["Paris is the capital\nof France.", "Berlin is big.", "Rome [1] is old."]
    body = "\n".join(f"[{label}] {text}" for label, text in zip(labels, passages))
    human = (
        f"I will provide you with 3 passages, each indicated by a {kind} identifier []. "
        f"Rank the passages based on their relevance to the search query: capital of "
        f"france.\n\n{body}\nSearch Query: capital of france.\nRank the 3 passages above "
        "based on their relevance to the search query. All the passages should be "
        "included and listed using identifiers, in descending order of relevance. The "
        "output format should be [] > [], e.g., [2] > [1], Only respond with the ranking "
        "results, do not say any word or explain."
    )
    return {
        "id": rid,
        "conversations": [
            {"from": "system", "value": "You are RankLLM."},
            {"from": "human", "value": human},
            {"from": "gpt", "value": answer},
        ],
    }


def test_rankzephyr_and_first_records_become_training_rows(tmp_path, capsys):
    records = [
        rankzephyr_record("r1", "numbers", "[1] > [3] > [2]"),
        rankzephyr_record("r2", "letters", "[A] > [C]"),
        {"id": "r3", "conversations": [{"from": "human", "value": "hi"}]},
    ]
    rows, counts = rows_from_conversations(records)
    assert counts["rows"] == 2 and counts["skipped"] == 1
    assert counts["answers_with_appended"] == 1 and counts["appended_identifiers"] == 1
    numbers, letters = rows
    assert numbers["query"] == "capital of france"
    assert numbers["passages"][0] == "Paris is the capital\nof France."
    assert numbers["passages"][2] == "Rome [1] is old."
    assert numbers["target"] == ["r1/1", "r1/3", "r1/2"]
    assert letters["target"] == ["r2/1", "r2/3", "r2/2"]  # [B] appended in input order
    assert target_ranks(letters) == [0, 2, 1]
    path = tmp_path / "rz.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    code = main(["listwise", "convert", "--data", str(path), "--out", str(tmp_path / "conv")])
    assert code == 0 and len(read_train_set(tmp_path / "conv")) == 2
    assert "1 skipped" in capsys.readouterr().out
    assert len(read_train_set(path)) == 2  # a conversations JSONL is read directly too


def test_training_set_validation():
    bad = make_row(3)
    bad["target"] = bad["target"][:2]
    with pytest.raises(InputError, match="not a permutation"):
        write_train_set("/tmp/never-written", [bad], {})
