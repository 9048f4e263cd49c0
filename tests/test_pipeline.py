"""`posbias build` end to end on real Wikipedia text: outputs, determinism, resume, bad input."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from hf_posbias.cli import main
from hf_posbias.corpus import read_wikiextractor


@pytest.fixture(scope="module")
def wiki_jsonl(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real Wikipedia paragraphs (one document each) so that several length bins fill up."""
    path = tmp_path_factory.mktemp("corpus") / "wiki.jsonl"
    with path.open("w") as handle:
        for record in read_wikiextractor(shared_data / "wikipedia_enwiki_wikiextractor"):
            for i, paragraph in enumerate(record["text"].split("\n")):
                if len(paragraph) > 200:
                    doc = {"id": f"{record['id']}-{i}", "title": record["title"], "text": paragraph}
                    handle.write(json.dumps(doc) + "\n")
    return path


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def built(wiki_jsonl: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build") / "out"
    assert main(["build", "--corpus", str(wiki_jsonl), "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.mark.shared_data
def test_build_leaves_loadable_hub_repos_with_balanced_uniform_cells(built: Path) -> None:
    from hf_posbias.hub import read_dataset as load_dataset  # content-addressed datasets cache

    uniform = load_dataset(str(built / "train"), "uniform", split="train")
    for column in ("query", "positive", "doc_id", "length_bin", "target_position"):
        assert column in uniform.column_names
    cells = Counter(zip(uniform["length_bin"], uniform["target_position"]))
    assert len(cells) >= 6  # at least two populated bins × three positions
    assert len(set(cells.values())) == 1, cells
    for config, position in (("begin", "begin"), ("middle", "middle"), ("end", "end")):
        rows = load_dataset(str(built / "train"), config, split="train")
        assert set(rows["target_position"]) == {position}
        assert len(rows) > 0
    pool = load_dataset(str(built / "pool"), "default", split="train")
    margins = pool["margin"]
    assert any(m < 0.3 for m in margins) and any(m >= 0.3 for m in margins)
    assert all(r == (m >= 0.3) for r, m in zip(pool["retained"], margins))
    # Every training row comes from a retained pool candidate, with the same query.
    retained = {c: q for c, q, r in zip(pool["candidate_id"], pool["query"], pool["retained"]) if r}
    for cid, query in zip(uniform["candidate_id"], uniform["query"]):
        assert retained[cid] == query


@pytest.mark.shared_data
def test_build_is_byte_identical_across_runs_and_resumes(
    built: Path, wiki_jsonl: Path, tmp_path: Path
) -> None:
    other = tmp_path / "again"
    assert main(["build", "--corpus", str(wiki_jsonl), "--out", str(other), "--no-progress"]) == 0
    for repo in ("pool", "train"):
        assert _digests(built / repo) == _digests(other / repo)

    # Simulate a kill during verification: the last shard and everything after it are gone.
    scored = other / "work" / "scored"
    shards = sorted((scored / "shards").glob("shard-*.parquet"))
    shards[-1].unlink()
    (scored / "report.json").unlink()
    for repo in ("pool", "train"):
        for parquet in (other / repo).rglob("*.parquet"):
            parquet.unlink()
    assert main(["build", "--corpus", str(wiki_jsonl), "--out", str(other), "--no-progress"]) == 0
    for repo in ("pool", "train"):
        assert _digests(built / repo) == _digests(other / repo)


@pytest.mark.shared_data
def test_stage_verbs_compose_to_the_same_result(
    built: Path, wiki_jsonl: Path, tmp_path: Path
) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    common = ["--work", str(work), "--no-progress"]
    assert main(["corpus", "--corpus", str(wiki_jsonl), *common]) == 0
    assert main(["generate", *common]) == 0
    assert main(["verify", *common]) == 0
    assert main(["sample", *common]) == 0
    assert main(["publish", "--out", str(out), *common]) == 0
    train_a = {k: v for k, v in _digests(built / "train").items() if k.endswith(".parquet")}
    train_b = {k: v for k, v in _digests(out / "train").items() if k.endswith(".parquet")}
    assert train_a == train_b


@pytest.mark.shared_data
def test_build_uploads_both_repos_when_asked(
    wiki_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    calls: list[tuple[str, dict]] = []

    class RecordingApi:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def create_repo(self, repo_id: str, **kwargs: object) -> str:
            calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
            return f"https://huggingface.co/datasets/{repo_id}"

        def upload_folder(self, **kwargs: object) -> str:
            calls.append(("upload_folder", dict(kwargs)))
            return f"https://huggingface.co/datasets/{kwargs['repo_id']}"

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    import hf_posbias.hub as hub

    if hasattr(hub, "HfApi"):
        monkeypatch.setattr(hub, "HfApi", RecordingApi)
    out = tmp_path / "out"
    args = [
        "build",
        "--corpus",
        str(wiki_jsonl),
        "--out",
        str(out),
        "--no-progress",
        "--repo-id",
        "posbias-org/wiki",
        "--token",
        "hf_test_token",
    ]
    assert main(args) == 0
    uploads = [kw for name, kw in calls if name == "upload_folder"]
    assert {u["repo_id"] for u in uploads} == {"posbias-org/wiki-pool", "posbias-org/wiki-train"}
    assert all(u.get("repo_type") == "dataset" for u in uploads)
    folders = {Path(str(u["folder_path"])).name for u in uploads}
    assert folders == {"pool", "train"}


def test_malformed_corpus_line_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    good = json.dumps({"id": "a", "text": "word " * 100})
    corpus.write_text(good + "\n" + '{"id": "b", "text": "unterminated\n' + good + "\n")
    assert main(["build", "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "corpus.jsonl:2" in err and "\n" not in err


def test_malformed_corpus_exits_nonzero_without_traceback(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "text": "x"}\nnot json at all\n')
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hf_posbias.cli",
            "build",
            "--corpus",
            str(corpus),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "corpus.jsonl:2" in proc.stderr


def test_corpus_outside_every_bin_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus = tmp_path / "short.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": "tiny"}) + "\n" for i in range(3)))
    assert main(["build", "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no usable document" in err and "3 read" in err


@pytest.mark.shared_data
def test_llm_segment_audit_through_a_local_endpoint(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """`posbias verify --audit-model` asks a judge per segment over a real HTTP endpoint."""
    import re
    import shutil

    from openai_server import LocalChatServer

    def judge(path: str, body: dict) -> tuple[int, str]:
        # Answerable iff most query words occur in the passage: a crude but real judge.
        prompt = body["messages"][-1]["content"]
        passage = re.search(r"Passage:\n(.*)\n\nQuestion:", prompt, re.S).group(1).lower()
        question = re.search(r"Question: (.*)\n", prompt).group(1).lower()
        words = [w for w in re.findall(r"[a-z]{4,}", question)]
        hits = sum(w in passage for w in words)
        return 200, "yes" if words and hits / len(words) > 0.6 else "no"

    work = tmp_path / "work"
    shutil.copytree(built / "work", work)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    with LocalChatServer(judge) as server:
        code = main(
            [
                "verify",
                "--work",
                str(work),
                "--no-progress",
                "--audit-model",
                "judge",
                "--base-url",
                server.url,
                "--audit-per-stratum",
                "5",
            ]
        )
    assert code == 0
    audit = json.loads((work / "scored" / "audit.json").read_text())
    strata = {s["stratum"]: s for s in audit["strata"]}
    assert len(strata) == 5  # failed, [0,0.1), [0.1,0.2), [0.2,0.3), >=0.3
    for stratum in strata.values():
        assert stratum["audited"] == min(5, stratum["candidates"])
        assert stratum["failed_calls"] == 0 and stratum["unparsed_answers"] == 0
    retained = next(s for label, s in strata.items() if label.startswith(">="))
    assert retained["audited"] > 0 and 0 <= retained["target_yes"] <= 100
    assert "TargetYes" in capsys.readouterr().out
