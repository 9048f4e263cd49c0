"""``posbias benchmark from-corpus`` end to end on a synthetic corpus with a scripted LLM.

The corpus is made so that every filter's outcome can be worked out by hand: each line of a
passage carries one unique token, the scripted FAQ asks about the first token of its chunk, the
scripted judge grades 4 where the token occurs and 0 elsewhere, and one line of passage d0 is
copied into passage d3 (a false negative Stage 2 must find).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hf_posbias.construction import build as build_module
from hf_posbias.construction.build import build_benchmark
from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings
from hf_posbias.errors import InputError
from hf_posbias.rows.readers import read_dataset, read_parquet_rows
from hf_posbias.tasks.taskdata import PositionTaskData

FILLER = "alpha beta gamma delta epsilon zeta eta theta iota"


def _line(doc: int, line: int) -> str:
    return f"d{doc}l{line} {FILLER}"


def _corpus(path: Path) -> Path:
    rows = []
    for d in range(4):
        lines = [_line(d, i) for i in range(9)]
        if d == 3:
            lines[5] = _line(0, 4)  # d0l4's evidence also sits in d3: a false negative
        rows.append({"id": f"d{d}", "title": f"Doc {d}", "text": "\n".join(lines)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class ScriptedLLM:
    """Replies by the schema asked for; counts calls; grades out of range for ``d1l0``."""

    def __init__(self) -> None:
        self.calls = 0

    def complete_many(self, batch, *, seeds=None, json_schema=None, **_):
        self.calls += len(batch)
        return [self._reply(m[-1]["content"], (json_schema or {}).get("title")) for m in batch]

    @staticmethod
    def _reply(prompt: str, title: str | None) -> str:
        if title == "summary":
            return '{"summary": "Lines of tokens."}'
        if title == "faq":
            chunk = prompt.split("<chunk>\n", 1)[1]
            token = chunk.split()[0]
            item = {"question": f"What about {token}?", "answer": token, "type": "simple"}
            return json.dumps({"faqs": [item]})
        passage, question = re.match(r"Passage:\n(.*)\n\nQuestion: (.*?)\n", prompt, re.S).groups()
        token = question.split()[-1].rstrip("?")
        if token == "d1l0":
            return '{"score": 7}'
        return json.dumps({"score": 4 if token in passage.split() else 0})


def _settings(tmp_path: Path, corpus: Path, **kw) -> BenchmarkBuildSettings:
    return BenchmarkBuildSettings(
        corpus=str(corpus),
        out=str(tmp_path / "task"),
        min_words=60,
        max_words=120,
        chunk_words=20,
        rerankers="bm25",
        prelabel_threshold=0.1,
        fn_judges="j1,j2,j3",
        tiny_size=kw.pop("tiny_size", 3),
        shard_size=3,
        progress=False,
        **kw,
    )


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedLLM:
    llm = ScriptedLLM()
    monkeypatch.setattr(build_module._Build, "backend", lambda self, model: llm)
    return llm


def test_build_matches_the_hand_worked_construction(
    tmp_path: Path, scripted: ScriptedLLM, tiny_sentence_transformer: str
) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl")
    settings = _settings(tmp_path, corpus, embedder=tiny_sentence_transformer)
    report = build_benchmark(settings)
    # Per passage: chunks of lines 0-1 (begin), 2-3 and 4-5 (middle), 6-7 and 8 (end).
    # Stage 1 rerankers: the 2-3 chunk's token (line 2) lies in the begin third → dropped.
    # Downsampling: 4 per position. Judge: d1l0's grade 7 is outside 0-4 → dropped.
    # Stage 2: d0l4 also answers from d3 (3 judges grade it 4) → dropped.
    expected = [
        ("faq", 4, 8, 8),
        ("stage1_rerankers", 4, 4, 8),
        ("stage1_downsample", 4, 4, 4),
        ("stage1_judge", 3, 4, 4),
        ("stage2_false_negatives", 3, 3, 4),
        ("tiny", 3, 3, 3),
    ]
    table = json.loads((tmp_path / "task" / "construction.json").read_text())
    assert [(r["stage"], r["begin"], r["middle"], r["end"]) for r in table] == expected
    assert report["dropped"]["stage1_judge"]["judge reply outside 0-4 (segment grades)"] == 3
    assert report["dropped"]["stage2_false_negatives"] == {
        "question with a confirmed false negative": 1
    }
    assert report["llm_requests"]["summary"] == 4 and report["llm_requests"]["faq"] == 20

    data = PositionTaskData.load(tmp_path / "task")
    texts = {d["id"]: d["text"] for d in data.corpus}
    assert sorted(q["text"] for q in data.queries if q["bucket"] == "middle") == [
        "What about d1l4?",
        "What about d2l4?",
        "What about d3l4?",
    ]
    for q in data.queries:  # evidence = the chunk's span; bucket = Algorithm 1's tag
        doc = data.relevant_docs()[q["id"]]
        chunk = texts[next(iter(doc))][q["evidence_start"] : q["evidence_end"]]
        assert chunk.startswith(q["text"].split()[-1].rstrip("?"))
    assert PositionTaskData.load(tmp_path / "task" / "tiny").bucket_counts() == {
        "begin": 3,
        "middle": 3,
        "end": 3,
    }
    card = (tmp_path / "task-hub" / "README.md").read_text()
    assert "| stage2_false_negatives | 3 | 3 | 4 | 10 |" in card
    assert "path: queries_tiny.parquet" in card
    assert len(read_dataset(tmp_path / "task-hub", "queries_tiny", split="test")) == 9
    # the Hub folder is a benchmark repo: the task's files and eval.yaml
    assert PositionTaskData.load(tmp_path / "task-hub").bucket_counts() == data.bucket_counts()
    assert "PosQ-Build_one_minus_psi" in (tmp_path / "task-hub" / "eval.yaml").read_text()
    manifest = json.loads((tmp_path / "task/stages/06-stage1-judge/manifest.json").read_text())
    assert manifest["params"]["temperature"] == 0.0


def test_build_resumes_without_redoing_finished_shards(
    tmp_path: Path, scripted: ScriptedLLM, tiny_sentence_transformer: str
) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl")
    settings = _settings(tmp_path, corpus, embedder=tiny_sentence_transformer)
    build_benchmark(settings)
    first = scripted.calls
    # a killed run: the last FAQ shard never got written
    faq_shards = sorted((tmp_path / "task/stages/04-faq/shards").glob("shard-*.parquet"))
    redo = len(read_parquet_rows(faq_shards[-1]))
    faq_shards[-1].unlink()
    build_benchmark(settings)
    assert scripted.calls - first == redo  # only that shard's chunks were asked again
    with pytest.raises(InputError, match="holds a run with other parameters"):
        build_benchmark(_settings(tmp_path, corpus, embedder=tiny_sentence_transformer, seed=1))


def test_tiny_shortfall_is_one_line_per_position(
    tmp_path: Path, scripted: ScriptedLLM, tiny_sentence_transformer: str
) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl")
    report = build_benchmark(
        _settings(tmp_path, corpus, embedder=tiny_sentence_transformer, tiny_size=4)
    )
    assert report["warnings"] == [
        "tiny: position begin has 3 question(s), fewer than 4",
        "tiny: position middle has 3 question(s), fewer than 4",
    ]


def test_bad_corpora_are_one_line_errors(tmp_path: Path, scripted: ScriptedLLM) -> None:
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(InputError, match="duplicate id 'a'"):
        build_benchmark(_settings(tmp_path, dup))
    short = tmp_path / "short.jsonl"
    short.write_text('{"id": "a", "text": "too short"}\n')
    with pytest.raises(InputError, match=r"no passage of 60-120 words .*shorter than 60"):
        build_benchmark(_settings(tmp_path / "s", short))
    assert scripted.calls == 0


def test_cli_reports_a_bad_chunk_size_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from hf_posbias.cli import main

    argv = ["benchmark", "from-corpus", "--corpus", "demo", "--out", "o", "--chunk-words", "2000"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: --chunk-words (2000) is larger than the passage range (--max-words 1024): "
        "every passage would be one chunk tagged middle"
    ]


def test_build_through_an_openai_compatible_endpoint(
    tmp_path: Path, tiny_sentence_transformer: str
) -> None:
    """Summary, FAQ and every judge through a local OpenAI-compatible server (structured output,
    4 concurrent requests): the same construction as the in-process build above."""
    from openai_server import LocalChatServer

    def answer(path: str, body: dict) -> tuple[int, str]:
        schema = body["response_format"]["json_schema"]["schema"]
        return 200, ScriptedLLM._reply(body["messages"][-1]["content"], schema.get("title"))

    corpus = _corpus(tmp_path / "corpus.jsonl")
    with LocalChatServer(answer) as server:
        settings = _settings(
            tmp_path,
            corpus,
            embedder=tiny_sentence_transformer,
            llm_backend="openai",
            llm_model="served-llm",
            base_url=server.url,
            max_concurrency=4,
        )
        report = build_benchmark(settings)
    table = json.loads((tmp_path / "task" / "construction.json").read_text())
    assert [(r["stage"], r["begin"], r["middle"], r["end"]) for r in table][-2:] == [
        ("stage2_false_negatives", 3, 3, 4),
        ("tiny", 3, 3, 3),
    ]
    assert {r["model"] for r in server.requests} == {"served-llm", "j1", "j2", "j3"}
    assert all("response_format" in r for r in server.requests)
    asked = report["llm_requests"]
    assert len(server.requests) == sum(asked.values()) - asked.get("stage2_reranker_pairs", 0)
    manifest = json.loads((tmp_path / "task/stages/02-summary/manifest.json").read_text())
    assert manifest["params"]["llm"]["base_url"] == server.url
