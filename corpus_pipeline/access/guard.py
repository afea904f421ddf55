"""The first thing either service does with a request that carries a body: the key, then the
size, before any route reads a byte of it.

FastAPI reads and parses a JSON body before it resolves a route's dependencies, so a key
checked as a dependency comes too late: an anonymous 300 MB body would be read and parsed
before its 401. `RequestGuard` wraps the whole ASGI app instead: for a keyed path it resolves
the key from the headers (401/503 as every route answers them, nothing read), and with a
`max_body` it refuses a declared `Content-Length` over the limit (413) and counts a streamed
body while it buffers it, refusing it the moment it passes the limit (413). The resolved
principal travels in the request's state, so the route's `require_principal` does not resolve
(or log a refusal) twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.responses import JSONResponse

from corpus_pipeline.access.keys import (
    STATE_PRINCIPAL,
    AccessDenied,
    KeyResolver,
    denied_response,
    principal_for_authorization,
)
from corpus_pipeline.contracts.keys import Principal

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

BODILESS = frozenset({"GET", "HEAD", "OPTIONS"})


def keyed_v1(path: str) -> bool:
    """Every versioned route and the MCP endpoint need a key (the health and documentation
    routes do not)."""
    return path.startswith(("/v1/", "/mcp"))


class RequestGuard:
    """Key first, then a bounded body (see the module docstring). `max_body` None leaves the
    body to the route (the upload API streams files with limits of its own)."""

    def __init__(
        self,
        app: ASGIApp,
        resolver: KeyResolver,
        *,
        max_body: int | None,
        keyed: Callable[[str], bool] = keyed_v1,
    ) -> None:
        self.app = app
        self.resolver = resolver
        self.max_body = max_body
        self.keyed = keyed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in BODILESS:
            await self.app(scope, receive, send)
            return
        if self.keyed(scope["path"]):
            try:
                principal = scope_principal(self.resolver, scope)
            except AccessDenied as exc:
                await denied_response(exc)(scope, receive, send)
                return
            scope.setdefault("state", {})[STATE_PRINCIPAL] = principal
        if self.max_body is None:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body:
            await _too_large(declared, self.max_body)(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await _too_large(None, self.max_body)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(bytes(body), receive), send)


def scope_principal(resolver: KeyResolver, scope: Scope, surface: str = "") -> Principal:
    """The principal of an HTTP request as an ASGI scope: the headers every route reads, resolved
    the same way (`surface` names where, e.g. "MCP", in a refusal's log line)."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    return principal_for_authorization(
        resolver,
        headers.get("authorization"),
        headers.get("x-api-key"),
        what=" ".join(filter(None, (surface, scope.get("method", ""), scope.get("path", "")))),
        client=scope["client"][0] if scope.get("client") else None,
    )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


def _too_large(declared: int | None, limit: int) -> JSONResponse:
    what = f"a body of {declared:,} bytes" if declared is not None else "the body"
    return JSONResponse(
        status_code=413,
        content={
            "detail": f"request too large: {what} is above the limit of {limit:,} bytes",
            "field": "body",
        },
    )


def _replay(body: bytes, receive: Receive) -> Receive:
    """The buffered body once, then the client's own messages (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
