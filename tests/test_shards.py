"""run_sharded basics and a real two-process ``accelerate launch`` run of the generate stage."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from guards import HANG_GUARD_S

from hf_posbias.errors import InputError
from hf_posbias.rows.readers import read_parquet_rows
from hf_posbias.shards import (
    check_parameters,
    merge_shards,
    pin_parameters,
    run_sharded,
    stage_fingerprint,
    stage_parameters,
)


def test_rows_come_back_in_item_order_and_finished_shards_are_skipped(tmp_path):
    calls: list[list[int]] = []

    def square(xs: list[int]) -> list[dict]:
        calls.append(xs)
        return [{"x": x, "sq": x * x} for x in xs]

    rows = run_sharded(list(range(10)), square, tmp_path, 3, {"op": "sq"}, progress=False)
    assert [r["x"] for r in rows] == list(range(10)) and rows[4]["sq"] == 16
    assert calls == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    (tmp_path / "shards" / "shard-00002.parquet").unlink()
    calls.clear()
    assert run_sharded(list(range(10)), square, tmp_path, 3, {"op": "sq"}, progress=False) == rows
    assert calls == [[6, 7, 8]]
    assert merge_shards(tmp_path) == rows


def test_other_parameters_or_item_count_are_refused(tmp_path):
    run_sharded([1, 2], lambda xs: [{"x": x} for x in xs], tmp_path, 1, {"a": 1}, progress=False)
    with pytest.raises(InputError, match="other parameters.*rerun with --overwrite to"):
        run_sharded(
            [1, 2], lambda xs: [{"x": x} for x in xs], tmp_path, 1, {"a": 2}, progress=False
        )
    with pytest.raises(InputError, match="other parameters"):
        run_sharded(
            [1, 2, 3], lambda xs: [{"x": x} for x in xs], tmp_path, 1, {"a": 1}, progress=False
        )
    with pytest.raises(InputError, match="shard size"):
        run_sharded([1], lambda xs: [], tmp_path / "z", 0, {}, progress=False)


def test_pinned_parameters_name_what_differs_and_overwrite_replaces_the_stage(tmp_path):
    stage = tmp_path / "stage"
    assert check_parameters(stage, {"seed": 1}) is False and not stage.exists()
    pin_parameters(stage, {"seed": 1, "panel": [{"name": "bm25"}]})
    (stage / "output.parquet").write_text("from seed 1")
    assert check_parameters(stage, {"seed": 1, "panel": [{"name": "bm25"}]}) is True
    with pytest.raises(InputError) as err:
        pin_parameters(stage, {"seed": 2, "panel": [{"name": "bm25"}]})
    assert "(seed: 1 → 2)" in str(err.value) and "--overwrite" in str(err.value)
    assert (stage / "output.parquet").exists()  # refused: nothing touched
    pin_parameters(stage, {"seed": 2, "panel": [{"name": "bm25"}]}, overwrite=True)
    assert sorted(p.name for p in stage.iterdir()) == ["manifest.json"]
    assert stage_parameters(stage, "posbias x")["seed"] == 2
    assert len(stage_fingerprint(stage, "posbias x")) == 16
    with pytest.raises(InputError, match="run `posbias x` first"):
        stage_parameters(tmp_path / "never", "posbias x")


def test_a_changed_shard_size_is_refused_too(tmp_path):
    run_sharded([1, 2, 3], lambda xs: [{"x": x} for x in xs], tmp_path, 2, {}, progress=False)
    with pytest.raises(InputError, match="shard_size: 2 → 1"):
        run_sharded([1, 2, 3], lambda xs: [{"x": x} for x in xs], tmp_path, 1, {}, progress=False)
    rows = run_sharded(
        [1, 2, 3],
        lambda xs: [{"x": x} for x in xs],
        tmp_path,
        1,
        {},
        progress=False,
        overwrite=True,
    )
    assert [r["x"] for r in rows] == [1, 2, 3]
    assert len(list((tmp_path / "shards").iterdir())) == 3


def test_missing_shard_on_merge_is_a_user_error(tmp_path):
    run_sharded([1, 2], lambda xs: [{"x": x} for x in xs], tmp_path, 1, {}, progress=False)
    (tmp_path / "shards" / "shard-00001.parquet").unlink()
    with pytest.raises(InputError, match="shard-00001.parquet is missing"):
        merge_shards(tmp_path, 2)


SCRIPT = """
import json, sys
from hf_posbias.corpus.documents import prepare_documents
from hf_posbias.corpus.sources import read_wikiextractor
from hf_posbias.generation.generator_registry import make_generator
from hf_posbias.generation.stage import run_generation
from hf_posbias.shards import process_info

docs, _ = prepare_documents(read_wikiextractor(sys.argv[1]))
cands, report = run_generation(docs[:20], make_generator("ict", seed=3), sys.argv[2],
                               shard_size=3, progress=False)
# The verification stage shards the same way (BM25 statistics are fitted on every process).
from hf_posbias.verification.panel import parse_panel
from hf_posbias.verification.stage import run_verification
scored, _ = run_verification([c.to_row() for c in cands], parse_panel("bm25"),
                             f"{sys.argv[2]}/scored", shard_size=8, progress=False)
info = process_info()
with open(f"{sys.argv[2]}/rank{info.index}.json", "w") as f:
    json.dump({"count": info.count, "candidates": len(cands), "scored": len(scored)}, f)
"""


def test_accelerate_launch_two_processes_share_shards_and_match_one_process(shared_data, tmp_path):
    from hf_posbias.corpus.documents import prepare_documents
    from hf_posbias.corpus.sources import read_wikiextractor
    from hf_posbias.generation.generator_registry import make_generator
    from hf_posbias.generation.stage import run_generation

    accelerate = Path(sys.executable).with_name("accelerate")
    if not accelerate.exists():
        accelerate = Path(shutil.which("accelerate") or "accelerate")
    wiki = shared_data / "wikipedia_enwiki_wikiextractor"
    script = tmp_path / "gen.py"
    script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / "multi"
    # Without ACCELERATE_USE_CPU, --multi_gpu on a CPU machine starts two rank-0-of-1 processes.
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    # (accelerate 1.15 refuses --multi_gpu together with --cpu; the environment variable does it.)
    cmd = [str(accelerate), "launch", "--multi_gpu", "--num_processes", "2",
           "--main_process_port", "0", str(script), str(wiki), str(out)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr[-3000:]

    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["count"] for r in ranks] == [2, 2]
    shards = sorted((out / "shards").glob("shard-*.parquet"))
    assert len(shards) == 7  # 20 documents / 3 per shard
    owners = {}
    for path in shards:
        index = int(path.stem.split("-")[1])
        owners[index] = {row["process_index"] for row in read_parquet_rows(path)}
        assert owners[index] == {index % 2}  # each rank generated exactly its own shards
    assert set().union(*owners.values()) == {0, 1}

    docs, _ = prepare_documents(read_wikiextractor(wiki))
    single, _ = run_generation(
        docs[:20], make_generator("ict", seed=3), tmp_path / "single", shard_size=3, progress=False
    )
    assert ranks[0]["candidates"] == ranks[1]["candidates"] == len(single)
    multi = read_parquet_rows(out / "candidates.parquet")
    assert multi == [c.to_row() for c in single]
    assert (out / "candidates.parquet").read_bytes() == (
        tmp_path / "single" / "candidates.parquet"
    ).read_bytes()

    # Verification: both ranks return the whole merged pool, equal to a single-process run.
    from hf_posbias.shards import merge_shards
    from hf_posbias.verification.panel import parse_panel
    from hf_posbias.verification.stage import run_verification

    single_scored, _ = run_verification(
        [c.to_row() for c in single],
        parse_panel("bm25"),
        tmp_path / "single-scored",
        shard_size=8,
        progress=False,
    )
    assert ranks[0]["scored"] == ranks[1]["scored"] == len(single_scored)
    assert len(list((out / "scored" / "shards").glob("shard-*.parquet"))) > 1
    assert merge_shards(out / "scored") == single_scored


def test_a_file_written_row_group_by_row_group_is_the_one_written_at_once(tmp_path):
    """ParquetRowWriter (the build's streaming writer): up to one row group, the bytes of
    write_parquet; past it, the same rows in groups of row_group_rows; an error leaves no
    file; no row at all, an empty file of the schema."""
    import pyarrow as pa

    from hf_posbias.rows.arrow import ParquetRows
    from hf_posbias.shards import ParquetRowWriter, write_parquet

    rows = [{"id": f"d{i}", "n": i, "xs": [i, i + 1]} for i in range(10)]
    write_parquet(rows, tmp_path / "once.parquet")
    with ParquetRowWriter(tmp_path / "stream.parquet", row_group_rows=10) as out:
        out.write(iter(rows))
    assert (tmp_path / "once.parquet").read_bytes() == (tmp_path / "stream.parquet").read_bytes()
    with ParquetRowWriter(tmp_path / "groups.parquet", row_group_rows=4) as out:
        out.write(rows[:3])
        out.write(rows[3:])
    groups = ParquetRows([tmp_path / "groups.parquet"])
    assert list(groups) == rows and [n for *_, n in groups._groups] == [4, 4, 2]
    with pytest.raises(RuntimeError), ParquetRowWriter(tmp_path / "bad.parquet") as out:
        out.write(rows)
        raise RuntimeError("a bad record")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "groups.parquet",
        "once.parquet",
        "stream.parquet",
    ]
    schema = pa.schema([("id", pa.string())])
    with ParquetRowWriter(tmp_path / "empty.parquet", schema=schema):
        pass
    assert len(ParquetRows([tmp_path / "empty.parquet"])) == 0


def test_shard_rows_are_read_lazily_and_equal_the_merged_rows(tmp_path):
    rows = run_sharded(
        list(range(10)), lambda xs: [{"x": x} for x in xs], tmp_path, 3, {}, progress=False
    )
    lazy = run_sharded(
        list(range(10)),
        None,
        tmp_path,
        3,
        {},
        progress=False,
        merge=False,  # all done: no fn
    )
    assert lazy == rows == merge_shards(tmp_path) and lazy[4:7] == rows[4:7]
