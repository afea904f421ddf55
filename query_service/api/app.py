"""The HTTP API (FastAPI) and the MCP endpoint, over one QueryService.

Every route is versioned under /v1, answers with a shared pydantic contract, names its revision
(in the body and the `X-Corpus-Revision` header), and runs blocking work in the service's
bounded worker pool, never on the event loop. The routes are in `routes` (one module per
resource), their dependencies in `deps`, the error answers in `errors`, the examples the
OpenAPI document shows in `examples`; `create_app` assembles them with the key handling and the
MCP endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from corpus_pipeline.access.guard import RequestGuard, scope_principal
from corpus_pipeline.access.keys import STATE_PRINCIPAL, AccessDenied, denied_response, install
from corpus_pipeline.access.openapi import SWAGGER_UI, amend_openapi
from corpus_pipeline.contracts.artifacts import Manifest
from corpus_pipeline.contracts.keys import Principal
from query_service.api.errors import install_error_handlers
from query_service.api.routes import ROUTERS
from query_service.config import ServiceSettings
from query_service.service import QueryService

DESCRIPTION = (
    "Search and read a published corpus; results carry citations. Retrieval returns evidence, "
    "never answers.\n\nEvery `/v1` route needs an API key (`corpus keys create`), sent as "
    "`Authorization: Bearer <key>` or `X-API-Key: <key>`: use **Authorize** to send it from "
    'this page. Refusals answer `{"detail", "field"}`: what is wrong, and the field it '
    "concerns (`authorization` for the key)."
)


def create_app(
    settings: ServiceSettings | None = None, service: QueryService | None = None
) -> FastAPI:
    settings = settings or ServiceSettings()
    service = service or QueryService(settings)
    from query_service.api.mcp_server import build_mcp, transport_security

    mcp = build_mcp(service)
    # Stateless: every MCP request stands alone (our tools need no session state), so any
    # server process of `corpus serve --workers N` can answer any request. Host names outside
    # CORPUS_MCP_ALLOWED_HOSTS are refused (421): DNS rebinding protection.
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/",
        transport_security=transport_security(
            settings.mcp_allowed_hosts, settings.mcp_allowed_origins
        ),
        stateless_http=True,
    )
    app = FastAPI(
        title="corpus query service",
        version="1",
        description=DESCRIPTION,
        lifespan=_lifespan(service, mcp),
        swagger_ui_parameters=SWAGGER_UI,
    )
    app.state.service = service
    install(app, service.keys)
    # The key, then the body's size, before FastAPI reads a byte of a body (`guard`).
    app.add_middleware(
        RequestGuard, resolver=service.keys, max_body=settings.query_max_body_kb * 1024
    )
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/mcp", _mcp_auth(service, mcp_app))
    amend_openapi(app, _by_field_name(Manifest))
    return app


def _by_field_name(*models: type[BaseModel]) -> Callable[[dict[str, Any]], None]:
    """FastAPI documents response models by alias, but the routes answer `model_dump_json()`,
    by field name: the aliased fields of `models` (the manifest's `hierarchy`, `HIERARCHY` on
    disk) are documented by the names the answers carry."""

    def amend(schema: dict[str, Any]) -> None:
        for model in models:
            _rename_aliases(schema["components"]["schemas"][model.__name__], model)

    return amend


def _rename_aliases(schema: dict[str, Any], model: type[BaseModel]) -> None:
    names = {f.alias: name for name, f in model.model_fields.items() if f.alias}
    schema["properties"] = {names.get(k, k): v for k, v in schema["properties"].items()}
    schema["required"] = [names.get(k, k) for k in schema.get("required", [])]


def _lifespan(
    service: QueryService, mcp: MCPServer
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The service's snapshots and statistics start before the first request (off the event
    loop) and stop after the last; the MCP sessions run in between."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_blocking_start(service)
        async with mcp.session_manager.run():
            yield
        service.stop()

    return lifespan


async def run_blocking_start(service: QueryService) -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, service.start)


def _mcp_auth(service: QueryService, inner: Any) -> Any:
    """The MCP endpoint takes the same API keys, resolved the same way, as the REST routes."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            state = scope.setdefault("state", {})
            if not isinstance(state.get(STATE_PRINCIPAL), Principal):  # the guard's, if it ran
                try:
                    state[STATE_PRINCIPAL] = scope_principal(service.keys, scope, "MCP")
                except AccessDenied as exc:
                    await denied_response(exc)(scope, receive, send)
                    return
        await inner(scope, receive, send)

    return app
