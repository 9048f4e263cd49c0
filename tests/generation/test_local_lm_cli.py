"""`posbias data corpus` + `posbias data generate --generator local-lm` in-process with a tiny
random Llama:
constrained by default, resumable, deterministic per seed; free-form and a broken GGUF fail on
one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from guards import HANG_GUARD_S

from hf_posbias.cli import main
from hf_posbias.generation.llm import DIFFICULTIES, QUERY_MAX_CHARS
from hf_posbias.generation.personas import PersonaPool
from hf_posbias.generation.stage import load_candidates


@pytest.fixture(scope="module")
def tiny_chat_lm(tmp_path_factory):
    from hf_posbias.testing import build_tiny_checkpoint

    return build_tiny_checkpoint(
        "llama", tmp_path_factory.mktemp("llama"), head="causal-lm", max_positions=4096
    )


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    texts = [
        "The Great Barrier Reef is the largest coral reef system. It lies off Queensland. "
        "Thousands of reefs and islands stretch over two thousand kilometres of sea. "
        "Coral bleaching caused by warmer water has damaged large parts of it since 1998. "
        "Tourism brings divers and boats from all over the world to its outer reefs. ",
        "Mount Etna is an active volcano on the east coast of Sicily. It is the tallest "
        "active volcano in Europe outside the Caucasus. Its eruptions have been recorded "
        "since 1500 BC, and the lava flows of 1669 reached the city of Catania. "
        "Its fertile slopes are covered with vineyards, orchards and small villages. ",
    ]
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"doc{i}", "title": f"Doc {i}", "text": t}) + "\n"
            for i, t in enumerate(texts)
        )
    )
    return path


def _generate_args(work, model, *extra) -> list[str]:
    return [
        "data",
        "generate",
        "--work",
        str(work),
        "--generator",
        "local-lm",
        "--llm-model",
        str(model),
        "--seed",
        "3",
        "--no-progress",
        *extra,
    ]


def _generate(work, model, *extra):
    return main(_generate_args(work, model, *extra))


def test_local_lm_generate_is_constrained_resumable_and_deterministic(
    one_torch_thread, tiny_chat_lm, corpus_file, tmp_path, minilm_path, capsys
):
    work = tmp_path / "work"
    assert main(["data", "corpus", "--corpus", str(corpus_file), "--work", str(work)]) == 0
    assert _generate(work, tiny_chat_lm) == 0
    out = capsys.readouterr().out
    assert "documents with candidates: 2" in out and "candidates: 6" in out
    cands = load_candidates(work / "candidates")
    personas = PersonaPool.default().personas
    for cand in cands:
        meta = cand.meta_dict
        assert meta["stage1_decoding"] == meta["stage2_decoding"] == "json_schema"
        assert meta["persona"] in personas and meta["difficulty"] in DIFFICULTIES
        assert cand.query.strip() and len(cand.query) <= QUERY_MAX_CHARS
    # The default persona pool (the project's own) was offered.
    manifest = json.loads((work / "candidates" / "manifest.json").read_text())
    params = manifest["params"]["generator_params"]
    assert params["personas"]["source"] == "hf-posbias default personas"
    assert params["constrained"] is True

    # Rerun: every shard is done, nothing is generated again, the output is unchanged.
    shards = sorted((work / "candidates" / "shards").glob("*.parquet"))
    mtimes = [s.stat().st_mtime_ns for s in shards]
    assert _generate(work, tiny_chat_lm) == 0
    assert [s.stat().st_mtime_ns for s in shards] == mtimes
    assert [c.to_row() for c in load_candidates(work / "candidates")] == [c.to_row() for c in cands]

    # Deterministic per seed and per document: a fresh work folder holding only the first
    # document gives that document the same candidates.
    other = tmp_path / "other"
    assert (
        main(["data", "corpus", "--corpus", str(corpus_file), "--limit", "1", "--work", str(other)])
        == 0
    )
    assert _generate(other, tiny_chat_lm) == 0
    again = load_candidates(other / "candidates")
    assert [c.to_row() for c in again] == [c.to_row() for c in cands if c.doc_id == "doc0"]


def test_no_constrained_reproduces_free_form_parse_failures(
    one_torch_thread, tiny_chat_lm, corpus_file, tmp_path, minilm_path, capsys
):
    work = tmp_path / "work"
    assert main(["data", "corpus", "--corpus", str(corpus_file), "--work", str(work)]) == 0
    capsys.readouterr()
    # A random LM never writes a usable configuration free-form: both documents are excluded and
    # counted, and the stage stops with a one-line error instead of an empty dataset.
    assert _generate(work, tiny_chat_lm, "--no-constrained") == 2
    captured = capsys.readouterr()
    assert "WARNING documents excluded (stage1_" in captured.out
    # (its last line names what the work folder keeps: the corpus stage)
    assert captured.err.strip().splitlines() == [
        "error: the generator produced no candidate; see the report above "
        f"({work} keeps its finished stages and shards; the same command resumes from there)"
    ]


def test_broken_gguf_is_one_line_on_stderr_without_traceback(corpus_file, tmp_path):
    broken = tmp_path / "model.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    work = tmp_path / "work"
    assert main(["data", "corpus", "--corpus", str(corpus_file), "--work", str(work)]) == 0
    # A subprocess: the point is what the process prints (no traceback), and the GGUF reader
    # fails before any persona or model work.
    result = subprocess.run(
        [sys.executable, "-m", "hf_posbias.cli", *_generate_args(work, broken)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "cannot load causal LM" in lines[0] and "model.gguf" in lines[0]
    assert "Traceback" not in result.stderr
