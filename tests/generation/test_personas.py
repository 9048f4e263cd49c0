"""PersonaPool: loading from files, errors, and top-k by real MiniLM embeddings."""

from __future__ import annotations

import json

import pytest

from hf_posbias.errors import InputError
from hf_posbias.generation.personas import PersonaPool

PERSONAS = [
    "a tax lawyer advising small businesses",
    "a marine biologist who studies coral reefs",
    "a railway engineer maintaining steam locomotives",
    "a jazz pianist and music teacher",
    "a volcanologist monitoring Icelandic eruptions",
]


def test_files_load_and_bad_files_are_user_errors(tmp_path):
    txt = tmp_path / "p.txt"
    txt.write_text("\n".join(PERSONAS + ["", PERSONAS[0]]) + "\n")
    assert PersonaPool.from_file(txt).personas == PERSONAS  # blank and duplicate lines dropped
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"persona": p, "id": i}) + "\n" for i, p in enumerate(PERSONAS))
    )
    pool = PersonaPool.load(str(jsonl), limit=2)
    assert pool.personas == PERSONAS[:2] and pool.params()["count"] == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"persona": "ok"}\n{"name": "no persona field"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: no string field 'persona'"):
        PersonaPool.from_file(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(InputError, match="persona pool is empty"):
        PersonaPool.from_file(empty)


def test_top_k_ranks_by_similarity_and_caches(tmp_path, minilm_path):
    pool = PersonaPool(PERSONAS, model=minilm_path, cache_dir=str(tmp_path))
    reef = "The Great Barrier Reef is the world's largest coral reef system, home to many fish."
    lava = "Eyjafjallajökull erupted in 2010; lava and ash from the volcano disrupted air travel."
    top_reef, top_lava = pool.top_k_many([reef, lava], k=2)
    assert top_reef[0] == PERSONAS[1] and top_lava[0] == PERSONAS[4]
    assert len(top_reef) == 2 and pool.top_k(reef, k=50) == pool.top_k(reef, k=5)
    assert len(pool.top_k(reef, k=50)) == len(PERSONAS)
    cached = list(tmp_path.glob("personas-*.npy"))
    assert len(cached) == 1
    again = PersonaPool(PERSONAS, model=minilm_path, cache_dir=str(tmp_path))
    assert again.top_k(lava, k=1) == [PERSONAS[4]]
    assert again.params()["fingerprint"] == pool.params()["fingerprint"]


def test_default_pool_is_packaged_and_documented_as_the_projects_own(tmp_path):
    from importlib.resources import files

    data = files("hf_posbias.generation").joinpath("data", "personas.txt").read_text("utf-8")
    header = [line for line in data.splitlines() if line.startswith("#")]
    assert header and "NOT taken from PersonaHub" in " ".join(header)
    pool = PersonaPool.default()
    assert pool.personas == PersonaPool.load("default").personas
    assert 30 <= len(pool.personas) <= 80 and not any(p.startswith("#") for p in pool.personas)
    assert pool.params()["source"] == "hf-posbias default personas"
    # Comment lines in any .txt pool are skipped.
    txt = tmp_path / "p.txt"
    txt.write_text("# my pool\na cook\n  # indented comment\na pilot\n")
    assert PersonaPool.from_file(txt).personas == ["a cook", "a pilot"]


def test_default_pool_ranks_by_similarity(minilm_path):
    pool = PersonaPool.default(model=minilm_path)
    football = "Manchester United won the Premier League and the FA Cup in the 1998-99 season."
    assert "football" in pool.top_k(football, k=1)[0]


def test_persona_file_that_is_not_utf8_names_the_byte_offset(tmp_path):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("a caf\xe9 owner\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin1\.txt: not UTF-8 text at byte offset 5"):
        PersonaPool.from_file(latin1)
    commented = tmp_path / "c.txt"
    commented.write_text("# a comment\n  # another\nA baker\n\nA pilot\n")
    assert PersonaPool.from_file(commented, limit=1).personas == ["A baker"]
