"""``posbias benchmark subsample``: a seeded per-bucket query sample, every document kept."""

from __future__ import annotations

from task_fixtures import wiki_task

from hf_posbias.cli import main
from hf_posbias.tasks.taskdata import PositionTaskData


def test_sample_is_seeded_stratified_and_keeps_the_corpus(shared_data, tmp_path, capsys):
    folder = wiki_task(shared_data, tmp_path / "task", n_docs=12)
    full = PositionTaskData.load(folder)
    argv = ["benchmark", "subsample", "--task", str(folder), "--per-bucket", "2"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert main([*argv, "--out", str(tmp_path / "b")]) == 0
    assert "6 of 12 queries (begin 2 of 4, middle 2 of 4, end 2 of 4)" in capsys.readouterr().out
    a, b = PositionTaskData.load(tmp_path / "a"), PositionTaskData.load(tmp_path / "b")
    assert a.info.name == "WikiSentences-sample" and "seed 42" in a.info.description
    assert [q["id"] for q in a.queries] == [q["id"] for q in b.queries]  # seeded
    assert a.bucket_counts() == {"begin": 2, "middle": 2, "end": 2}
    assert a.corpus == full.corpus
    kept = {q["id"] for q in a.queries}
    assert {r["query_id"] for r in a.qrels} == kept
    other = PositionTaskData.load(folder).sample_queries(2, seed=1)
    assert {q["id"] for q in other.queries} != kept  # another seed, another sample
    assert main([*argv[:-1], "0", "--out", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.strip() == "error: --per-bucket must be >= 1, got 0"
