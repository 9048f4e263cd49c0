"""Position-bias results on the Hub, end to end through the olah mirror.

A task published by ``posbias benchmark publish`` (its repo folder committed to the mirror) is
downloaded from the mirror, two models are evaluated on it with ``--push-results`` (the upload
checked at the ``HfApi`` boundary: the mirror has no write routes), what they sent becomes their
model repos in the mirror, and ``posbias leaderboard --from-hub`` — given the model repos, and
through the benchmark's Hub leaderboard (``get_dataset_leaderboard``, answered at the ``HfApi``
boundary with the response huggingface_hub documents) — prints the board the run folders give.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from guards import HANG_GUARD_S
from hub_boundary import CapturingHfApi, capture_uploads
from olah_mirror import add_git_repo, client_env, olah_available, olah_server
from task_fixtures import toy_position_records

from hf_posbias.cli import main

TASK_REPO = "posbias-test/ToyPos"
MODELS = ("posbias-test/st-a", "posbias-test/st-b")


@pytest.fixture
def hub_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[CapturingHfApi]:
    return capture_uploads(monkeypatch, tmp_path / "uploaded")


def _run(code: str, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "stderr": out.stderr}


READ_BACK = """
    import json, sys, yaml
    from datasets import load_dataset
    from huggingface_hub import hf_hub_download, snapshot_download
    from mteb._hf_integration.eval_model import HFEvalMeta
    repo = {repo!r}
    meta = HFEvalMeta.model_validate(yaml.safe_load(open(
        hf_hub_download(repo, "eval.yaml", repo_type="dataset")).read()))
    queries = load_dataset(repo, "queries", split="test")
    qrels = load_dataset(repo, "default", split="test")
    snapshot = snapshot_download(repo, repo_type="dataset")
    print(json.dumps({{"ids": [t.id for t in meta.tasks], "queries": len(queries),
                      "qrels": len(qrels), "snapshot": snapshot}}))
"""

BOARDS = """
    import json, yaml
    import huggingface_hub
    from huggingface_hub import DatasetLeaderboardEntry, hf_hub_download
    from huggingface_hub import parse_eval_result_entries
    from mteb._hf_integration.eval_result_model import HFEvalResults
    from hf_posbias.cli import main
    task, models, root = {task!r}, {models!r}, {root!r}
    entries = {{}}
    for model in models:
        data = yaml.safe_load(open(hf_hub_download(model, ".eval_results/ToyPos.yaml")).read())
        HFEvalResults.model_validate(data)
        entries[model] = [(e.dataset_id, e.task_id, e.value, e.dataset_revision, e.source_name)
                          for e in parse_eval_result_entries(data)]
    given = main(["leaderboard", "--from-hub", task, *models, "--out", root + "/hub-given",
                  "--n-resamples", "200", "--no-progress"])

    def board(self, repo_id, *, base_model_only=None, token=None, timeout=None):
        # GET /api/datasets/{{repo_id}}/leaderboard as the Hub documents it, best first.
        assert repo_id == task and base_model_only is False
        return [DatasetLeaderboardEntry(**row) for row in json.load(open(root + "/api.json"))]

    huggingface_hub.HfApi.get_dataset_leaderboard = board
    listed = main(["leaderboard", "--from-hub", task, "--out", root + "/hub-listed",
                   "--n-resamples", "200", "--no-progress"])
    print(json.dumps({{"entries": entries, "given": given, "listed": listed}}))
"""


def _board_rows(folder: Path) -> list[dict[str, Any]]:
    from hf_posbias.evaluation.reports.leaderboard import read_leaderboard

    return read_leaderboard(folder)


def _same_rows(hub: list[dict[str, Any]], local: list[dict[str, Any]]) -> None:
    """Equal, the values to the 7 decimals a Hub percentage with 5 keeps."""
    assert len(hub) == len(local)
    for a, b in zip(hub, local, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if key == "curve":
                for x, y in zip(json.loads(a[key]), json.loads(b[key]), strict=True):
                    assert x["bucket"] == y["bucket"] and x["n_queries"] == y["n_queries"]
                    for k in ("ndcg_at_10", "low", "high"):
                        assert (x[k] is None) == (y[k] is None)
                        assert x[k] is None or math.isclose(x[k], y[k], abs_tol=1e-6)
            elif isinstance(a[key], float):
                assert math.isclose(a[key], b[key], abs_tol=1e-6), key
            else:
                assert a[key] == b[key], key


def test_a_published_task_and_pushed_results_give_the_local_board(
    tmp_path: Path, hub_api: type[CapturingHfApi]
) -> None:
    if not olah_available():
        pytest.skip("olah (pip install olah) or git not installed")
    from hf_posbias.tasks.builders.jsonl import build_from_records
    from hf_posbias.testing import build_tiny_sentence_transformer

    task = build_from_records(toy_position_records(), name="ToyPos").save(tmp_path / "task")
    assert main(["benchmark", "publish", "--task", str(task), "--out", str(tmp_path / "hub"),
                 "--hub-repo", TASK_REPO]) == 0  # fmt: skip
    upload = dict(hub_api.calls)["upload_folder"]
    assert upload["repo_type"] == "dataset" and upload["create_pr"] is False
    mirror = tmp_path / "mirror"
    add_git_repo(mirror, "datasets", TASK_REPO, hub_api.root / TASK_REPO)

    with olah_server(mirror, tmp_path / "olah") as endpoint:
        env = client_env(endpoint, tmp_path / "hf-home")
        read = _run(READ_BACK.format(repo=TASK_REPO), env)
        assert read["queries"] == 36 and read["qrels"] == 36
        buckets = ["begin", "middle", "end"]
        assert read["ids"] == [
            "ToyPos",
            "ToyPos_default_test",
            *(f"ToyPos_ndcg_at_10_{b}" for b in buckets),
            "ToyPos_position_mean",
            "ToyPos_one_minus_psi",
        ]
        runs = []
        for seed, model in enumerate(MODELS):
            folder = build_tiny_sentence_transformer(tmp_path / "models" / model, seed=seed)
            run = tmp_path / "runs" / model.split("/")[1]
            argv = ["evaluate", "--model", folder, "--task", read["snapshot"], "--out", str(run),
                    "--bootstrap", "200", "--push-results", model, "--no-progress"]  # fmt: skip
            assert main(argv) == 0
            runs.append(str(run))
            add_git_repo(mirror, "models", model, hub_api.root / model)
        sent = [kw for name, kw in hub_api.calls if name == "upload_folder"][1:]
        assert [(kw["repo_id"], kw["repo_type"], kw["create_pr"]) for kw in sent] == [
            (m, "model", False) for m in MODELS
        ]
        assert main(["leaderboard", *runs, "--out", str(tmp_path / "local"),
                     "--n-resamples", "200", "--no-progress"]) == 0  # fmt: skip
        local = _board_rows(tmp_path / "local")
        api = [
            {
                "rank": rank,
                "modelId": row["model"],
                "value": row["mean"] * 100,
                "filename": ".eval_results/ToyPos.yaml",
                "verified": False,
                "source": {
                    "url": f"{endpoint}/{row['model']}",
                    "name": "posbias evaluate",
                    "isExternal": False,
                },  # fmt: skip
                "author": {"name": "posbias-test", "type": "user", "avatarUrl": "", "_id": "1"},
                "pullRequest": None,
            }
            for rank, row in enumerate(local, start=1)
        ]
        (tmp_path / "api.json").write_text(json.dumps(api))
        boards = _run(BOARDS.format(task=TASK_REPO, models=list(MODELS), root=str(tmp_path)), env)

    assert boards["given"] == 0 and boards["listed"] == 0, boards["stderr"][-3000:]
    snapshot_commit = Path(read["snapshot"]).name
    assert sorted(boards["entries"]) == sorted(MODELS)
    for entries in boards["entries"].values():
        assert sorted(e[1] for e in entries) == sorted(read["ids"])  # one entry per task id
        assert {(e[0], e[3]) for e in entries} == {(TASK_REPO, snapshot_commit)}
        assert all(e[4].startswith("posbias evaluate --model ") for e in entries)
    local_md = (tmp_path / "local" / "leaderboard.md").read_text()
    for name in ("hub-given", "hub-listed"):
        assert (tmp_path / name / "leaderboard.md").read_text() == local_md
        _same_rows(_board_rows(tmp_path / name), local)
