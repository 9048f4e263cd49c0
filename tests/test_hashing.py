"""Folder content hashes: what changes the hash and what does not."""

from __future__ import annotations

from pathlib import Path

from hf_posbias.hashing import folder_digest


def test_content_names_and_sizes_count_hidden_entries_do_not(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.parquet").write_bytes(b"rows")
    base = folder_digest(tmp_path)
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "meta").write_text("x")
    (tmp_path / ".gitattributes").write_text("*.parquet lfs")
    assert folder_digest(tmp_path) == base
    (tmp_path / "data" / "a.parquet").rename(tmp_path / "data" / "b.parquet")
    assert folder_digest(tmp_path) != base  # same bytes, other name
    (tmp_path / "data" / "b.parquet").rename(tmp_path / "data" / "a.parquet")
    assert folder_digest(tmp_path) == base


def test_only_named_files_and_sampled_large_files(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("ignored")
    named = folder_digest(tmp_path, names=["task.json", "missing.parquet"])
    (tmp_path / "notes.txt").write_text("changed")
    assert folder_digest(tmp_path, names=["task.json", "missing.parquet"]) == named
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"a" * 100 + b"b" * 100 + b"c" * 100)
    sampled = folder_digest(tmp_path, sample_bytes=100)
    weights.write_bytes(b"a" * 100 + b"X" * 100 + b"c" * 100)  # the middle is not sampled
    assert folder_digest(tmp_path, sample_bytes=100) == sampled
    assert folder_digest(tmp_path) != folder_digest(tmp_path, sample_bytes=100)
