"""The face of the library (``import hf_posbias as pb``): light to import, complete, and the same
numbers as the verbs it stands for."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
from task_fixtures import wiki_task

import hf_posbias
from hf_posbias import api
from hf_posbias.cli import main

HEAVY = ("torch", "mteb", "datasets", "transformers", "sentence_transformers")


def test_importing_the_package_loads_no_heavy_library() -> None:
    code = (
        "import sys, hf_posbias as pb\n"
        "pb.POSITIONS, pb.__version__, dir(pb), pb.__all__\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_face_is_the_api_modules_calls_each_typed_and_documented() -> None:
    public = {
        n
        for n, v in vars(api).items()
        if callable(v)
        and getattr(v, "__module__", "").startswith("hf_posbias")
        and not n.startswith("_")
        and not isinstance(v, type)
    }
    assert public == set(hf_posbias._FACE)
    assert 8 <= len(hf_posbias.__all__) <= 20
    assert set(hf_posbias.__all__) <= set(dir(hf_posbias))
    for name in hf_posbias._FACE:
        call = getattr(hf_posbias, name)
        assert call is getattr(api, name) and call.__doc__
        signature = inspect.signature(call)
        assert signature.return_annotation is not inspect.Signature.empty, name
    with pytest.raises(AttributeError, match="no attribute 'evalute'"):
        hf_posbias.evalute  # noqa: B018


def test_pb_evaluate_gives_the_psi_posbias_evaluate_gives(shared_data, tmp_path, capsys) -> None:
    task = wiki_task(shared_data, tmp_path / "task", n_docs=12)
    assert (
        main(["evaluate", "--model", "bm25", "--task", str(task), "--out", str(tmp_path / "cli")])
        == 0
    )
    verb = json.loads((tmp_path / "cli" / "summary.json").read_text())
    [summary] = hf_posbias.evaluate("bm25", [task], out=tmp_path / "lib", progress=False)
    assert summary.psi == verb["psi"] and summary.ndcg_at_10 == verb["ndcg_at_10"]
    assert summary.interval(what="psi") is not None  # the same bootstrap ran


def test_pb_psi_is_the_statistics_psi() -> None:
    from hf_posbias.statistics.psi import psi

    scores = {"begin": 0.7, "middle": 0.2, "end": 0.5}
    assert hf_posbias.psi(scores) == psi(scores) > 0


def test_pb_list_benchmarks_is_the_table_posbias_list_benchmarks_prints(capsys) -> None:
    assert main(["list", "benchmarks"]) == 0
    printed = capsys.readouterr().out.strip()
    listing = hf_posbias.list_benchmarks()
    assert repr(listing) == str(listing) == printed
    assert [row.benchmark for row in listing] == [
        line.split(" | ")[0].strip("| ") for line in printed.splitlines()[2:]
    ]
    scifact = next(row for row in listing if row.benchmark == "scifact")
    assert scifact.tasks == ("SciFact-Evidence",) and scifact.source == "built-in"
