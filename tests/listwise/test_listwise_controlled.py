"""The controlled 1…k test: exactness of the pointwise control, the result files, resume, errors."""

from __future__ import annotations

import json

import pytest

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.controlled import run_controlled_test, summarize_positions_rows
from hf_posbias.listwise.experiments.experiment_settings import ControlledTestConfig
from hf_posbias.listwise.experiments.runs import ndcg_at_10
from hf_posbias.listwise.experiments.taskio import load_rerank_task
from hf_posbias.rerankers.loading import load_reranker


def read_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_pointwise_control_is_flat_and_per_query_file_recomputes_the_table(beir_task, tmp_path):
    out = tmp_path / "run"
    code = main(
        [
            "listwise",
            "test",
            "--reranker",
            "bm25",
            "--task",
            str(beir_task),
            "--k",
            "6",
            "--out",
            str(out),
            "--no-progress",
            "--n-resamples",
            "200",
        ]
    )
    assert code == 0
    summary = json.loads((out / "positions.json").read_text())
    assert summary["k"] == 6 and summary["reranker"] == "bm25"
    table = summary["positions"]
    assert [r["position"] for r in table] == [1, 2, 3, 4, 5, 6]
    values = {r["ndcg_at_10"] for r in table}
    assert len(values) == 1  # exactly the same at every input position
    assert summary["psi"] == 0.0 and summary["fallback_rate"] == 0.0
    assert all(r["n_queries"] == 4 for r in table)
    rows = read_rows(out / "per_query.jsonl")
    assert len(rows) == 4 * 6
    for row in rows:
        assert row["input"].index(row["relevant"]) == row["position"] - 1
        assert sorted(row["input"]) == sorted(row["ranking"])
        assert row["scores"] == sorted(row["scores"], reverse=True)
    # The per-query file alone reproduces positions.json exactly.
    task = load_rerank_task(beir_task)
    for row, score in zip(rows, ndcg_at_10(rows, task.qrels)):
        assert row["ndcg_at_10"] == score
    again = summarize_positions_rows(rows, k=6, reranker="bm25", n_resamples=200, seed=0)
    for key in ("positions", "psi", "psi_ci", "mean", "fallback_rate"):
        assert again[key] == summary[key]
    assert (out / "positions.png").stat().st_size > 1000


class Counting:
    """Wraps a reranker; counts windows and can stop the run after some calls."""

    def __init__(self, inner, stop_after=None):
        self.inner, self.stop_after, self.calls = inner, stop_after, 0
        self.name, self.window_size = inner.name, inner.window_size

    def rank_windows(self, windows):
        if self.stop_after is not None and self.calls >= self.stop_after:
            raise KeyboardInterrupt
        self.calls += 1
        return self.inner.rank_windows(windows)

    def describe(self):
        return self.inner.describe()


def test_interrupted_run_resumes_without_recomputing(beir_task, tmp_path):
    task = load_rerank_task(beir_task)
    bm25 = load_reranker("bm25", corpus_texts=[p.content() for p in task.corpus.values()])
    config = ControlledTestConfig(k=5, positions=[1, 3, 5], n_resamples=100)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_controlled_test(Counting(bm25, stop_after=2), task, out, config, show_progress=False)
    assert len(list((out / "shards").glob("*.parquet"))) == 2
    second = Counting(bm25)
    summary = run_controlled_test(second, task, out, config, show_progress=False)
    assert second.calls == 2  # only the 2 unfinished queries (one call = all positions of one)
    assert all(r["n_queries"] == 4 for r in summary["positions"])
    fresh = run_controlled_test(bm25, task, tmp_path / "fresh", config, show_progress=False)
    assert fresh["positions"] == summary["positions"]
    # The refusal names the flag that replaces a run, the same in every verb.
    with pytest.raises(InputError, match="other parameters.*rerun with --overwrite to"):
        run_controlled_test(bm25, task, out, ControlledTestConfig(k=4), show_progress=False)


def test_llm_reranker_runs_the_test_and_shows_its_window_counts(beir_task, tmp_path, tiny_llm):
    out = tmp_path / "llm"
    code = main(
        [
            "listwise",
            "test",
            "--reranker",
            tiny_llm,
            "--task",
            str(beir_task),
            "--k",
            "4",
            "--positions",
            "1,4",
            "--max-queries",
            "2",
            "--passage-tokens",
            "8",
            "--dtype",
            "float32",
            "--out",
            str(out),
            "--no-progress",
            "--n-resamples",
            "50",
        ]
    )
    assert code == 0
    rows = read_rows(out / "per_query.jsonl")
    assert len(rows) == 4 and {r["position"] for r in rows} == {1, 4}
    assert all(r["windows"] == 1 and r["identifiers"] == 4 and r["appended"] == 0 for r in rows)
    summary = json.loads((out / "positions.json").read_text())
    assert summary["reranker_details"]["kind"] == "first"
    assert summary["reranker_details"]["passage_tokens"] == 8


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--k", "31"], "larger than the first-stage list"),
        (["--split", "dev"], "no qrels for split 'dev'"),
        (["--positions", "0,3"], "--positions must lie in 1..20"),
        (["--k", "5", "--positions", "6"], "--positions must lie in 1..5"),
        (["--n-resamples", "0"], "--n-resamples must be >= 1, got 0"),
    ],
)
def test_bad_input_is_one_line(beir_task, tmp_path, capsys, extra, message):
    code = main(
        [
            "listwise",
            "test",
            "--reranker",
            "bm25",
            "--task",
            str(beir_task),
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
            *extra,
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and "\n" not in err and message in err
    assert not (tmp_path / "o").exists()  # refused before the output folder is made


def test_identifiers_error_comes_before_any_output(
    beir_task, tmp_path, capsys, merged_identifier_llm
):
    code = main(
        [
            "listwise",
            "test",
            "--reranker",
            merged_identifier_llm,
            "--task",
            str(beir_task),
            "--out",
            str(tmp_path / "o"),
            "--dtype",
            "float32",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "not single tokens" in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_position_task_folder_and_its_split(tmp_path, capsys):
    from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

    corpus = [
        {"id": f"d{i}", "title": "", "text": f"topic{i} text about topic{i}"} for i in range(8)
    ]
    queries = [
        {
            "id": f"q{i}",
            "text": f"topic{i}",
            "bucket": "begin",
            "evidence_start": 0,
            "evidence_end": 5,
            "doc_length": 20,
        }
        for i in range(3)
    ]
    qrels = [{"query_id": f"q{i}", "doc_id": f"d{i}", "score": 1} for i in range(3)]
    info = TaskInfo(name="Toy", description="toy", buckets=["begin"], extra={"split": "validation"})
    folder = PositionTaskData(info, corpus, queries, qrels).save(tmp_path / "toy")
    task = load_rerank_task(folder)
    assert task.split == "validation" and task.judged_queries() == ["q0", "q1", "q2"]
    with pytest.raises(InputError, match="no qrels for split 'train'"):
        load_rerank_task(folder, "train")
    code = main(
        [
            "listwise",
            "test",
            "--reranker",
            "bm25",
            "--task",
            str(folder),
            "--k",
            "3",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
            "--n-resamples",
            "50",
        ]
    )
    assert code == 0


def test_cross_encoder_control_is_flat_too(beir_task, tmp_path, tiny_cross_encoder):
    out = tmp_path / "ce"
    # A cross-encoder folder is recognised by its config; the prefix form works too.
    for name in (tiny_cross_encoder, f"cross-encoder:{tiny_cross_encoder}"):
        code = main(
            [
                "listwise",
                "test",
                "--reranker",
                name,
                "--task",
                str(beir_task),
                "--k",
                "5",
                "--out",
                str(out),
                "--no-progress",
                "--n-resamples",
                "50",
                "--overwrite",
            ]
        )
        assert code == 0
        summary = json.loads((out / "positions.json").read_text())
        assert summary["reranker_details"]["kind"] == "pointwise"
        assert len({r["ndcg_at_10"] for r in summary["positions"]}) == 1
        rows = read_rows(out / "per_query.jsonl")
        by_query: dict[str, set] = {}
        for row in rows:
            by_query.setdefault(row["query_id"], set()).add(tuple(row["ranking"]))
        assert all(len(rankings) == 1 for rankings in by_query.values())  # same output always


def test_qrels_that_are_not_utf8_name_the_byte_offset(beir_task):
    qrels = beir_task / "qrels" / "test.tsv"
    qrels.write_bytes(qrels.read_bytes() + "q1\tcaf\xe9\t1\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"test\.tsv: not UTF-8 text at byte offset \d+"):
        load_rerank_task(beir_task)
