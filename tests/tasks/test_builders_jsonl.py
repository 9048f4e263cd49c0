"""Bring-your-own tasks: ``posbias benchmark build jsonl`` and ``build_from_records``."""

from __future__ import annotations

import json

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.tasks.builders.common import stable_id
from hf_posbias.tasks.builders.jsonl import build_from_records
from hf_posbias.tasks.taskdata import PositionTaskData

DOC_A = "Alpha facts open the page. " + "filler text " * 20 + "Omega facts close it."
DOC_B = "Beta passage about something else entirely, with the key fact in the middle. " * 2


def _write(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def _run(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_from_jsonl_happy_path(tmp_path, capsys):
    end = DOC_A.index("Omega")
    rows = [
        {"query": "What opens the page?", "document": DOC_A, "evidence_start": 0,
         "evidence_end": 5},
        {"query": "What closes it?", "document": DOC_A, "evidence_start": end},
        {"query": "Key fact?", "document": DOC_B, "evidence_start": len(DOC_B) // 2,
         "doc_id": "b", "title": "Beta"},
        "",  # blank lines are allowed
    ]  # fmt: skip
    src = _write(tmp_path / "mine.jsonl", rows)
    distractors = _write(tmp_path / "d.jsonl", [{"id": "x1", "text": "A distractor."}])
    out = tmp_path / "task"
    code, stdout, _ = _run(["benchmark", "build", "jsonl", "--input", str(src), "--out", str(out),
                            "--distractors", str(distractors)], capsys)  # fmt: skip
    assert code == 0
    assert "begin   1" in stdout and "end     1" in stdout and "dropped: 0" in stdout
    data = PositionTaskData.load(out)
    assert data.info.name == "mine"
    assert data.bucket_counts() == {"begin": 1, "middle": 1, "end": 1}
    ids = {d["id"] for d in data.corpus}
    # the two DOC_A records share one document, id = hash of its text; doc_id is respected
    assert ids == {stable_id("doc", DOC_A), "b", "x1"}
    closes = next(q for q in data.queries if q["text"] == "What closes it?")
    assert (closes["evidence_start"], closes["evidence_end"]) == (end, end)  # end defaults
    assert closes["doc_length"] == len(DOC_A)
    assert data.info.extra["build_report"]["notes"]["distractor_documents"] == 1


def test_relative_edges_and_stable_ids(tmp_path, capsys):
    doc = "x" * 100
    rows = [{"query": f"q{s}", "document": doc, "evidence_start": s} for s in (0, 19, 20, 50, 99)]
    src = _write(tmp_path / "r.jsonl", rows)
    out1, out2 = tmp_path / "one", tmp_path / "two"
    for out in (out1, out2):
        code, _, _ = _run(["benchmark", "build", "jsonl", "--input", str(src), "--out", str(out),
                           "--buckets", "0,0.2,0.5,1"], capsys)  # fmt: skip
        assert code == 0
    data = PositionTaskData.load(out1)
    assert data.info.buckets == ["0-0.2", "0.2-0.5", "0.5-1"]
    assert {q["text"]: q["bucket"] for q in data.queries} == {
        "q0": "0-0.2",
        "q19": "0-0.2",
        "q20": "0.2-0.5",
        "q50": "0.5-1",
        "q99": "0.5-1",
    }
    assert (out1 / "queries.parquet").read_bytes() == (out2 / "queries.parquet").read_bytes()


def test_content_problems_are_counted_and_printed(tmp_path, capsys):
    rows = [
        {"query": "ok", "document": "abcdef", "evidence_start": 1},
        {"query": "  ", "document": "abcdef", "evidence_start": 1},
        {"query": "far", "document": "abcdef", "evidence_start": 6},
        {"query": "neg", "document": "abcdef", "evidence_start": -1},
        {"query": "end", "document": "abcdef", "evidence_start": 2, "evidence_end": 9},
        {"query": "ok", "document": "abcdef", "evidence_start": 1},  # duplicate
    ]
    src = _write(tmp_path / "c.jsonl", rows)
    code, stdout, _ = _run(["benchmark", "build", "jsonl", "--input", str(src), "--out",
                            str(tmp_path / "t")], capsys)  # fmt: skip
    assert code == 0
    assert "dropped: 5" in stdout
    assert "evidence_start outside the document: 2" in stdout
    assert "empty query text: 1" in stdout and "duplicate query id: 1" in stdout
    assert "evidence_end before evidence_start or past the document end: 1" in stdout
    assert len(PositionTaskData.load(tmp_path / "t").queries) == 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"query": "q", "document": "abc", "evidence_start": 0', "malformed JSON"),
        ('["not", "an", "object"]', "expected a JSON object"),
        ('{"query": "q", "document": "abc"}', "missing field(s) 'evidence_start'"),
        ('{"query": "q", "document": "abc", "evidence_start": 0, "evidence_offset": 1}',
         "unknown field(s) 'evidence_offset'"),
        ('{"query": "q", "document": "abc", "evidence_start": "0"}', "must be an integer"),
        ('{"query": "q", "document": "abc", "evidence_start": true}', "must be an integer"),
        ('{"query": 3, "document": "abc", "evidence_start": 0}', "'query' must be a string"),
    ],
)  # fmt: skip
def test_structural_errors_are_one_line_naming_the_line(tmp_path, capsys, line, message):
    good = json.dumps({"query": "fine", "document": "abcdef", "evidence_start": 0})
    src = _write(tmp_path / "bad.jsonl", [good, line])
    code, _, err = _run(["benchmark", "build", "jsonl", "--input", str(src), "--out",
                         str(tmp_path / "t")], capsys)  # fmt: skip
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:")
    assert f"{src}:2" in lines[0] and message in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "t").exists()


def test_nothing_usable_and_conflicting_doc_ids(tmp_path, capsys):
    src = _write(tmp_path / "e.jsonl", [{"query": "", "document": "abc", "evidence_start": 0}])
    code, _, err = _run(["benchmark", "build", "jsonl", "--input", str(src), "--out",
                         str(tmp_path / "t")], capsys)  # fmt: skip
    assert code == 2 and "no usable queries" in err and "empty query text: 1" in err
    code, _, err = _run(["benchmark", "build", "jsonl", "--input", str(tmp_path / "missing.jsonl"),
                         "--out", str(tmp_path / "t")], capsys)  # fmt: skip
    assert code == 2 and "no such file" in err
    with pytest.raises(InputError, match="record 2: document id 'd' appears twice"):
        build_from_records([
            {"query": "a", "document": "one", "evidence_start": 0, "doc_id": "d"},
            {"query": "b", "document": "two", "evidence_start": 0, "doc_id": "d"},
        ])  # fmt: skip
    with pytest.raises(InputError, match="unknown bucket scheme"):
        build_from_records([{"query": "a", "document": "one", "evidence_start": 0}], "halves")


def test_build_from_records_in_memory():
    data = build_from_records(
        ({"query": f"q{i}", "document": "y" * 90, "evidence_start": 30 * i} for i in range(3)),
        name="Demo",
        distractors=[{"id": "n1", "text": "noise"}],
        anchor="center",
    )
    assert data.info.name == "Demo" and data.info.bucket_scheme == "thirds"
    assert data.bucket_counts() == {"begin": 1, "middle": 1, "end": 1}
    assert data.info.extra["position_anchor"] == "center"
    assert len(data.corpus) == 2
