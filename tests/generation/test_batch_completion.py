"""The chat backends' shared entry points: a backend implements ``_complete`` only."""

from __future__ import annotations

import pytest

from hf_posbias.generation.backends import (
    BatchCompletion,
    ChatReply,
    ChatRequest,
    RequestRejected,
)


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


class EchoBackend(BatchCompletion):
    """Replies with what it was asked; a conversation saying "long" is rejected."""

    returned_errors = (RequestRejected,)

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    def _complete(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        text = request.messages[-1]["content"]
        if text == "long":
            raise RequestRejected("prompt exceeds the context")
        return ChatReply(f"{text}:{request.seed}", finish_reason="stop")

    def params(self) -> dict[str, str]:
        return {"backend": "echo"}


def test_complete_hands_every_keyword_to_the_one_hook():
    backend = EchoBackend()
    schema = {"type": "object"}
    reply = backend.complete(
        _user("hi"), temperature=0.5, top_p=0.9, max_tokens=7, seed=3, json_schema=schema
    )
    assert reply == "hi:3" and reply.finish_reason == "stop"
    assert backend.requests == [ChatRequest(_user("hi"), 0.5, 0.9, 7, 3, schema)]
    with pytest.raises(RequestRejected, match="context"):
        backend.complete(_user("long"))


def test_complete_many_keeps_order_seeds_and_returns_rejections():
    backend = EchoBackend()
    replies = backend.complete_many(
        [_user("a"), _user("long"), _user("b")], seeds=[1, 2, 3], max_tokens=5
    )
    assert replies[0] == "a:1" and replies[2] == "b:3"
    assert isinstance(replies[1], RequestRejected)
    assert [r.max_tokens for r in backend.requests] == [5, 5, 5]
    assert backend.complete_many([_user("c")]) == ["c:None"]
    with pytest.raises(ValueError, match="2 seeds for 1 requests"):
        backend.complete_many([_user("a")], seeds=[1, 2])
