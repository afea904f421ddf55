"""A small OpenAI-compatible HTTP server for tests of the real `openai` client.

It answers `POST /v1/chat/completions` with a scripted reply (or an HTTP error) and records
every request body and its headers, so tests can assert on what the client actually sent.

A reply is a callable of the request body returning `(status, json_text)` or a `Response`
(extra headers such as `Retry-After`, or a server-sent-event stream from `stream_completion`).
`openai_server(on_request=...)` passes a `Request` instead, with the headers, so a script can
answer per API key (`request.api_key`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Response:
    status: int
    body: str
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass(frozen=True)
class Request:
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def api_key(self) -> str:
        """The bearer token of the `Authorization` header ('' when absent)."""
        for name, value in self.headers.items():
            if name.lower() == "authorization":
                return value.removeprefix("Bearer ").strip()
        return ""


ReplyResult = tuple[int, str] | Response
Reply = Callable[[dict[str, Any]], ReplyResult]
RequestReply = Callable[[Request], ReplyResult]


@dataclass
class FakeOpenAI:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    @property
    def api_keys(self) -> list[str]:
        """The bearer token of every recorded request, in order."""
        return [Request({}, h).api_key for h in self.headers]


_DEFAULT_USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def completion(
    content: str,
    model: str = "test-model",
    usage: Mapping[str, int] | None = _DEFAULT_USAGE,
) -> str:
    """A chat completion body; `usage=None` leaves the usage field out."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return json.dumps(body)


def stream_completion(pieces: Sequence[str | None], model: str = "test-model") -> Response:
    """An SSE stream: a role-only first delta (content null), one chunk per piece (a `None`
    piece is a delta without content), a final chunk with `finish_reason`, then `[DONE]`."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        data = {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        return f"data: {json.dumps(data)}\n\n"

    events = [chunk({"role": "assistant", "content": None})]
    events += [chunk({"content": piece}) for piece in pieces]
    events.append(chunk({"content": None}, "stop"))
    events.append("data: [DONE]\n\n")
    return Response(200, "".join(events), content_type="text/event-stream")


def error(
    status: int, message: str = "error", headers: Mapping[str, str] | None = None
) -> Response:
    """An OpenAI-style error body with the given status (and headers such as Retry-After)."""
    body = json.dumps({"error": {"message": message, "type": "error", "code": None}})
    return Response(status, body, headers=dict(headers or {}))


@contextmanager
def openai_server(
    reply: Reply | None = None, *, on_request: RequestReply | None = None
) -> Iterator[FakeOpenAI]:
    if (reply is None) == (on_request is None):
        raise ValueError("pass exactly one of reply and on_request")
    state = FakeOpenAI(base_url="")
    lock = threading.Lock()

    def answer(body: dict[str, Any], headers: dict[str, str]) -> Response:
        if reply is not None:
            result = reply(body)
        else:
            assert on_request is not None
            result = on_request(Request(body, headers))
        if isinstance(result, Response):
            return result
        status, payload = result
        return Response(status, payload)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = dict(self.headers)
            with lock:
                state.requests.append(body)
                state.headers.append(headers)
            response = answer(body, headers)
            data = response.body.encode()
            try:
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in response.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
