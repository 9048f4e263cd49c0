"""`posbias data build` end to end on real Wikipedia text: outputs, determinism, resume, bad
input."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from guards import HANG_GUARD_S

from hf_posbias.cli import main
from hf_posbias.corpus.sources import read_wikiextractor


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
    assert (
        main(["data", "build", "--corpus", str(wiki_jsonl), "--out", str(out), "--no-progress"])
        == 0
    )
    return out


@pytest.mark.shared_data
def test_build_leaves_loadable_hub_repos_with_balanced_uniform_cells(built: Path) -> None:
    from hf_posbias.rows.readers import read_dataset as load_dataset

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
    assert (
        main(["data", "build", "--corpus", str(wiki_jsonl), "--out", str(other), "--no-progress"])
        == 0
    )
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
    assert (
        main(["data", "build", "--corpus", str(wiki_jsonl), "--out", str(other), "--no-progress"])
        == 0
    )
    for repo in ("pool", "train"):
        assert _digests(built / repo) == _digests(other / repo)


@pytest.mark.shared_data
def test_stage_verbs_compose_to_the_same_result(
    built: Path, wiki_jsonl: Path, tmp_path: Path
) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    common = ["--work", str(work), "--no-progress"]
    assert main(["data", "corpus", "--corpus", str(wiki_jsonl), *common]) == 0
    assert main(["data", "generate", *common]) == 0
    assert main(["data", "verify", *common]) == 0
    assert main(["data", "sample", *common]) == 0
    assert main(["data", "publish", "--out", str(out), *common]) == 0
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
        "data",
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
    assert main(["data", "build", "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
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
            "data",
            "build",
            "--corpus",
            str(corpus),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "corpus.jsonl:2" in proc.stderr


def test_corpus_outside_every_bin_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus = tmp_path / "short.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": "tiny"}) + "\n" for i in range(3)))
    assert main(["data", "build", "--corpus", str(corpus), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no usable document" in err and "3 read" in err


@pytest.mark.shared_data
@pytest.mark.parametrize("server_schema", ["accept", "refuse"])
def test_llm_segment_audit_through_a_local_endpoint(
    built: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    server_schema: str,
) -> None:
    """`posbias data verify --audit-model` asks a judge per segment over a real HTTP endpoint, under
    the audit's JSON schema (``response_format``), or free-form (counted) where the server
    refuses it."""
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
        verdict = "yes" if words and hits / len(words) > 0.6 else "no"
        if "response_format" in body:
            return 200, json.dumps({"answer": verdict})
        return 200, verdict

    work = tmp_path / "work"
    shutil.copytree(built / "work", work)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    with LocalChatServer(judge, response_format=server_schema) as server:
        code = main(
            [
                "data",
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
    assert audit["judge"]["constrained"] is True and audit["judge"]["backend"] == "openai"
    replies = sum(s["audited"] for s in audit["strata"]) * 3
    decoding = "json_schema" if server_schema == "accept" else "free_form_fallback"
    assert audit["decodings"] == {decoding: replies}


@pytest.mark.shared_data
def test_llm_segment_audit_with_a_local_lm_judge(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """`posbias data verify --audit-backend local-lm`: a local causal LM judges offline, every reply
    decoded under the audit's schema, so none is unparsed even from random weights."""
    import shutil

    from hf_posbias.testing import build_tiny_checkpoint

    judge = build_tiny_checkpoint("llama", tmp_path / "judge", head="causal-lm", max_positions=4096)
    work = tmp_path / "work"
    shutil.copytree(built / "work", work)
    argv = ["data", "verify", "--work", str(work), "--no-progress", "--audit-model", judge]
    argv += ["--audit-backend", "local-lm", "--audit-per-stratum", "1"]
    assert main(argv) == 0
    audit = json.loads((work / "scored" / "audit.json").read_text())
    assert audit["judge"] == {
        "model": judge,
        "backend": "local-lm",
        "base_url": None,
        "constrained": True,
    }
    audited = sum(s["audited"] for s in audit["strata"])
    assert audited >= 3 and audit["decodings"] == {"json_schema": 3 * audited}
    assert all(s["unparsed_answers"] == 0 for s in audit["strata"])
    assert "replies decoded: json_schema" in capsys.readouterr().out


@pytest.mark.shared_data
def test_audit_judge_that_does_not_load_is_one_line(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    import shutil

    work = tmp_path / "work"
    shutil.copytree(built / "work", work)
    argv = ["data", "verify", "--work", str(work), "--no-progress", "--audit-backend", "local-lm"]
    assert main([*argv, "--audit-model", str(tmp_path / "no-such-model")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot load causal LM")
    assert not (work / "scored" / "audit.json").exists()


# --------------------------------------------------------------------------- a synthetic corpus


def topic_corpus(path: Path, n_docs: int = 30, seed: int = 0) -> Path:
    """Documents whose thirds each draw from their own small vocabulary, so that an ICT query
    (a sentence of one third) shares its words with the rest of that third: BM25 verification
    keeps most candidates, in seconds and without real data."""
    import random

    rng = random.Random(seed)
    vocab = [
        f"{a}{b}{c}"
        for a in "bcdfghklmnprstvz"
        for b in "aeiou"
        for c in ("lan", "mor", "tis", "vek", "dun")
    ]
    with path.open("w") as handle:
        for d in range(n_docs):
            thirds = []
            for _ in range(3):
                words = rng.sample(vocab, 14)
                sentences = [
                    " ".join(rng.choice(words) for _ in range(9)).capitalize() + "."
                    for _ in range(4)
                ]
                thirds.append(" ".join(sentences))
            doc = {"id": f"doc{d:03d}", "title": f"Doc {d}", "text": " ".join(thirds)}
            handle.write(json.dumps(doc) + "\n")
    return path


@pytest.fixture(scope="module")
def topic_jsonl(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(topic_corpus(tmp_path_factory.mktemp("topics") / "topics.jsonl"))


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_a_custom_ratio_goes_from_build_to_train_to_the_cards(
    topic_jsonl: str, tiny_models, tmp_path: Path
) -> None:
    """Regression: `build --config 50:25:25` published `r50-25-25`, and `train --config
    50:25:25` could not find it (and hinted at a `posbias data sample --ratio` that does not
    exist)."""
    from hf_posbias.errors import InputError
    from hf_posbias.rows.readers import available_configs
    from hf_posbias.training.matrix import expand_runs
    from hf_posbias.training.train import resolve_repo_config

    out = tmp_path / "out"
    build = ["data", "build", "--corpus", topic_jsonl, "--out", str(out), "--no-progress"]
    assert main([*build, "--config", "50:25:25", "--config", "uniform"]) == 0
    train = str(out / "train")
    assert available_configs(train) == ["r50-25-25", "uniform"]
    assert "| `r50-25-25` | 50:25:25 |" in (out / "train" / "README.md").read_text()

    ckpt = tmp_path / "ckpt"
    args = ["--data", train, "--out", str(ckpt), "--max-steps", "1", "--global-batch", "4"]
    assert main(["train", "--model", tiny_models("bert"), "--config", "50:25:25", *args]) == 0
    card = (ckpt / "README.md").read_text()
    assert "nominal begin:middle:end = 50:25:25" in card and "config `r50-25-25`" in card
    # Every spelling finds the same config; one that was never sampled names the real verb.
    assert resolve_repo_config(train, "r50-25-25") == resolve_repo_config(train, "50:25:25")
    assert resolve_repo_config(train, "U") == "uniform"
    with pytest.raises(InputError, match=r"posbias data sample --config 70:20:10"):
        resolve_repo_config(train, "70:20:10")
    # The training matrix passes the ratio through to `train --config`.
    (run,) = expand_runs(["bert-base"], ["50:25:25"], tmp_path / "runs")
    assert run.train_args(run.settings(train))[2:4] == ["--config", "50:25:25"]


def test_publish_states_the_seeds_the_stages_recorded(
    topic_jsonl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: `generate --seed 7`, `sample --seed 7`, then `publish` without `--seed`
    wrote cards saying "Seed: 42" (the CLI default) while the generator row said seed=7."""
    import re

    work, out = tmp_path / "work", tmp_path / "out"
    common = ["--work", str(work), "--no-progress"]
    assert main(["data", "corpus", "--corpus", topic_jsonl, *common]) == 0
    assert main(["data", "generate", "--seed", "7", *common]) == 0
    assert main(["data", "verify", *common]) == 0
    assert main(["data", "sample", "--seed", "7", *common]) == 0
    assert main(["data", "publish", "--out", str(out), *common]) == 0
    train_card = (out / "train" / "README.md").read_text()
    pool_card = (out / "pool" / "README.md").read_text()
    assert "Sampling seed: 7." in train_card and "Generation seed: 7." in train_card
    assert "| generation seed | 7 |" in pool_card and "| seed | 7 |" in pool_card
    for card in (train_card, pool_card):
        assert not re.search(r"[Ss]eed\W+42\b", card)
    capsys.readouterr()

    # A rerun with other parameters says so instead of mixing outputs …
    assert main(["data", "generate", "--seed", "8", *common]) == 2
    assert "generator_params.seed: 7 → 8" in _one_error_line(capsys)
    assert main(["data", "sample", "--seed", "9", *common]) == 2
    assert "seed: 7 → 9" in _one_error_line(capsys)
    # … more configurations with the same parameters add to the training sets …
    assert main(["data", "sample", "--seed", "7", "--config", "50:25:25", *common]) == 0
    manifest = json.loads((work / "train" / "manifest.json").read_text())
    assert manifest["configs"] == ["begin", "middle", "end", "uniform", "r50-25-25"]
    # … and --overwrite replaces the stage's output, which publish then describes.
    assert main(["data", "sample", "--seed", "9", "--config", "U", "--overwrite", *common]) == 0
    assert sorted(p.name for p in (work / "train").iterdir()) == [
        "manifest.json",
        "uniform.json",
        "uniform.parquet",
    ]
    assert main(["data", "publish", "--out", str(out), *common]) == 0
    train_card = (out / "train" / "README.md").read_text()
    assert "Sampling seed: 9." in train_card and "Generation seed: 7." in train_card
    assert sorted(p.name for p in (out / "train" / "data").iterdir()) == ["uniform"]
    capsys.readouterr()
    # An upstream stage replaced under a finished one: publish names the stage to rerun.
    assert main(["data", "verify", "--delta", "0.2", "--overwrite", *common]) == 0
    capsys.readouterr()
    assert main(["data", "publish", "--out", str(out), *common]) == 2
    assert "rerun `posbias data sample --overwrite`" in _one_error_line(capsys)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--delta", "5"], "delta 5 is above the largest margin panel bm25 (share) can give"),
        (["--delta", "-0.1"], "--delta must be >= 0, got -0.1"),
        (["--config", "1:2"], "position configuration '1:2' is not"),
        (["--budget", "0"], "--budget must be >= 1, got 0"),
        (["--min-cell", "0"], "--min-cell must be >= 1, got 0"),
        (["--bins", "512,256"], "length-bin edges must be"),
        (["--holdout", "1.5"], "--holdout must be >= 0 and < 1, got 1.5"),
        (["--limit", "0"], "--limit must be >= 1, got 0"),
        (["--keep-probability", "2"], "--keep-probability must be between 0 and 1, got 2.0"),
        (["--panel", "bm25@sigmoid"], "not valid for bm25"),
        (["--repo-id", "no-owner"], "must be <owner>/<name>"),
    ],
)
def test_bad_options_fail_first_in_one_line_and_write_nothing(
    extra: list[str], message: str, topic_jsonl: str, tmp_path: Path, capsys
) -> None:
    """Regression: `--delta 5` and `--config 1:2` were accepted and failed only after
    generation and verification had run."""
    out = tmp_path / "out"
    assert main(["data", "build", "--corpus", topic_jsonl, "--out", str(out), *extra]) == 2
    assert message in _one_error_line(capsys)
    assert not out.exists()


def test_a_corpus_that_is_not_utf8_names_the_file_and_byte_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: a non-UTF-8 corpus ended in a UnicodeDecodeError traceback."""
    good = json.dumps({"id": "a", "text": "word " * 100}) + "\n"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(good.encode() + '{"id": "b", "text": "caf\xe9 "}\n'.encode("latin-1"))
    out = tmp_path / "out"
    assert main(["data", "build", "--corpus", str(corpus), "--out", str(out), "--no-progress"]) == 2
    offset = len(good.encode()) + len('{"id": "b", "text": "caf')
    assert f"corpus.jsonl: not UTF-8 text at byte offset {offset}" in _one_error_line(capsys)
    assert not out.exists()


def test_out_pointing_at_a_file_or_a_foreign_folder_is_refused_first(
    topic_jsonl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: `--out` pointing at an existing file ended in a traceback."""
    a_file = tmp_path / "results.txt"
    a_file.write_text("keep me")
    assert main(["data", "build", "--corpus", topic_jsonl, "--out", str(a_file)]) == 2
    assert "exists and is a file" in _one_error_line(capsys)
    assert a_file.read_text() == "keep me"
    out = tmp_path / "out"
    (out / "train").mkdir(parents=True)
    (out / "train" / "notes.md").write_text("mine")
    assert main(["data", "build", "--corpus", topic_jsonl, "--out", str(out)]) == 2
    assert "holds files of no posbias run (train)" in _one_error_line(capsys)
    assert sorted(p.name for p in out.iterdir()) == ["train"]  # no work/ was started
    assert main(["data", "corpus", "--corpus", topic_jsonl, "--work", str(a_file)]) == 2
    assert "--work" in _one_error_line(capsys)


def test_progress_in_a_log_is_plain_lines_and_no_progress_silences_it(
    topic_jsonl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """stderr is not a terminal here (captured): progress must be plain lines, no \\r bars."""
    assert main(["data", "build", "--corpus", topic_jsonl, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b[" not in err
    starts = {line.split(":")[0].split(" ")[0] for line in err.splitlines()}
    assert {"corpus", "generate", "verify"} <= starts, err
    assert (
        main(
            [
                "data",
                "build",
                "--corpus",
                topic_jsonl,
                "--out",
                str(tmp_path / "b"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert capsys.readouterr().err == ""


def test_build_checks_delta_and_sampling_options_once(
    topic_jsonl: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: one `posbias data build` ran check_delta 3 times and check_sampling_options 6."""
    import hf_posbias.sampling.draw as sampling
    import hf_posbias.verification.panel as panel
    import hf_posbias.verification.stage as verification_stage

    calls: Counter[str] = Counter()

    def counted(function):
        def wrapper(*args, **kwargs):
            calls[function.__name__] += 1
            return function(*args, **kwargs)

        return wrapper

    check_sampling, check_delta = sampling.check_sampling_options, panel.check_delta
    # The settings check the numbers by their declared ranges; the library call checks its own.
    monkeypatch.setattr(sampling, "check_sampling_options", counted(check_sampling))
    for module in (panel, verification_stage):
        monkeypatch.setattr(module, "check_delta", counted(check_delta))
    out = tmp_path / "out"
    assert main(["data", "build", "--corpus", topic_jsonl, "--out", str(out), "--no-progress"]) == 0
    # The budget and minimum cell are checked by their declared ranges (BuildSettings, once).
    assert calls == {"check_delta": 1}
    assert len(list((out / "train").rglob("*.parquet"))) == 4  # every configuration sampled


def test_a_delta_change_refilters_the_build_without_scoring(
    built: Path, tmp_path: Path, wiki_jsonl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's promise: re-filter at any δ. Only δ changed: the build re-filters the scored
    pool from its margins (nothing is scored again) and draws the training sets again."""
    import shutil

    from hf_posbias.shards import merge_shards
    from hf_posbias.verification.panel import RerankerPanel

    out = tmp_path / "out"
    shutil.copytree(built, out)
    margins = [r["margin"] for r in merge_shards(out / "work" / "scored")]

    def no_scoring(*args, **kwargs):
        raise AssertionError("scored again after a δ change")

    monkeypatch.setattr(RerankerPanel, "score", no_scoring)
    argv = ["data", "build", "--corpus", str(wiki_jsonl), "--out", str(out), "--no-progress"]
    assert main([*argv, "--delta", "0.05"]) == 0
    pool = merge_shards(out / "work" / "scored")
    assert [r["margin"] for r in pool] == margins
    assert [r["retained"] for r in pool] == [m >= 0.05 for m in margins]
    scored = json.loads((out / "work" / "scored" / "manifest.json").read_text())
    train = json.loads((out / "work" / "train" / "manifest.json").read_text())
    assert scored["params"]["delta"] == 0.05 and train["params"]["pool"] == scored["fingerprint"]
