"""Model names: remote code only when asked, and a name that resolves nowhere is one line with
the closest names, without Hub retries (offline, or the Hub unreachable: patched at the client)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from hf_posbias.errors import InputError, ModelLoadError
from hf_posbias.modeling import cache, hub_probe, mteb_registry, resolve
from hf_posbias.modeling.hub_probe import UnknownModelError
from hf_posbias.modeling.loaders import load_model, load_registry_model
from hf_posbias.modeling.resolve import ModelSettings

REMOTE = "acme/remote-code-embedder"


@pytest.fixture
def remote_registry_entry(monkeypatch):
    """mteb's registry with one more entry whose loader arguments set ``trust_remote_code``; its
    loader records what it was called with."""
    import mteb

    calls: list[dict] = []

    def loader(name, revision=None, **kwargs):
        calls.append({"name": name, **kwargs})
        raise RuntimeError("stop after the loader was called")

    meta = mteb.get_model_meta("intfloat/e5-small-v2").model_copy(
        update={"name": REMOTE, "loader": loader, "loader_kwargs": {"trust_remote_code": True}}
    )
    real = mteb.get_model_meta
    monkeypatch.setattr(
        mteb,
        "get_model_meta",
        lambda name, *a, **k: meta if name == REMOTE else real(name, *a, **k),
    )
    names = mteb_registry.registry_names()
    registered = dataclasses.replace(names, lookup=names.lookup | {REMOTE})
    for module in (mteb_registry, resolve):  # where the resolver looks names up
        monkeypatch.setattr(module, "registry_names", lambda: registered)
    return meta, calls


def test_registry_model_with_remote_code_is_refused_without_the_flag(remote_registry_entry):
    _, calls = remote_registry_entry
    with pytest.raises(ModelLoadError, match="--trust-remote-code") as caught:
        load_model(REMOTE)
    assert "\n" not in str(caught.value) and REMOTE in str(caught.value)
    from hf_posbias.embedding import load_embedder

    with pytest.raises(ModelLoadError, match="--trust-remote-code"):
        load_embedder(REMOTE)
    assert calls == []  # mteb's loader never ran


def test_registry_model_with_remote_code_loads_with_the_flag(remote_registry_entry):
    meta, calls = remote_registry_entry
    with pytest.raises(ModelLoadError, match="stop after the loader"):
        load_model(REMOTE, settings=ModelSettings(trust_remote_code=True))
    assert calls and calls[0]["name"] == REMOTE and calls[0]["trust_remote_code"] is True
    with pytest.raises(ModelLoadError, match="stop after the loader"):
        load_registry_model(meta, trust_remote_code=True)
    assert len(calls) == 2


def test_nested_loader_kwargs_count_as_remote_code(remote_registry_entry):
    meta, _ = remote_registry_entry
    nested = meta.model_copy(
        update={"loader_kwargs": {"model_kwargs": {"trust_remote_code": True}}}
    )
    assert mteb_registry.registry_needs_remote_code(nested)
    with pytest.raises(ModelLoadError, match="--trust-remote-code"):
        load_registry_model(nested)


def test_paper_panel_needs_the_opt_in():
    from hf_posbias.pipeline.stage_settings import PanelSettings
    from hf_posbias.verification.panel import PAPER_PANEL, parse_panel

    with pytest.raises(InputError, match="--trust-remote-code"):
        parse_panel("paper", load=False)
    with pytest.raises(InputError, match="--trust-remote-code"):
        PanelSettings(panel="paper")
    panel = parse_panel("paper", load=False, trust_remote_code=True)
    assert [m.name for m in panel.members] == list(PAPER_PANEL)
    assert all(m.trust_remote_code for m in panel.members)
    assert not any(m.trust_remote_code for m in parse_panel("acme/ce", load=False).members)


@pytest.fixture
def unreachable_hub(monkeypatch):
    """Online, but every Hub request fails to connect (patched at the client); counts them."""
    import httpx
    from huggingface_hub import HfApi, constants

    asked: list[str] = []

    def model_info(self, repo_id, **kwargs):
        asked.append(repo_id)
        raise httpx.ConnectError("[Errno -2] Name or service not known")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(HfApi, "model_info", model_info)
    hub_probe._ask_hub.cache_clear()
    yield asked
    hub_probe._ask_hub.cache_clear()


@pytest.fixture(params=["offline", "unreachable"])
def hub(request, monkeypatch):
    """The two ways the Hub cannot answer, and the words the error line uses for each."""
    if request.param == "offline":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        return "HF_HUB_OFFLINE is set"
    request.getfixturevalue("unreachable_hub")
    return "the Hub is unreachable"


def test_unknown_model_is_one_line_with_the_closest_name(hub, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(UnknownModelError) as caught:
        load_model("all-MiniLM-L6-v3")
    line = str(caught.value)
    assert line.startswith("unknown model 'all-MiniLM-L6-v3'") and "\n" not in line
    assert "did you mean 'all-MiniLM-L6-v2'" in line and hub in line
    assert "Retry" not in caplog.text


def test_the_hub_is_asked_once_per_id(unreachable_hub):
    with pytest.raises(UnknownModelError):
        load_model("all-MiniLM-L6-v3")
    with pytest.raises(UnknownModelError):
        load_model("all-MiniLM-L6-v3")
    assert unreachable_hub == ["all-MiniLM-L6-v3"]  # no retries; the answer is kept


def test_a_name_the_hub_does_not_know(monkeypatch):
    import httpx
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import RepositoryNotFoundError

    def model_info(self, repo_id, **kwargs):
        request = httpx.Request("GET", f"https://huggingface.co/api/models/{repo_id}")
        response = httpx.Response(404, request=request)
        raise RepositoryNotFoundError(f"{repo_id} not found", response=response)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(HfApi, "model_info", model_info)
    hub_probe._ask_hub.cache_clear()
    try:
        state = hub_probe.hub_state("acme/intfloat-e5-smal-v2")
        assert (state.cached, state.exists, state.note) == (False, False, "")
        with pytest.raises(UnknownModelError, match="nor a Hub model"):
            load_model("acme/intfloat-e5-smal-v2")
    finally:
        hub_probe._ask_hub.cache_clear()


def _cli(argv: list[str], capsys) -> list[str]:
    from hf_posbias.cli import main

    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Retry" not in captured.err + captured.out
    return captured.err.strip().splitlines()


def test_evaluate_unknown_model_on_the_command_line(hub, tmp_path, capsys):
    from tests.test_bm25 import tiny_task

    task = tiny_task(tmp_path / "task")
    out = tmp_path / "out"
    argv = ["evaluate", "--model", "all-MiniLM-L6-v3", "--task", str(task), "--out", str(out)]
    [line] = _cli([*argv, "--no-progress"], capsys)
    assert line.startswith("error: unknown model 'all-MiniLM-L6-v3'") and hub in line
    assert "did you mean 'all-MiniLM-L6-v2'" in line


def test_listwise_unknown_reranker_on_the_command_line(hub, tmp_path, capsys):
    from tests.test_bm25 import tiny_task

    task = tiny_task(tmp_path / "task")
    argv = ["listwise", "test", "--reranker", "smollm2-135n", "--task", str(task)]
    [line] = _cli([*argv, "--out", str(tmp_path / "out"), "--k", "4"], capsys)
    assert line.startswith("error: unknown reranker 'smollm2-135n'") and hub in line
    assert "did you mean 'smollm2-135m'" in line
    assert not Path(tmp_path / "out").exists() or not any(Path(tmp_path / "out").iterdir())


def test_unknown_first_stage_suggests_bm25(monkeypatch):
    from hf_posbias.listwise.experiments.firststage import load_first_stage

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UnknownModelError, match="did you mean 'bm25'"):
        load_first_stage("bm26", {})


def test_registry_names_are_cached_and_a_stale_file_is_rebuilt(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    path = tmp_path / mteb_registry.REGISTRY_NAMES_FILE
    stale = {"mteb_version": "0.0.0", "models": ["acme/stale"], "rerankers": [], "renamed": []}
    path.write_text(json.dumps(stale))
    names = mteb_registry.registry_names()
    assert names.mteb_version == mteb_registry._mteb_version() != "0.0.0"
    assert "acme/stale" not in names.models and "intfloat/e5-small-v2" in names.models
    assert "cross-encoder/ms-marco-MiniLM-L6-v2" in names.rerankers
    written = json.loads(path.read_text())
    assert written["mteb_version"] == names.mteb_version
    assert mteb_registry.registry_names() == names  # read back from the file


def test_the_warm_unknown_name_path_does_not_import_mteb(tmp_path):
    import os
    import subprocess
    import sys

    from tests.test_bm25 import tiny_task

    env = {**os.environ, cache.CACHE_ENV: str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    task = tiny_task(tmp_path / "task")
    argv = ["evaluate", "--model", "all-MiniLM-L6-v3", "--task", str(task), "--out"]
    argv += [str(tmp_path / "out"), "--no-progress"]
    script = (
        "import sys; from hf_posbias.cli import main; rc = main(sys.argv[1:]); "
        "print('mteb imported:', 'mteb' in sys.modules); sys.exit(rc)"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script, *argv], env=env, capture_output=True)
        for _ in ("cold", "warm")
    ]
    for run in runs:
        assert run.returncode == 2, run.stderr
        assert b"did you mean 'all-MiniLM-L6-v2'" in run.stderr
    assert b"mteb imported: True" in runs[0].stdout  # the first lookup reads the registry
    assert b"mteb imported: False" in runs[1].stdout, runs[1].stdout


def test_a_hub_dataset_is_here_when_cached_or_on_the_hub(monkeypatch, tmp_path):
    # The study's preflight asks of a dataset what it asks of a model: the local cache (a
    # snapshot, or datasets' own cache folder), then, only when online, one Hub request.
    import httpx
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import RepositoryNotFoundError

    from hf_posbias.modeling.hub_probe import missing_from_hub

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert missing_from_hub("pairs", "acme/pairs", "dataset") == (
        "pairs: the Hub dataset acme/pairs is not in the local HF cache, and the Hub is offline "
        "(HF_HUB_OFFLINE is set)"
    )
    (tmp_path / "datasets" / "acme___pairs").mkdir(parents=True)  # what load_dataset keeps
    assert missing_from_hub("pairs", "acme/pairs", "dataset") is None
    snapshot = tmp_path / "hub" / "datasets--acme--task" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "task.json").write_text("{}")  # what snapshot_download keeps
    assert missing_from_hub("tasks", "acme/task", "dataset") is None

    asked: list[str] = []

    def dataset_info(self, repo_id, **kwargs):
        asked.append(repo_id)
        if repo_id == "acme/on-hub":
            return object()
        request = httpx.Request("GET", f"https://huggingface.co/api/datasets/{repo_id}")
        raise RepositoryNotFoundError("not found", response=httpx.Response(404, request=request))

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(HfApi, "dataset_info", dataset_info)
    hub_probe._ask_hub.cache_clear()
    try:
        assert missing_from_hub("data", "acme/on-hub", "dataset") is None
        assert missing_from_hub("data", "acme/gone", "dataset") == (
            "data: the Hub dataset acme/gone is not in the local HF cache, nor on the Hub"
        )
        assert asked == ["acme/on-hub", "acme/gone"]
    finally:
        hub_probe._ask_hub.cache_clear()
