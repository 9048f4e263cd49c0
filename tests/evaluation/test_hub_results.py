"""``.eval_results`` written by ``posbias evaluate --push-results`` and read into a board.

The mirror round trip is tests/evaluation/test_hub_board.py; here, what is written and refused,
who gets a pull request, and a board from entries that carry no per-query table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hub_boundary import CapturingHfApi, capture_uploads
from task_fixtures import hub_snapshot, toy_position_records

from hf_posbias.cli import main
from hf_posbias.errors import InputError
from hf_posbias.evaluation.reports import hub_results
from hf_posbias.evaluation.reports.hub_results import (
    check_pushable,
    write_results_folder,
)
from hf_posbias.evaluation.reports.leaderboard import (
    LeaderboardSettings,
    build_leaderboard,
    markdown,
)
from hf_posbias.evaluation.summary import read_summaries
from hf_posbias.tasks.builders.jsonl import build_from_records

TASK_REPO = "posbias-test/ToyPos"


@pytest.fixture(scope="module")
def bm25_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BM25 run on a task folder downloaded from the Hub (a cache snapshot)."""
    root = tmp_path_factory.mktemp("hub-results")
    data = build_from_records(toy_position_records(12), name="ToyPos")
    snapshot = hub_snapshot(root, TASK_REPO, data)
    argv = ["evaluate", "--model", "bm25", "--task", str(snapshot), "--out", str(root / "run"),
            "--bootstrap", "100", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    return root / "run"


@pytest.fixture
def hub_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[CapturingHfApi]:
    return capture_uploads(monkeypatch, tmp_path / "uploaded")


def test_the_results_folder_holds_one_valid_entry_per_task_id(bm25_run, tmp_path) -> None:
    from huggingface_hub import parse_eval_result_entries
    from mteb._hf_integration.eval_result_model import HFEvalResults

    [summary] = read_summaries(bm25_run)
    assert (summary.task_repo, summary.task_repo_revision) == (TASK_REPO, "c" * 40)
    out = write_results_folder([summary], tmp_path / "sent", command="posbias evaluate x",
                               model_repo="me/bm25")  # fmt: skip
    data = yaml.safe_load((out / ".eval_results" / "ToyPos.yaml").read_text())
    HFEvalResults.model_validate(data)  # mteb's schema
    entries = parse_eval_result_entries(data)  # huggingface_hub's reader
    by_id = {e.task_id: e for e in entries}
    assert sorted(by_id) == sorted(
        ["ToyPos", "ToyPos_default_test", "ToyPos_position_mean", "ToyPos_one_minus_psi"]
        + [f"ToyPos_ndcg_at_10_{b}" for b in ("begin", "middle", "end")]
    )
    assert {(e.dataset_id, e.dataset_revision, e.source_name) for e in entries} == {
        (TASK_REPO, "c" * 40, "posbias evaluate x")
    }
    assert by_id["ToyPos_position_mean"].value == round(summary.mean * 100, 5)
    assert by_id["ToyPos_one_minus_psi"].value == round((1 - summary.psi) * 100, 5)
    low, high = summary.interval(what="mean")
    assert (
        f"[{100 * low:.2f}, {100 * high:.2f}] over 12 queries"
        in by_id["ToyPos_position_mean"].notes
    )
    assert entries[0].date and entries[0].source_url.endswith(
        "/me/bm25/tree/main/posbias-results/ToyPos"
    )
    trace = out / "posbias-results" / "ToyPos"
    assert sorted(p.name for p in trace.iterdir()) == ["ToyPos.parquet", "summary.json"]
    text = (trace / "summary.json").read_text()
    assert str(tmp_path.parent) not in text and str(bm25_run) not in text  # no local path
    assert json.loads(text)["model"] == "me/bm25"
    (tmp_path / "sent" / "mine.txt").write_text("x")
    with pytest.raises(InputError, match="holds other files"):
        write_results_folder([summary], tmp_path / "sent", command="c", model_repo="me/bm25")


def test_evaluate_pushes_by_pull_request_to_a_repo_it_does_not_own(
    bm25_run, tmp_path, hub_api, capsys
) -> None:
    from hf_posbias.evaluation.reports.hub_results import push_results

    hub_api.user = "someone-else"
    url = push_results(read_summaries(bm25_run), "posbias-test/bm25", command="c",
                       folder=tmp_path / "sent", token="hf_test")  # fmt: skip
    [(name, kwargs)] = hub_api.calls  # no create_repo: the model repo must exist
    assert name == "upload_folder" and kwargs["create_pr"] is True
    assert (kwargs["repo_id"], kwargs["repo_type"]) == ("posbias-test/bm25", "model")
    assert url.endswith("/discussions/1")
    assert (hub_api.root / "posbias-test/bm25/.eval_results/ToyPos.yaml").is_file()


def test_what_cannot_be_pushed_is_refused_in_one_line(bm25_run, tmp_path, monkeypatch, capsys):
    import dataclasses

    import huggingface_hub

    [summary] = read_summaries(bm25_run)
    with pytest.raises(InputError, match="scored under --scoring default"):
        check_pushable(dataclasses.replace(summary, scoring="zeng2025"))
    with pytest.raises(InputError, match="per-query table .* is missing"):
        check_pushable(dataclasses.replace(summary, per_query_path=str(tmp_path / "gone")))
    argv = ["evaluate", "--model", "bm25", "--task", "x", "--out", str(tmp_path / "o"),
            "--push-results", "me/bm25"]  # fmt: skip
    assert main([*argv, "--scoring", "zeng2025"]) == 2
    assert "--push-results: the Hub board's task ids" in capsys.readouterr().err
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    task = build_from_records(toy_position_records(6), name="ToyPos").save(tmp_path / "t")
    argv[4] = str(task)
    assert main(argv) == 2  # before the run: nothing evaluated, nothing written
    assert "no Hub token" in capsys.readouterr().err and not (tmp_path / "o").exists()


def _fake_hub(monkeypatch, values: dict[str, dict[str, float]], revision: str = "c" * 40):
    """The Hub reads of :func:`hub_summaries` answered from ``values`` (model → id → value),
    no per-query table in any model repo."""
    from huggingface_hub import EvalResultEntry

    monkeypatch.setattr(
        hub_results, "_benchmark", lambda repo: ("ToyPos", ["begin", "middle", "end"], ["default"])
    )
    monkeypatch.setattr(hub_results, "_trace", lambda repo, name, rev: [])

    def entries(repo, task_repo, *, revision=None, files=(), token=None):
        return [
            EvalResultEntry(dataset_id=task_repo, task_id=i, value=v, dataset_revision=revision_)
            for i, v in values[repo].items()
            for revision_ in [revision or "c" * 40]
        ]

    monkeypatch.setattr(hub_results, "model_entries", entries)


def test_a_board_from_entries_without_per_query_tables(monkeypatch, tmp_path) -> None:
    def scores(b, m, e):
        return {"ToyPos_ndcg_at_10_begin": b, "ToyPos_ndcg_at_10_middle": m,
                "ToyPos_ndcg_at_10_end": e, "ToyPos_position_mean": round((b + m + e) / 3, 5),
                "ToyPos_one_minus_psi": round(100 * min(b, m, e) / max(b, m, e), 5)}  # fmt: skip

    _fake_hub(monkeypatch, {"me/a": scores(60.0, 50.0, 40.0), "me/b": scores(80.0, 80.0, 80.0),
                            "me/c": {"ToyPos_ndcg_at_10_begin": 1.0}})  # fmt: skip
    settings = LeaderboardSettings(from_hub=TASK_REPO, runs=["me/a", "me/b", "me/c"],
                                   out=str(tmp_path / "lb"), progress=False)  # fmt: skip
    notes: list[str] = []
    [(task, rows)] = build_leaderboard(settings, notes).items()
    assert task == "ToyPos" and [r["model"] for r in rows] == ["me/b", "me/a"]
    assert rows[0]["mean"] == pytest.approx(0.8) and rows[1]["psi"] == pytest.approx(1 / 3)
    assert rows[0]["tied"] is None and rows[0]["p_next"] is None  # no table: not tested
    assert rows[0]["mean_low"] is None and rows[0]["n_queries"] is None
    assert rows[1]["harmonic_mean"] == pytest.approx(3 / (1 / 0.6 + 1 / 0.5 + 1 / 0.4))
    assert any("me/c: no ToyPos_position_mean entry" in n for n in notes)
    text = markdown({task: rows}, settings)
    assert "| 1 | me/b | 0.800 | 0.000 |" in text and "| n/a | not tested |" in text


def test_the_hub_leaderboard_lists_the_models_and_their_pull_requests(monkeypatch) -> None:
    from huggingface_hub import DatasetLeaderboardEntry

    def row(rank, model, pr):
        return DatasetLeaderboardEntry(
            rank=rank, modelId=model, value=50.0, filename=".eval_results/ToyPos.yaml",
            verified=False, source=None, author={"name": "x", "type": "user"},
            pullRequest=pr,
        )  # fmt: skip

    class Api:
        def __init__(self, token=None):
            pass

        def get_dataset_leaderboard(self, repo_id, *, base_model_only=None):
            assert base_model_only is False  # every submitted result, fine-tunes included
            return [row(2, "me/b", 7), row(1, "me/a", None), row(3, "me/a", 4)]

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    assert hub_results._board_models(TASK_REPO, None) == [
        ("me/a", None, ".eval_results/ToyPos.yaml"),
        ("me/b", "refs/pr/7", ".eval_results/ToyPos.yaml"),
    ]


def test_a_study_sends_each_checkpoint_s_hub_evaluations(bm25_run, tmp_path, hub_api) -> None:
    """``posbias study run`` with a ``hub_org``: a checkpoint's runs on Hub benchmarks go to its
    repo's ``.eval_results``; a task built here is named as left out."""
    import dataclasses
    import shutil

    from hf_posbias.evaluation.summary import write_summary_json
    from hf_posbias.study.publish import push_eval_results

    model = tmp_path / "study" / "eval" / "posbias-tiny-begin"
    shutil.copytree(bm25_run, model / "ToyPos")
    [summary] = read_summaries(bm25_run)
    local = dataclasses.replace(summary, task="Local", task_repo=None, task_repo_revision=None)
    write_summary_json([local], model / "Local")
    lines = push_eval_results(tmp_path / "study", "posbias-tiny-begin", "posbias-test/m", "t")
    assert lines[0].startswith("pushed posbias-tiny-begin's .eval_results (1 task(s))")
    assert "not sent to the Hub's benchmark boards: Local" in lines[1]
    [(_, upload)] = hub_api.calls
    assert upload["repo_id"] == "posbias-test/m" and upload["create_pr"] is False
    sent = yaml.safe_load((hub_api.root / "posbias-test/m/.eval_results/ToyPos.yaml").read_text())
    assert sent[0]["source"]["name"] == "posbias study run (spec: study/study.json)"
    assert (tmp_path / "study" / "hub" / "eval-results" / "posbias-tiny-begin").is_dir()


def test_a_benchmark_without_a_hub_board_says_to_name_the_model_repos(monkeypatch) -> None:
    import httpx2
    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError

    from hf_posbias.errors import BackendError

    class Api:
        def __init__(self, token=None):
            pass

        def get_dataset_leaderboard(self, repo_id, *, base_model_only=None):
            request = httpx2.Request("GET", f"https://huggingface.co/api/datasets/{repo_id}/x")
            raise HfHubHTTPError("404 Client Error", response=httpx2.Response(404, request=request))

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    with pytest.raises(BackendError, match="not listed yet has no leaderboard: name the model"):
        hub_results._board_models(TASK_REPO, None)
