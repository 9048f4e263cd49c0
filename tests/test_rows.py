"""Reading rows from any source: files, repo folders (content-addressed cache), Hub over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from guards import HANG_GUARD_S
from olah_mirror import add_git_repo, client_env, olah_available, olah_server
from publish_rows import make_info, make_pool, make_train_sets
from test_bm25 import tiny_task

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.publish.dataset_card import write_train_repo
from hf_posbias.rows.readers import (
    iter_rows,
    read_dataset,
    read_json,
    read_parquet,
    read_rows,
    read_text,
)


def test_read_dataset_names_configs_and_never_serves_stale_rows(tmp_path: Path) -> None:
    sets = make_train_sets(make_pool())
    first = write_train_repo(sets, tmp_path / "run1" / "train", make_info())
    with pytest.raises(InputError, match="available configs: begin, middle, end, uniform"):
        read_dataset(first, "balanced")
    cache = tmp_path / "cache"
    assert read_dataset(first, "uniform", cache_dir=cache).to_list() == sets["uniform"]
    # Same base name, same YAML configs, same card, other rows: datasets' own cache key
    # collides here; read_dataset must still return the new rows.
    changed = {k: [{**r, "query": r["query"] + " (v2)"} for r in v] for k, v in sets.items()}
    second = write_train_repo(changed, tmp_path / "run2" / "train", make_info())
    assert read_dataset(second, "uniform", cache_dir=cache).to_list() == changed["uniform"]


def test_non_utf8_text_names_the_file_and_byte_offset(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "text": "fine"}) + "\n"
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(good.encode() + '{"id": "b", "text": "caf\xe9"}\n'.encode("latin-1"))
    with pytest.raises(InputError) as err:
        read_rows(path)
    offset = len(good.encode()) + len('{"id": "b", "text": "caf')
    assert f"latin1.jsonl: not UTF-8 text at byte offset {offset}" in str(err.value)
    assert "\n" not in str(err.value)
    whole = tmp_path / "latin1.txt"
    whole.write_bytes("na\xefve".encode("latin-1"))
    with pytest.raises(InputError, match="byte offset 2"):
        read_text(whole)


def test_every_file_type_and_where_each_row_came_from(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"id": "a", "n": 1}, {"id": "b", "n": 2}]
    (tmp_path / "a.json").write_text(json.dumps(rows))
    (tmp_path / "l.json").write_text("\n".join(json.dumps(r) for r in rows))  # JSON Lines
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    for name in ("a.json", "l.json", "t.parquet"):
        assert read_rows(tmp_path / name) == rows, name
    assert [w.split("/")[-1] for w, _ in iter_rows(tmp_path / "t.parquet")] == [
        "t.parquet: row 0",
        "t.parquet: row 1",
    ]
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(InputError, match="item 0: expected a JSON object"):
        read_rows(tmp_path / "bad.json")
    (tmp_path / "x.csv").write_text("a,b")
    with pytest.raises(InputError, match="unsupported file type"):
        read_rows(tmp_path / "x.csv")
    (tmp_path / "broken.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="not a readable parquet file"):
        read_rows(tmp_path / "broken.parquet")


def test_truncated_or_foreign_files_are_one_line_naming_the_file(tmp_path: Path) -> None:
    good = tiny_task(tmp_path / "task") / "corpus.parquet"
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    foreign = tmp_path / "foreign.parquet"
    foreign.write_text('{"id": "d1"}\n')
    for path in (cut, foreign):
        with pytest.raises(InputError, match=f"{path.name}: not a readable parquet file") as err:
            read_parquet(path)
        assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="cut.parquet: not a readable parquet file"):
        read_rows(cut)
    half = tmp_path / "half.json"
    half.write_text('{"a": [1, 2')
    with pytest.raises(InputError, match="half.json: not valid JSON"):
        read_json(half)


@pytest.mark.parametrize("verb", ["evaluate", "listwise"])
def test_a_truncated_parquet_in_a_task_folder_is_one_error_line(tmp_path, capsys, verb) -> None:
    task = tiny_task(tmp_path / "task")
    corpus = task / "corpus.parquet"
    corpus.write_bytes(corpus.read_bytes()[:100])
    args = {
        "evaluate": ["evaluate", "--model", "bm25"],
        "listwise": ["listwise", "test", "--reranker", "bm25", "--k", "5"],
    }[verb]
    capsys.readouterr()
    assert main([*args, "--task", str(task), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "corpus.parquet: not a readable parquet file" in err[0]
    assert "Traceback" not in err[0]


def test_a_repo_folder_reads_like_the_hub_repo(tmp_path: Path) -> None:
    sets = make_train_sets(make_pool())
    folder = write_train_repo(sets, tmp_path / "train", make_info())
    assert read_rows(folder, config="middle") == sets["middle"]


# ----------------------------------------------------------------------------------------------
# Read path over real HTTP: the olah mirror
# ----------------------------------------------------------------------------------------------

MIRROR_REPO = "posbias-test/demo-train"


@pytest.fixture(scope="module")
def olah_endpoint(tmp_path_factory: pytest.TempPathFactory):
    """olah serving one dataset repo (our written train folder, committed to git)."""
    if not olah_available():
        pytest.skip("olah (pip install olah) or git not installed")
    root = tmp_path_factory.mktemp("olah")
    sets = make_train_sets(make_pool())
    folder = write_train_repo(sets, root / "train", make_info())
    add_git_repo(root / "mirror", "datasets", MIRROR_REPO, folder)
    with olah_server(root / "mirror", root / "server") as endpoint:
        yield endpoint, sets, root


def test_load_dataset_and_snapshot_over_http(olah_endpoint) -> None:
    endpoint, sets, root = olah_endpoint
    code = textwrap.dedent(
        f"""
        import json, os
        from datasets import load_dataset
        from huggingface_hub import snapshot_download
        from hf_posbias.errors import InputError
        from hf_posbias.rows.readers import read_dataset
        rows = load_dataset({MIRROR_REPO!r}, "uniform", split="train").to_list()
        path = snapshot_download({MIRROR_REPO!r}, repo_type="dataset", revision="main")
        files = sorted(
            os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs
        )
        middle = read_dataset({MIRROR_REPO!r}, "middle", revision="main").to_list()
        try:
            read_dataset({MIRROR_REPO!r}, "balanced", revision="main")
            missing = None
        except InputError as exc:
            missing = str(exc)
        print(json.dumps({{"rows": rows, "files": files, "middle": middle, "missing": missing}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=client_env(endpoint, root / "hf-home"),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["rows"] == sets["uniform"]
    assert result["middle"] == sets["middle"]
    assert result["files"] == [
        ".gitattributes",
        "README.md",
        *[f"data/{c}/train-00000-of-00001.parquet" for c in sorted(sets)],
    ]
    assert result["missing"] is not None and "balanced" in result["missing"]
    assert "uniform" in result["missing"]


def test_a_hub_dataset_that_does_not_load_names_no_none_config(monkeypatch) -> None:
    import datasets

    from hf_posbias.errors import BackendError

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'rajpurkar/squad_v2' on the Hub (LocalEntryNotFound)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BackendError) as info:
        read_dataset("rajpurkar/squad_v2", None)
    message = str(info.value)
    assert "(None)" not in message and message.startswith("cannot load rajpurkar/squad_v2: ")
    assert "HF_HUB_OFFLINE is set" in message
    with pytest.raises(BackendError, match=r"cannot load rajpurkar/squad_v2 \(config v2\): "):
        read_dataset("rajpurkar/squad_v2", "v2")


def test_parquet_num_rows_counts_from_the_footer_and_names_an_unreadable_file(tmp_path) -> None:
    from hf_posbias.rows.readers import parquet_num_rows

    good = tiny_task(tmp_path / "task") / "corpus.parquet"
    assert parquet_num_rows(good) == read_parquet(good).num_rows
    foreign = tmp_path / "x.parquet"
    foreign.write_text("{}")
    with pytest.raises(InputError, match=r"x\.parquet: not a readable parquet file \(") as err:
        parquet_num_rows(foreign)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match=r"gone\.parquet: no such file"):
        parquet_num_rows(tmp_path / "gone.parquet")


def test_parquet_rows_read_lazily_give_the_rows_a_list_gives(tmp_path: Path) -> None:
    """ParquetRows (how the build hands a stage's rows on) indexes, slices and iterates as the
    list of the same rows, across files and row groups, and reads only chosen columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hf_posbias.rows.arrow import ParquetRows

    rows = [{"i": i, "s": f"row {i}", "xs": [float(i)] * (i % 3)} for i in range(23)]
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    pq.write_table(pa.Table.from_pylist(rows[:10]), paths[0], row_group_size=4)
    pq.write_table(pa.Table.from_pylist(rows[10:]), paths[1], row_group_size=5)
    lazy = ParquetRows(paths)
    _reads_as_the_list(lazy, rows)
    # Rows written again under its schema make the file pyarrow makes from the rows.
    assert lazy.schema() == pa.Table.from_pylist(rows).schema
    assert ParquetRows(paths, convert=lambda r: r["i"])[7:9] == [7, 8]


def test_table_rows_over_memory_give_the_rows_a_list_gives() -> None:
    """TableRows (how a loaded task holds its corpus) is the same sequence over an in-memory
    table, across batches and the table's chunks, and shares the table: no copy."""
    import pyarrow as pa

    from hf_posbias.rows.arrow import TableRows

    rows = [{"i": i, "s": f"row {i}", "xs": [float(i)] * (i % 3)} for i in range(23)]
    table = pa.concat_tables([pa.Table.from_pylist(rows[:10]), pa.Table.from_pylist(rows[10:])])
    lazy = TableRows(table, batch_rows=4)
    _reads_as_the_list(lazy, rows)
    assert (
        lazy.table is table
        and lazy.select(["i"]).table.column(0).chunks[0].buffers()[1].address
        == table.column("i").chunks[0].buffers()[1].address
    )
    assert TableRows(table, convert=lambda r: r["i"])[7:9] == [7, 8]
    assert [len(t) for t in lazy.tables()] == [4, 4, 4, 4, 4, 3]
    assert not hasattr(lazy, "append")  # read-only: a changed corpus is a new list


def _reads_as_the_list(lazy, rows) -> None:
    """Lazy arrow rows index, slice, iterate and compare as the list of the same rows."""
    assert len(lazy) == len(rows) and list(lazy) == rows and lazy == rows and rows == lazy
    for start, stop in [(0, 4), (3, 11), (9, 23), (22, 40), (5, 5), (7, 2)]:
        assert lazy[start:stop] == rows[start:stop]
    assert lazy[-1] == rows[-1] and lazy[::5] == rows[::5]
    assert [r["i"] for r in lazy.select(["i"])] == list(range(len(rows)))
    assert lazy.select(["i"])[4] == {"i": 4}
    with pytest.raises(IndexError):
        lazy[len(rows)]


def test_rows_by_id_is_the_dict_of_its_rows_read_in_batches() -> None:
    """RowsById (how the listwise commands hold a corpus) looks rows up by id, and its values,
    items and ``take`` give what a dict built row by row gives, across batches and chunks."""
    import pyarrow as pa

    from hf_posbias.rows.arrow import RowsById, take_values

    rows = [{"id": f"d{i}", "text": f"text {i}"} for i in range(23)]
    table = pa.concat_tables([pa.Table.from_pylist(rows[:10]), pa.Table.from_pylist(rows[10:])])
    lazy = RowsById(table, lambda r: r["text"].upper(), batch_rows=4)
    as_dict = {r["id"]: r["text"].upper() for r in rows}  # the form it replaces
    assert lazy == as_dict and as_dict == lazy and len(lazy) == 23
    assert list(lazy) == list(as_dict) and list(lazy.keys()) == list(as_dict.keys())
    assert list(lazy.values()) == list(as_dict.values()) and len(lazy.values()) == 23
    assert list(lazy.items()) == list(as_dict.items())
    assert lazy["d13"] == "TEXT 13" and "d22" in lazy and "d23" not in lazy
    shuffled = [f"d{i}" for i in (22, 0, 9, 10, 3, 3, 17)]
    assert list(lazy.take(shuffled)) == [as_dict[d] for d in shuffled]
    assert list(take_values(lazy, shuffled)) == list(take_values(as_dict, shuffled))
    with pytest.raises(KeyError, match="nope"):
        lazy["nope"]
    with pytest.raises(KeyError, match="nope"):
        list(lazy.take(["d1", "nope"]))
    same = lazy.with_convert(lambda r: r["id"])
    assert same.table is table and same["d5"] == "d5" and lazy["d5"] == "TEXT 5"
    with pytest.raises(InputError, match="duplicate id 'd3'"):
        RowsById(pa.Table.from_pylist([*rows, rows[3]]), dict)
