"""``posbias analyze …`` verbs, in-process: CSV + markdown + PNG written, errors as exit 2."""

from __future__ import annotations

import csv
import json

import pytest

from hf_posbias.cli import main

SENTENCES = [f"Line {i} of the report mentions harbour {i} and its cranes." for i in range(14)]
EVIDENCE = "The lighthouse was painted red in 1902."


def write_pairs(path, count: int = 3) -> None:
    rows = []
    for i in range(count):
        doc = " ".join(SENTENCES[: 6 + i] + [EVIDENCE] + SENTENCES[6 + i :])
        rows.append(
            {
                "id": f"p{i}",
                "query": "When was the lighthouse painted?",
                "document": doc,
                "evidence": EVIDENCE,
            }
        )
    rows.append({"id": "bad", "query": "x", "document": "No match here. None.", "evidence": "Q."})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")


def read_csv(path):
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_evidence_moving_verb_compares_models(tmp_path, tiny_sentence_transformer, capsys) -> None:
    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs)
    out = tmp_path / "em"
    code = main(
        [
            "analyze",
            "evidence-moving",
            "--pairs",
            str(pairs),
            "--model",
            f"A={tiny_sentence_transformer}",
            "--model",
            f"B={tiny_sentence_transformer}",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    rows = read_csv(out / "evidence_moving.csv")
    assert [r["model"] for r in rows] == ["A", "B"]
    assert rows[0]["pairs"] == "3"
    assert [k for k in rows[0] if k.startswith("p") and k[1:].isdigit()] == [
        f"p{i}" for i in range(1, 11)
    ]
    assert rows[0]["p1"] == rows[1]["p1"]  # same weights → same curve
    assert len(read_csv(out / "evidence_moving_pairs.csv")) == 6
    assert (out / "evidence_moving.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "| A | 3 (unreliable: < 20) |" in printed and "A peaks at p" in printed
    md = (out / "evidence_moving.md").read_text()
    for text in ("A: used 3 of 3 pairs.", "UNRELIABLE", "averaged over the same 3 pairs"):
        assert text in printed and text in md, text
    assert "evidence_not_found 1" in printed  # the bad line is counted, not silently dropped
    assert "skipped: evidence_not_found 1" in (out / "evidence_moving.md").read_text()


def test_segment_profile_verb(tmp_path, tiny_sentence_transformer) -> None:
    corpus = tmp_path / "docs.jsonl"
    docs = [{"id": str(i), "text": " ".join(SENTENCES[i:] + SENTENCES[:i])} for i in range(4)]
    corpus.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    out = tmp_path / "sp"
    code = main(
        [
            "analyze",
            "segment-profile",
            "--corpus",
            str(corpus),
            "--model",
            tiny_sentence_transformer,
            "--n",
            "5",
            "--clip-chars",
            "400",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    (row,) = read_csv(out / "segment_profile.csv")
    assert row["documents"] == "4" and {"p1", "p5", "range"} <= set(row)
    head = [float(row[f"p{i}"]) for i in range(1, 5)]  # App. C's range: all but the last segment
    assert float(row["app_c_range"]) == pytest.approx(max(head) - min(head), abs=1e-5)
    assert (out / "segment_profile.png").read_bytes()[:4] == b"\x89PNG"


def test_pooling_verb(tmp_path, tiny_models) -> None:
    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs, count=2)
    out = tmp_path / "pool"
    code = main(
        [
            "analyze",
            "pooling",
            "--model",
            tiny_models("bert"),
            "--pairs",
            str(pairs),
            "--modes",
            "cls,mean",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert [r["pooling"] for r in read_csv(out / "pooling.csv")] == ["cls", "mean"]
    assert (out / "pooling_evidence_moving.png").exists()


def test_user_mistakes_exit_2_with_one_line(tmp_path, capsys) -> None:
    code = main(
        [
            "analyze",
            "evidence-moving",
            "--pairs",
            str(tmp_path / "missing.jsonl"),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: pair source not found") and err.count("\n") == 1
    assert (
        main(
            [
                "analyze",
                "segment-profile",
                "--corpus",
                "demo",
                "--n",
                "1",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "--n must be >= 2, got 1" in capsys.readouterr().err


def test_analyze_takes_an_endpoint_model(tmp_path, tiny_sentence_transformer):
    from openai_server import LocalChatServer, sentence_transformer_embed

    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs)
    with LocalChatServer(embed=sentence_transformer_embed(tiny_sentence_transformer)) as server:
        argv = ["analyze", "evidence-moving", "--pairs", str(pairs), "--out", str(tmp_path / "o")]
        models = ["--model", f"L={tiny_sentence_transformer}", "--model", "E=openai:tiny"]
        assert main([*argv, *models, "--base-url", server.url]) == 0
    local, served = read_csv(tmp_path / "o" / "evidence_moving.csv")
    assert (local["model"], served["model"]) == ("L", "E")
    for p in ("p1", "p5", "p10"):
        assert float(served[p]) == pytest.approx(float(local[p]), abs=1e-4)


def test_evidence_moving_verb_under_a_remedy(tmp_path, tiny_sentence_transformer, capsys) -> None:
    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs)
    argv = ["analyze", "evidence-moving", "--pairs", str(pairs), "--out", str(tmp_path / "o")]
    model = ["--model", f"A={tiny_sentence_transformer}"]
    remedy = ["--remedy", "maxp", "--passage-tokens", "32", "--stride", "16"]
    assert main([*argv, *model, *remedy]) == 0
    plain, maxp = read_csv(tmp_path / "o" / "evidence_moving.csv")
    assert (plain["model"], maxp["model"]) == ("A", "A +maxp")
    assert plain["pairs"] == maxp["pairs"] == "3"
    assert plain["p1"] != maxp["p1"]
    assert "A +maxp peaks at p" in capsys.readouterr().out
    # A passage the model cannot take: one line, exit 2, before anything is encoded.
    argv[-1] = str(tmp_path / "too-short")
    assert main([*argv, *model, "--remedy", "maxp", "--passage-tokens", "2", "--stride", "1"]) == 2
    assert not (tmp_path / "too-short").exists()
    err = capsys.readouterr().err
    assert err.startswith("error: --passage-tokens 2 leaves no room") and err.count("\n") == 1
