"""The two-stage persona generator against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections import Counter

import pytest
from openai_server import LocalChatServer

from hf_posbias.corpus import prepare_documents
from hf_posbias.errors import BackendError, InputError
from hf_posbias.generation import make_generator, run_generation
from hf_posbias.generation.llm import parse_stage1, parse_stage2

PERSONAS = [
    "a marine biologist who studies coral reefs",
    "a railway engineer maintaining steam locomotives",
    "a medieval historian of French castles",
    "a jazz pianist and music teacher",
    "a volcanologist monitoring Icelandic eruptions",
]


class FakeOpenAI(LocalChatServer):
    """A threaded HTTP server speaking POST /v1/chat/completions with deterministic replies.

    Documents steer it through markers in their text: ``BADCONFIG`` → Stage 1 answers prose
    without JSON; ``BADMIDDLE`` → Stage 2 for the middle third answers truncated JSON;
    ``FLAKY`` → the first Stage-1 request answers HTTP 500; ``REJECTEND`` → Stage 2 for the end
    third answers HTTP 400.
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        super().__init__(self.answer)

    def answer(self, path: str, body: dict) -> tuple[int, str]:
        if path != "/v1/chat/completions":
            return 404, "no such route"
        prompt = body["messages"][-1]["content"]
        with self.lock:
            self.requests.append(body)
        if "TARGET SEGMENT" not in prompt:  # Stage 1
            title = re.search(r"^Title: (.*)$", prompt, re.M).group(1)
            with self.lock:
                self.hits[f"stage1:{title}"] += 1
                first = self.hits[f"stage1:{title}"] == 1
            if "FLAKY" in prompt and first:
                return 500, "temporary overload"
            if "BADCONFIG" in prompt:
                return 200, "I am sorry, I cannot choose a configuration for this."
            return 200, (
                'Here is my choice:\n```json\n{"persona": 1, "difficulty": "High School", '
                '"query_length": "short"}\n```'
            )
        position = re.search(r'<target_segment position="(\w+)">', prompt).group(1)
        segment = prompt.split(f'<target_segment position="{position}">\n', 1)[1]
        words = segment.split()[:4]
        if "BADMIDDLE" in prompt and position == "middle":
            return 200, '{"query": "unterminated'
        if "REJECTEND" in prompt and position == "end":
            return 400, "prompt too long"
        persona = prompt.splitlines()[0]
        return 200, json.dumps(
            {
                "query": f"what about {' '.join(words)}",
                "answer": words[0],
                "reasoning": f"{persona} | only the {position} segment says it",
            }
        )


def _doc(doc_id: str, marker: str) -> dict:
    third = "Reef fish shelter among corals in warm shallow seas. "
    return {
        "id": doc_id,
        "title": f"Doc {doc_id}",
        "text": (f"Alpha{doc_id} {marker} " + third * 3)
        + (f"Beta{doc_id} " + third * 3)
        + (f"Gamma{doc_id} " + third * 3),
    }


@pytest.fixture()
def persona_file(tmp_path):
    path = tmp_path / "personas.jsonl"
    path.write_text("".join(json.dumps({"persona": p}) + "\n" for p in PERSONAS))
    return path


def test_two_stage_generation_counts_failures_and_retries(tmp_path, persona_file, minilm_path):
    docs, _ = prepare_documents(
        [
            _doc("ok", ""),
            _doc("badcfg", "BADCONFIG"),
            _doc("badmid", "BADMIDDLE"),
            _doc("flaky", "FLAKY"),
            _doc("reject", "REJECTEND"),
        ]
    )
    with FakeOpenAI() as server:
        gen = make_generator(
            "openai",
            model="test-model",
            base_url=server.url,
            personas=str(persona_file),
            persona_model=minilm_path,
            top_k=3,
            max_retries=2,
            backoff=0.01,
            seed=7,
        )
        cands, report = run_generation(docs, gen, tmp_path / "gen", shard_size=2, progress=False)
        requests = list(server.requests)
        hits = dict(server.hits)

    assert report.documents_excluded == {"stage1_parse_error": 1}
    assert report.examples["stage1_parse_error"] == ["badcfg"]
    assert report.positions_skipped == {"stage2_backend_rejected": 1, "stage2_parse_error": 1}
    got = sorted(c.candidate_id for c in cands)
    assert got == sorted(
        [f"{d}::{p}" for d in ("ok", "flaky") for p in ("begin", "middle", "end")]
        + ["badmid::begin", "badmid::end", "reject::begin", "reject::middle"]
    )
    assert hits["stage1:Doc flaky"] == 2  # one HTTP 500, then the retry succeeded
    by_id = {d.id: d for d in docs}
    for cand in cands:
        doc = by_id[cand.doc_id]
        seg = next(s for s in doc.segments if s.position == cand.target_position)
        assert cand.positive == doc.text and cand.segments == [s.text for s in doc.segments]
        assert cand.query == "what about " + " ".join(seg.text.split()[:4])
        meta = cand.meta_dict
        # The persona most similar to a coral-reef text was offered first and chosen as #1.
        assert meta["persona"] == PERSONAS[0]
        assert meta["difficulty"] == "high_school" and meta["query_length"] == "short"
        assert meta["reasoning"].startswith(f"You are {PERSONAS[0]}.")
        assert cand.generator == "openai" and cand.answer == seg.text.split()[0]
    stage1 = [r for r in requests if "TARGET SEGMENT" not in r["messages"][-1]["content"]]
    offered = re.findall(r"^\d\. (.*)$", stage1[0]["messages"][-1]["content"], re.M)
    assert len(offered) == 3 and offered[0] == PERSONAS[0]
    assert all(r["temperature"] == 1.0 and r["top_p"] == 1.0 for r in requests)
    stage2_seeds = [r["seed"] for r in requests if "TARGET SEGMENT" in r["messages"][-1]["content"]]
    assert len(set(stage2_seeds)) == len(stage2_seeds)  # a distinct seed per (doc, position)


def test_unreachable_endpoint_is_a_one_line_backend_error(tmp_path, persona_file, minilm_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port now
    docs, _ = prepare_documents([_doc("ok", "")])
    url = f"http://127.0.0.1:{port}/v1"
    gen = make_generator(
        "openai",
        model="m",
        base_url=url,
        personas=str(persona_file),
        persona_model=minilm_path,
        max_retries=1,
        backoff=0.01,
        timeout=5,
    )
    with pytest.raises(BackendError) as info:
        run_generation(docs, gen, tmp_path / "gen", progress=False)
    message = str(info.value)
    assert url in message and "\n" not in message and "2 attempt(s)" in message
    assert not list((tmp_path / "gen" / "shards").glob("*.parquet"))  # nothing half-written


def test_llm_generator_option_errors(persona_file):
    with pytest.raises(InputError, match="needs personas"):
        make_generator("openai", model="m")
    with pytest.raises(InputError, match="needs a model"):
        make_generator("local-lm", personas=str(persona_file))
    with pytest.raises(InputError, match="does not take option"):
        make_generator("openai", model="m", personas=str(persona_file), temprature=0.5)


def test_stage_parsers_validate_fields_and_enumerations():
    personas = ["a cook", "a pilot"]
    assert (
        parse_stage1(
            'Sure. {"persona": "A Pilot", "difficulty": "university", "query_length": "long"}',
            personas,
        ).persona
        == "a pilot"
    )
    for bad, reason in [
        ("nothing", "stage1_parse_error"),
        ('{"persona": 3, "difficulty": "phd", "query_length": "short"}', "stage1_invalid_config"),
        (
            '{"persona": 1, "difficulty": "kindergarten", "query_length": "short"}',
            "stage1_invalid_config",
        ),
        ('{"persona": 1, "difficulty": "phd", "query_length": "huge"}', "stage1_invalid_config"),
    ]:
        with pytest.raises(Exception) as info:
            parse_stage1(bad, personas)
        assert info.value.reason == reason
    with pytest.raises(ValueError, match="stage2_invalid_output"):
        parse_stage2('{"query": "", "answer": "x"}')
    with pytest.raises(ValueError, match="stage2_parse_error"):
        parse_stage2("```json\n{oops}\n```")
