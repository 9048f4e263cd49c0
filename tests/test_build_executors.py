"""`posbias data build --executor ray|slurm`: each generate and verify shard one Ray task (or one
submitit job: its local executor, no Slurm here), the same files as a local build; a rerun redoes
only the shard that is missing; an executor that cannot start is one line before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ray_helpers import local_ray

from hf_posbias.cli import main

# The embedded default corpus, 49 documents kept of 60: two generate shards of 32, one verify.
BUILD = ["data", "build", "--corpus", "demo", "--limit", "60", "--no-progress"]
RECORDS = ("units", "logs", "slurm")  # the executors' records, in the work folder only


def files(out: Path) -> dict[str, bytes]:
    """Every output file's bytes, the executor's records aside."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.relative_to(out).parts[1:2] not in [(r,) for r in RECORDS]
    }


@pytest.fixture(scope="module")
def local_build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "out"
    assert main([*BUILD, "--out", str(out)]) == 0
    assert not any((out / "work" / r).exists() for r in RECORDS)
    return out


@pytest.fixture(scope="module")
def ray_cluster():
    with local_ray() as ray:
        yield ray


def test_ray_build_gives_the_local_files_and_resumes_a_missing_shard(
    ray_cluster, local_build, tmp_path, capsys
):
    from hf_posbias.executors.units import read_record

    out = tmp_path / "ray"
    argv = [*BUILD, "--out", str(out), "--executor", "ray", "--gpus-per-task", "0"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    shards = sorted(p.name for p in (out / "work" / "candidates" / "shards").iterdir())
    assert shards == ["shard-00000.parquet", "shard-00001.parquet"]
    for unit in ("generate/shard-00000", "generate/shard-00001", "verify/shard-00000"):
        assert f"{unit}: done in" in printed and "on ray (local)" in printed
        assert read_record(out / "work", unit).state == "done"
    assert files(out) == files(local_build)  # candidates, scored, train, pool: byte for byte

    (out / "work" / "candidates" / "shards" / "shard-00001.parquet").unlink()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "[1/1] generate/shard-00001: done in" in printed
    assert "shard-00000" not in printed  # finished shards are not redone
    again, first = files(out), files(local_build)
    # The verify report counts the pairs scored in this call: none (as a local resume says).
    report = "work/scored/report.json"
    assert (
        json.loads(again.pop(report))["pairs_scored"]
        == 0
        < json.loads(first.pop(report))["pairs_scored"]
    )
    assert again == first


def test_submitit_build_gives_the_local_files(local_build, tmp_path, capsys):
    pytest.importorskip("submitit")
    out = tmp_path / "slurm"
    argv = [*BUILD, "--out", str(out), "--executor", "slurm", "--slurm-cluster", "local"]
    assert main([*argv, "--gpus-per-task", "0"]) == 0
    printed = capsys.readouterr().out
    assert "generate/shard-00001: done in" in printed and "submitit local executor" in printed
    assert files(out) == files(local_build)


def test_an_executor_that_cannot_start_is_one_line_before_any_work(tmp_path, capsys):
    out = tmp_path / "out"
    argv = [*BUILD, "--out", str(out), "--executor", "ray", "--ray-address", "127.0.0.1:9"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Ray cluster at 127.0.0.1:9" in err[0], err
    assert not out.exists()
    work = tmp_path / "work"
    assert (
        main(["data", "generate", "--work", str(work), "--executor", "ray", "--ray-address", "x"])
        == 2
    )
    assert "--ray-address must be HOST:PORT or auto" in capsys.readouterr().err
    assert not work.exists()
