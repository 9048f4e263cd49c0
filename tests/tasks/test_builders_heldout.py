"""``posbias benchmark build heldout``: a build's held-out documents → an evidence-position task."""

from __future__ import annotations

import pytest

from hf_posbias.cli import main
from hf_posbias.corpus.documents import load_documents
from hf_posbias.corpus.sources import DEMO_SOURCE, HELDOUT, built_documents
from hf_posbias.tasks.builders.heldout import build_heldout
from hf_posbias.tasks.taskdata import PositionTaskData


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("build") / "data"
    argv = ["data", "build", "--corpus", "demo", "--limit", "300", "--holdout", "0.3"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    return out


def test_the_held_out_documents_become_one_query_each(build, tmp_path, capsys) -> None:
    task = tmp_path / "task"
    assert main(["benchmark", "build", "heldout", "--input", str(build), "--out", str(task)]) == 0
    assert f"wrote {task}" in capsys.readouterr().out
    data = PositionTaskData.load(task)
    folder, source = built_documents(build)
    held_out = {d.id for d in load_documents(folder)}
    # Every held-out document competes; each query's document is one of them, with its evidence.
    assert {d["id"] for d in data.corpus} == held_out and folder.name == HELDOUT
    assert len(data.queries) == len({q["doc_id"] for q in data.qrels}) > 0
    assert set(data.bucket_counts()) == {"begin", "middle", "end"}
    assert source == DEMO_SOURCE and data.info.license == DEMO_SOURCE.license
    # The work folder names the same build, and the same seed draws the same queries.
    again = build_heldout(build / "work", seed=42)
    assert [q["text"] for q in again.queries] == [q["text"] for q in data.queries]


def test_a_folder_without_a_build_is_one_line(tmp_path, capsys) -> None:
    argv = ["benchmark", "build", "heldout", "--input", str(tmp_path), "--out", str(tmp_path / "t")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no build" in err[0] and "posbias data build" in err[0]
