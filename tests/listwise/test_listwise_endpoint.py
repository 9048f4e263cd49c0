"""Endpoint rerankers: generation mode over a real local server, logprobs mode, refusals."""

from __future__ import annotations

import json
import re

import pytest
from openai_server import LocalChatServer

from hf_posbias.cli import main
from hf_posbias.errors import BackendError
from hf_posbias.rerankers.generative import EndpointReranker
from hf_posbias.rerankers.records import Passage


def backend(url):
    from hf_posbias.generation.backends import OpenAIChatBackend

    return OpenAIChatBackend("served-model", base_url=url, max_retries=0, backoff=0)


def reverse_but_forget_one(path, body):
    """Answers the reverse input order, leaving out the first identifier."""
    user = body["messages"][-1]["content"]
    labels = re.findall(r"^\[([A-Z])\] ", user, flags=re.M)
    return 200, " > ".join(f"[{x}]" for x in reversed(labels[1:]))


def test_generation_mode_counts_identifiers_appended_in_input_order():
    seen = []

    def answer(path, body):
        seen.append(body)
        return reverse_but_forget_one(path, body)

    with LocalChatServer(answer) as server:
        reranker = EndpointReranker(backend(server.url), mode="generate", passage_tokens=3)
        passages = [Passage(f"d{i}", f"word{i} and more words here") for i in range(4)]
        (result,) = reranker.rank_windows([("q", passages)])
    assert result.order == [3, 2, 1, 0] and result.appended == 1
    assert seen[0]["temperature"] == 0.0
    assert "[A] word0 and more\n" in seen[0]["messages"][-1]["content"]  # 3 words kept


def test_endpoint_without_logprobs_is_refused_at_load(beir_task, tmp_path, capsys):
    with LocalChatServer(reverse_but_forget_one) as server:
        with pytest.raises(BackendError, match="no logprobs.*--mode generate"):
            EndpointReranker(backend(server.url), mode="first")
        code = main(
            [
                "listwise",
                "test",
                "--reranker",
                "served",
                "--base-url",
                server.url,
                "--mode",
                "first",
                "--task",
                str(beir_task),
                "--k",
                "4",
                "--out",
                str(tmp_path / "o"),
            ]
        )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "logprobs" in err and "\n" not in err
    assert not (tmp_path / "o" / "shards").exists()


def test_endpoint_test_run_in_generation_mode_reports_the_fallback(beir_task, tmp_path):
    with LocalChatServer(reverse_but_forget_one) as server:
        code = main(
            [
                "listwise",
                "test",
                "--reranker",
                "served",
                "--base-url",
                server.url,
                "--mode",
                "generate",
                "--task",
                str(beir_task),
                "--k",
                "4",
                "--out",
                str(tmp_path / "o"),
                "--no-progress",
                "--n-resamples",
                "50",
            ]
        )
    assert code == 0
    summary = json.loads((tmp_path / "o" / "positions.json").read_text())
    assert summary["fallback_rate"] == 1.0  # every window left one identifier out
    assert summary["fallback"]["appended_identifier_rate"] == pytest.approx(0.25)


class FakeCompletions:
    """The openai client's ``chat.completions`` with fixed top logprobs (boundary patch)."""

    def __init__(self, top):
        self.top, self.requests = top, []

    def create(self, **kwargs):
        from openai.types.chat import ChatCompletion

        self.requests.append(kwargs)
        entries = [{"token": t, "logprob": lp, "bytes": None} for t, lp in self.top]
        return ChatCompletion.model_validate(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": kwargs["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "length",
                        "message": {"role": "assistant", "content": self.top[0][0]},
                        "logprobs": {
                            "content": [
                                {
                                    "token": self.top[0][0],
                                    "logprob": self.top[0][1],
                                    "bytes": None,
                                    "top_logprobs": entries,
                                }
                            ]
                        },
                    }
                ],
            }
        )


def test_first_mode_reads_top_logprobs_and_counts_cut_identifiers(monkeypatch):
    from hf_posbias.generation.backends import OpenAIChatBackend

    completions = FakeCompletions([("C", -0.1), ("A", -1.0), ("B", -2.0)])

    class Client:
        chat = type("Chat", (), {"completions": completions})()

    monkeypatch.setattr(OpenAIChatBackend, "_get_client", lambda self: Client())
    reranker = EndpointReranker(backend("http://127.0.0.1:9/v1"), mode="first")
    passages = [Passage(f"d{i}", "text") for i in range(4)]
    (result,) = reranker.rank_windows([("q", passages)])
    assert result.order == [2, 0, 1, 3] and result.cut == 1  # D is outside the top-n
    request = completions.requests[-1]
    assert request["messages"][-1] == {"role": "assistant", "content": "["}
    assert request["logprobs"] is True and request["top_logprobs"] == 4
    assert request["extra_body"]["continue_final_message"] is True


def test_an_endpoint_that_is_down_is_named_unreachable_not_unable():
    import socket

    with socket.socket() as sock:  # a free port: nothing listens there
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    with pytest.raises(BackendError) as info:
        EndpointReranker(backend(url), mode="first")
    message = str(info.value)
    assert f"endpoint {url} is unreachable" in message, message
    assert "--base-url" in message and "--mode generate" not in message
