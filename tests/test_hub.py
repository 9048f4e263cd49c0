"""The Hub, write side: the one token lookup and upload (HfApi patched at the boundary)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from guards import HANG_GUARD_S
from publish_rows import make_info, make_pool, make_train_sets

from hf_posbias.errors import BackendError, InputError, PosbiasError
from hf_posbias.hub import repo_url, upload_folder
from hf_posbias.publish.dataset_card import write_train_repo


class RecordingHfApi:
    """Stands in for huggingface_hub.HfApi: records calls, optionally raises."""

    calls: list[tuple[str, tuple, dict]] = []
    raise_on: dict[str, BaseException] = {}

    def __init__(self, token: str | None = None) -> None:
        self.token = token

    def create_repo(self, *args: Any, **kwargs: Any) -> str:
        self.calls.append(("create_repo", args, kwargs))
        if "create_repo" in self.raise_on:
            raise self.raise_on["create_repo"]
        return f"https://huggingface.co/{kwargs.get('repo_type', 'model')}s/{args[0]}"

    def upload_folder(self, *args: Any, **kwargs: Any) -> str:
        self.calls.append(("upload_folder", args, kwargs))
        if "upload_folder" in self.raise_on:
            raise self.raise_on["upload_folder"]
        return "commit-info"


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> type[RecordingHfApi]:
    import huggingface_hub

    RecordingHfApi.calls = []
    RecordingHfApi.raise_on = {}
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHfApi)
    return RecordingHfApi


def test_upload_sends_folder_repo_and_token(tmp_path: Path, fake_api) -> None:
    folder = write_train_repo(make_train_sets(make_pool()), tmp_path / "train", make_info())
    url = upload_folder(folder, "me/posbias-train", token="hf_secret", private=True)
    assert url == "https://huggingface.co/datasets/me/posbias-train"
    (name1, args1, kw1), (name2, _, kw2) = fake_api.calls
    assert name1 == "create_repo" and args1 == ("me/posbias-train",)
    assert kw1["repo_type"] == "dataset" and kw1["token"] == "hf_secret"
    assert kw1["exist_ok"] is True and kw1["private"] is True
    assert name2 == "upload_folder"
    assert kw2["repo_id"] == "me/posbias-train" and kw2["repo_type"] == "dataset"
    assert kw2["folder_path"] == str(folder) and kw2["token"] == "hf_secret"


def test_upload_model_folder_and_env_token(tmp_path: Path, fake_api, monkeypatch) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    upload_folder(tmp_path / "ckpt", "me/model", repo_type="model")
    assert [c[2]["token"] for c in fake_api.calls] == ["hf_from_env", "hf_from_env"]
    assert [c[2]["repo_type"] for c in fake_api.calls] == ["model", "model"]


def test_upload_without_token_is_a_clear_error(tmp_path: Path, fake_api, monkeypatch) -> None:
    import huggingface_hub

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    folder = write_train_repo(make_train_sets(make_pool()), tmp_path / "train", make_info())
    with pytest.raises(PosbiasError, match="no Hub token: pass --token"):
        upload_folder(folder, "me/x")
    assert fake_api.calls == []
    with pytest.raises(InputError, match="not a folder"):
        upload_folder(tmp_path / "missing", "me/x", token="t")


def test_upload_http_and_connection_errors_become_backend_errors(tmp_path: Path, fake_api) -> None:
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    folder = write_train_repo(make_train_sets(make_pool()), tmp_path / "train", make_info())
    request = httpx2.Request("POST", "https://huggingface.co/api/repos/create")
    response = httpx2.Response(403, request=request)
    fake_api.raise_on = {
        "create_repo": HfHubHTTPError("403 Forbidden: no rights", response=response)
    }
    with pytest.raises(BackendError, match=r"HTTP 403.*no rights") as err:
        upload_folder(folder, "me/x", token="t")
    assert "\n" not in str(err.value)
    fake_api.raise_on = {"upload_folder": httpx2.ConnectError("connection refused")}
    with pytest.raises(BackendError, match="cannot reach the Hub.*connection refused"):
        upload_folder(folder, "me/x", token="t")
    fake_api.raise_on = {"upload_folder": ConnectionError("offline mode is enabled")}
    with pytest.raises(BackendError, match="offline mode"):
        upload_folder(folder, "me/x", token="t")


@pytest.mark.skipif(
    not (os.environ.get("HF_TOKEN") and os.environ.get("POSBIAS_LIVE_REPO")),
    reason="live Hub test: set HF_TOKEN and POSBIAS_LIVE_REPO=<user>/<scratch-dataset>",
)
def test_live_upload_and_read_back(tmp_path: Path) -> None:
    repo_id = os.environ["POSBIAS_LIVE_REPO"]
    sets = make_train_sets(make_pool())
    folder = write_train_repo(sets, tmp_path / "train", make_info(repo_id=repo_id))
    # conftest sets HF_HUB_OFFLINE=1 before HF libraries load: the live round trip runs in a
    # fresh process with the real endpoint.
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    }
    env["HF_HOME"] = str(tmp_path / "hf")
    code = textwrap.dedent(
        f"""
        import json
        from hf_posbias.hub import upload_folder
        from hf_posbias.rows.readers import read_dataset
        url = upload_folder({str(folder)!r}, {repo_id!r}, private=True)
        rows = read_dataset({repo_id!r}, "uniform", revision="main").to_list()
        print(json.dumps({{"url": url, "rows": rows}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert repo_id in result["url"] and result["rows"] == sets["uniform"]


def test_repo_urls_follow_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9999")
    assert repo_url("me/m", "model") == "http://127.0.0.1:9999/me/m"
    assert repo_url("me/d") == "http://127.0.0.1:9999/datasets/me/d"


def test_a_malformed_repo_id_is_refused_before_any_call(tmp_path: Path, fake_api) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    with pytest.raises(InputError, match="must be <owner>/<name>"):
        upload_folder(tmp_path / "ckpt", "no-owner", repo_type="model", token="t")
    assert fake_api.calls == []
