"""A real OpenAI-compatible server on 127.0.0.1 for tests: POST /v1/chat/completions and, when
given an ``embed`` function, POST /v1/embeddings (:class:`LocalChatServer`).

``embed(texts) -> list of vectors`` plays the embedding model: the server answers an
``embedding`` list object, one ``{"index", "embedding"}`` entry per input, in order.

Each test gives it an ``answer(path, body) -> (status, content)`` function; the server wraps
``content`` in a chat.completion (status 200) or an error object (other statuses).

``response_format`` (structured output) is handled like real servers do:

- ``"accept"`` (vLLM, TGI, OpenAI): a ``json_schema`` response format is checked for the shape
  OpenAI requires (``name`` matching ``[A-Za-z0-9_-]{1,64}``, a ``schema`` object), a malformed
  one is answered HTTP 400, a well-formed one reaches ``answer`` inside ``body`` (the answer
  function plays the constrained model and should then reply with JSON);
- ``"refuse"`` (servers without structured output): any request carrying ``response_format`` is
  answered HTTP 400 ``response_format is not supported``, before ``answer`` is called.

Every request body is kept in ``requests`` (in arrival order).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, dict[str, Any]], tuple[int, str]]
Embed = Callable[[list[str]], list[list[float]]]

RESPONSE_FORMAT_MODES = ("accept", "refuse")


def check_response_format(value: Any) -> str | None:
    """Why a ``response_format`` request field is malformed (``None`` when it is fine)."""
    if not isinstance(value, dict) or value.get("type") not in ("json_schema", "json_object"):
        return "response_format.type must be 'json_schema' or 'json_object'"
    if value["type"] == "json_object":
        return None
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        return "response_format.json_schema must be an object"
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", str(spec.get("name", ""))):
        return "response_format.json_schema.name must match [A-Za-z0-9_-]{1,64}"
    if not isinstance(spec.get("schema"), dict):
        return "response_format.json_schema.schema must be an object"
    return None


class LocalChatServer:
    """Threaded HTTP server; use as a context manager, its ``url`` ends in ``/v1``."""

    def __init__(
        self,
        answer: Answer | None = None,
        response_format: str = "accept",
        embed: Embed | None = None,
    ) -> None:
        if response_format not in RESPONSE_FORMAT_MODES:
            raise ValueError(f"response_format must be one of {RESPONSE_FORMAT_MODES}")
        self.answer = answer
        self.embed = embed
        self.response_format = response_format
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.endswith("/embeddings") and owner.embed is not None:
                    with owner._lock:
                        owner.requests.append(body)
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    vectors = owner.embed([str(t) for t in texts])
                    self._send(
                        200,
                        {
                            "object": "list",
                            "model": body.get("model", ""),
                            "data": [
                                {"object": "embedding", "index": i, "embedding": list(v)}
                                for i, v in enumerate(vectors)
                            ],
                            "usage": {"prompt_tokens": 1, "total_tokens": 1},
                        },
                    )
                    return
                if owner.answer is None:
                    self._send(404, {"error": {"message": "no chat model", "type": "not_found"}})
                    return
                status, content = owner.respond(self.path, body)
                payload = (
                    {
                        "id": "cmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", ""),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                    if status == 200
                    else {"error": {"message": content, "type": "invalid_request_error"}}
                )
                self._send(status, payload)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def respond(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        """Status and content for one request (response_format policy, then ``answer``)."""
        with self._lock:
            self.requests.append(body)
        if "response_format" in body:
            if self.response_format == "refuse":
                return 400, "response_format is not supported by this server"
            problem = check_response_format(body["response_format"])
            if problem:
                return 400, problem
        assert self.answer is not None
        return self.answer(path, body)

    def __enter__(self) -> LocalChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def sentence_transformer_embed(model_folder: str) -> Embed:
    """An ``embed`` answer that serves a local SentenceTransformer (the same model a test also
    loads locally, so served and local scores can be compared)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_folder, device="cpu")
    return lambda texts: model.encode(texts, batch_size=4).tolist()
