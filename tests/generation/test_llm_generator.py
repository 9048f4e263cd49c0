"""The two-stage persona generator against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
from collections import Counter

import pytest
from openai_server import LocalChatServer

from hf_posbias.corpus.documents import prepare_documents
from hf_posbias.errors import BackendError, InputError
from hf_posbias.generation.backends import OpenAIChatBackend
from hf_posbias.generation.generator_registry import make_generator
from hf_posbias.generation.llm import STAGE2_SCHEMA, parse_stage1, parse_stage2
from hf_posbias.generation.stage import run_generation

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

    def __init__(self, response_format: str = "accept") -> None:
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        super().__init__(self.answer, response_format=response_format)

    def answer(self, path: str, body: dict) -> tuple[int, str]:
        if path != "/v1/chat/completions":
            return 404, "no such route"
        prompt = body["messages"][-1]["content"]
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


def _openai(server: LocalChatServer, persona_file, minilm_path, **options):
    """The "openai" generator on the local server, personas from ``persona_file``."""
    return make_generator(
        "openai",
        model=options.pop("model", "m"),
        base_url=server.url,
        personas=str(persona_file),
        persona_model=minilm_path,
        **options,
    )


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
        gen = _openai(
            server,
            persona_file,
            minilm_path,
            model="test-model",
            top_k=3,
            max_retries=2,
            backoff=0.01,
            seed=7,
            constrained=False,  # free-form: YHP26 §3's parse-failure accounting
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
        assert meta["stage1_decoding"] == meta["stage2_decoding"] == "free_form"
    assert not any("response_format" in r for r in requests)
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
    with pytest.raises(InputError, match="persona file not found"):
        make_generator("openai", model="m", personas="missing.txt")
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


def _schema_obeying_model(path: str, body: dict) -> tuple[int, str]:
    """A model that answers JSON only under response_format (prose otherwise), like a tiny LM."""
    prompt = body["messages"][-1]["content"]
    if "response_format" not in body:
        return 200, "Sure! Here is what I think about this document in plain words."
    schema = body["response_format"]["json_schema"]["schema"]
    if "TARGET SEGMENT" not in prompt:
        n = max(schema["properties"]["persona"]["enum"])
        return 200, json.dumps({"persona": n, "difficulty": "phd", "query_length": "long"})
    position = re.search(r'<target_segment position="(\w+)">', prompt).group(1)
    return 200, json.dumps({"query": f"{position} query", "answer": "a", "reasoning": "r"})


def test_endpoint_gets_the_json_schemas_as_response_format(tmp_path, persona_file, minilm_path):
    docs, _ = prepare_documents([_doc("a", ""), _doc("b", "")])
    with LocalChatServer(_schema_obeying_model) as server:
        gen = _openai(server, persona_file, minilm_path, top_k=4)
        cands, report = run_generation(docs, gen, tmp_path / "gen", progress=False)
        requests = list(server.requests)
    assert report.documents_excluded == {} and report.positions_skipped == {}
    assert sorted(c.query for c in cands) == sorted(
        ["begin query", "middle query", "end query"] * 2
    )
    assert {c.meta_dict["persona"] for c in cands} == {gen.personas.top_k(docs[0].text, 4)[3]}
    assert all(c.meta_dict["stage1_decoding"] == "json_schema" for c in cands)
    assert all(c.meta_dict["stage2_decoding"] == "json_schema" for c in cands)
    assert len(requests) == 2 + 6  # no retry, no fallback
    formats = [r["response_format"] for r in requests]
    assert all(f["type"] == "json_schema" and f["json_schema"]["strict"] for f in formats)
    stage1 = formats[0]["json_schema"]
    assert stage1["name"] == "stage1_configuration"
    assert stage1["schema"]["properties"]["persona"]["enum"] == [1, 2, 3, 4]
    stage2 = next(f["json_schema"] for f in formats if f["json_schema"]["name"] == "stage2_query")
    # Strict structured outputs take no string-length keywords: endpoints bound by max_tokens.
    assert "maxLength" not in json.dumps(stage2["schema"])
    assert stage2["schema"]["required"] == STAGE2_SCHEMA["required"]


def test_endpoint_refusing_response_format_falls_back_free_form_counted(
    tmp_path, persona_file, minilm_path, caplog
):
    docs, _ = prepare_documents([_doc("a", ""), _doc("b", "BADCONFIG"), _doc("c", "")])
    with FakeOpenAI(response_format="refuse") as server:
        gen = _openai(
            server,
            persona_file,
            minilm_path,
            top_k=3,
            max_concurrency=1,  # one request at a time: the refusal is seen exactly once
        )
        with caplog.at_level(logging.WARNING):
            cands, report = run_generation(docs, gen, tmp_path / "gen", progress=False)
        requests = list(server.requests)
    # The refused request was repeated free-form; every later request went free-form directly.
    with_schema = [r for r in requests if "response_format" in r]
    assert len(with_schema) == 1 and len(requests) == 3 + 6 + 1
    assert gen.backend.schema_refused and "HTTP 400" in gen.backend.schema_refused
    assert report.documents_excluded == {"stage1_parse_error": 1}  # BADCONFIG: prose, counted
    assert len(cands) == 6
    assert all(c.meta_dict["stage1_decoding"] == "free_form_fallback" for c in cands)
    assert all(c.meta_dict["stage2_decoding"] == "free_form_fallback" for c in cands)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("refused response_format (" in w for w in warnings) == 1
    assert any("stage 1: 3 of 3 request(s) answered free-form" in w for w in warnings)
    assert any("stage 2: 6 of 6 request(s) answered free-form" in w for w in warnings)


def test_request_rejected_anyway_is_not_taken_for_a_schema_refusal():
    def answer(path: str, body: dict) -> tuple[int, str]:
        return 400, "prompt is longer than the context window"

    with LocalChatServer(answer) as server:
        backend = OpenAIChatBackend("m", base_url=server.url, max_retries=0)
        [reply] = backend.complete_many(
            [[{"role": "user", "content": "hi"}]], json_schema=STAGE2_SCHEMA
        )
        sent = list(server.requests)
    assert isinstance(reply, BackendError) and "context window" in str(reply)
    assert [("response_format" in r) for r in sent] == [True, False]
    assert backend.schema_refused is None


def test_default_personas_are_the_projects_own_pool(tmp_path, minilm_path):
    docs, _ = prepare_documents([_doc("a", "")])
    with LocalChatServer(_schema_obeying_model) as server:
        gen = make_generator(
            "openai", model="m", base_url=server.url, persona_model=minilm_path, top_k=5
        )
        cands, _ = run_generation(docs, gen, tmp_path / "gen", progress=False)
        prompt = server.requests[0]["messages"][-1]["content"]
    assert gen.params()["personas"]["source"] == "hf-posbias default personas"
    offered = re.findall(r"^\d\. (.*)$", prompt, re.M)
    assert len(offered) == 5 and all(p in gen.personas.personas for p in offered)
    # Ranked by MiniLM similarity to a text about reef fish: the naturalists come first.
    assert any(w in offered[0] for w in ("birdwatcher", "conservationist", "biologist"))
    assert {c.meta_dict["persona"] for c in cands} == {offered[4]}
