"""Hub repo folders: deterministic bytes, overwrite rules, shards, datasets' cache key."""

from __future__ import annotations

from pathlib import Path

import pytest
from publish_rows import all_files, load, make_info, make_pool, make_train_sets

from hf_posbias.errors import InputError
from hf_posbias.publish.dataset_card import write_pool_repo, write_train_repo
from hf_posbias.publish.repo import check_repo_folder
from hf_posbias.rows.readers import available_configs


def test_same_rows_give_byte_identical_folders(tmp_path: Path) -> None:
    pool = make_pool()
    sets = make_train_sets(pool)
    a = write_train_repo(sets, tmp_path / "a" / "train", make_info())
    b = write_train_repo(sets, tmp_path / "b" / "train", make_info())
    files_a, files_b = all_files(a), all_files(b)
    assert sorted(files_a) == sorted(files_b)
    assert "README.md" in files_a and len(files_a) == 2 + len(sets)
    for name in files_a:
        assert files_a[name] == files_b[name], name
    p1 = write_pool_repo(pool, tmp_path / "p1", make_info())
    p2 = write_pool_repo(pool, tmp_path / "p2", make_info())
    assert all_files(p1) == all_files(p2)
    # A pyarrow Table (what the verify stage holds) publishes the very same bytes.
    import pyarrow as pa

    p4 = write_pool_repo(pa.Table.from_pylist(pool), tmp_path / "p4", make_info())
    assert all_files(p4) == all_files(p1)
    # …and different rows do give different bytes (the comparison above can fail).
    other = write_pool_repo(make_pool(seed=8), tmp_path / "p3", make_info())
    assert (
        all_files(other)["data/default/train-00000-of-00001.parquet"]
        != all_files(p1)["data/default/train-00000-of-00001.parquet"]
    )


def test_overwrite_rules(tmp_path: Path) -> None:
    sets = make_train_sets(make_pool())
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="notes.txt"):
        write_train_repo(sets, foreign, make_info())
    assert (foreign / "notes.txt").read_text() == "mine"
    write_train_repo(sets, foreign, make_info(), overwrite=True)
    assert not (foreign / "notes.txt").exists()

    # Our own earlier output is rewritten without overwrite=True, and stale configs disappear.
    ours = write_train_repo(sets, tmp_path / "ours", make_info())
    write_train_repo({"uniform": sets["uniform"]}, ours, make_info())
    assert sorted(p.name for p in (ours / "data").iterdir()) == ["uniform"]
    assert available_configs(ours) == ["uniform"]


def test_sharded_config_reads_back(tmp_path: Path) -> None:
    sets = make_train_sets(make_pool())
    folder = write_train_repo(sets, tmp_path / "train", make_info(), max_rows_per_shard=5)
    files = sorted(p.name for p in (folder / "data" / "uniform").iterdir())
    assert len(files) > 1 and files[0].endswith(f"-of-{len(files):05d}.parquet")
    assert load(folder, "uniform", tmp_path / "cache") == sets["uniform"]


def test_bare_load_dataset_does_not_serve_another_folders_rows(tmp_path: Path) -> None:
    """datasets keys a local folder's cache by name + YAML only; dataset_info makes it differ."""
    import datasets

    pool = make_pool()
    sets = make_train_sets(pool)
    first = write_train_repo(sets, tmp_path / "a" / "train", make_info())
    fewer = {name: rows[: len(rows) // 2] for name, rows in sets.items()}
    second = write_train_repo(fewer, tmp_path / "b" / "train", make_info())
    cache = str(tmp_path / "shared-cache")
    got_a = datasets.load_dataset(str(first), "uniform", split="train", cache_dir=cache)
    got_b = datasets.load_dataset(str(second), "uniform", split="train", cache_dir=cache)
    assert len(got_a) == len(sets["uniform"])
    assert got_b.to_list() == fewer["uniform"]


def test_check_repo_folder_refuses_files_and_foreign_folders(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(InputError, match="exists and is not a folder"):
        check_repo_folder(a_file)
    assert check_repo_folder(tmp_path / "new") == tmp_path / "new"
    assert not (tmp_path / "new").exists()  # checking writes nothing


def test_nothing_upstream_imports_publishing() -> None:
    """Publishing sits at the end of the data flow: the stages before it (and the readers they
    use) never import it, not even lazily inside a function."""
    import ast

    import hf_posbias

    root = Path(hf_posbias.__file__).parent
    upstream = [
        *sorted((root / "corpus").glob("*.py")),
        *sorted((root / "rows").glob("*.py")),
        *sorted((root / "sampling").glob("*.py")),
        root / "shards.py",
        root / "tables.py",
        *sorted((root / "generation").glob("*.py")),
        *sorted((root / "verification").glob("*.py")),
    ]
    for path in upstream:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for name in names:
                assert not name.startswith(("hf_posbias.publish", "hf_posbias.hub")), (path, name)
