"""The HTTP API (FastAPI) and the MCP endpoint, over one QueryService.

Every route is versioned under /v1, answers with a shared pydantic contract, names its revision
(in the body and the `X-Corpus-Revision` header), and runs blocking work in the service's
bounded worker pool, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Discriminator, Tag

from corpus_pipeline.access.keys import AccessDenied, denied_response, install, require_principal
from corpus_pipeline.contracts.agentic import AgenticRequest, AgenticResponse
from corpus_pipeline.contracts.api import (
    NAMESPACE_PATTERN,
    CacheStats,
    DocumentDetail,
    DocumentList,
    ErrorBody,
    FilterValues,
    Health,
    Namespaces,
    Neighbors,
    Outline,
    ReadRequest,
    ReadResponse,
)
from corpus_pipeline.contracts.keys import Principal, api_key_from
from corpus_pipeline.contracts.search import SearchRequest, SearchResponse
from query_service.config import ServiceSettings
from query_service.retrieval.agentic import BudgetTooSmall
from query_service.service import QueryService
from query_service.snapshot.revision import NamespaceNotFound
from query_service.snapshot.store import DocumentNotFound, ResourceNotFound

log = logging.getLogger("corpus.query_service")
T = TypeVar("T")


def _mode(value: Any) -> str:
    mode = (
        value.get("mode", "classic")
        if isinstance(value, dict)
        else getattr(value, "mode", "classic")
    )
    return mode if mode in ("classic", "agentic") else "classic"


SearchBody = Annotated[
    Annotated[SearchRequest, Tag("classic")] | Annotated[AgenticRequest, Tag("agentic")],
    Discriminator(_mode),
]
NamespaceParam = Annotated[str, Query(pattern=NAMESPACE_PATTERN, description="Namespace to read.")]
DocumentIdParam = Annotated[str, Path(min_length=1, max_length=200)]
_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody},
    404: {"model": ErrorBody},
    422: {"model": ErrorBody},
    503: {"model": ErrorBody, "description": "No usable key file (names it and the fix)."},
}


async def get_service(request: Request) -> QueryService:
    service: QueryService = request.app.state.service
    return service


ServiceDep = Annotated[QueryService, Depends(get_service)]
PrincipalDep = Annotated[Principal, Depends(require_principal)]


async def run_blocking(service: QueryService, fn: Callable[..., T], *args: Any) -> T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(service.executor, functools.partial(fn, *args))


def _require_unicode(request: BaseModel) -> None:
    """A JSON escape such as "\\ud800" puts a lone surrogate into a str field that has no length
    or pattern constraint (pydantic only checks those); nothing downstream can encode it, so
    it is refused here as a 422 naming the field, like the constrained fields already are."""

    def find(value: Any, loc: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return loc
            return None
        if isinstance(value, dict | list):
            for key, child in value.items() if isinstance(value, dict) else enumerate(value):
                found = find(child, (*loc, key))
                if found is not None:
                    return found
        return None

    loc = find(request.model_dump(), ())
    if loc is not None:
        raise RequestValidationError(
            [
                {
                    "type": "string_unicode",
                    "loc": ("body", *loc),
                    "msg": "Input should be a valid string, unable to parse raw data as a unicode string",
                }
            ]
        )


def _json(model: BaseModel, revision: int) -> Response:
    return Response(
        content=model.model_dump_json(),
        media_type="application/json",
        headers={"X-Corpus-Revision": str(revision)},
    )


def create_app(
    settings: ServiceSettings | None = None, service: QueryService | None = None
) -> FastAPI:
    settings = settings or ServiceSettings()
    service = service or QueryService(settings)
    from query_service.api.mcp_server import build_mcp

    mcp = build_mcp(service)
    # Stateless: every MCP request stands alone (our tools need no session state), so any
    # server process of `corpus serve --workers N` can answer any request.
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/", transport_security=None, stateless_http=True
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_blocking_start(service)
        async with mcp.session_manager.run():
            yield
        service.stop()

    app = FastAPI(
        title="corpus query service",
        version="1",
        description="Search and read a published corpus; results carry citations. Retrieval returns evidence, never answers.",
        lifespan=lifespan,
    )
    app.state.service = service
    install(app, service.keys)

    @app.exception_handler(NamespaceNotFound)
    async def _no_namespace(_: Request, exc: NamespaceNotFound) -> JSONResponse:
        return JSONResponse(status_code=404, content={"detail": str(exc), "field": "namespace"})

    @app.exception_handler(BudgetTooSmall)
    async def _budget(_: Request, exc: BudgetTooSmall) -> JSONResponse:
        return JSONResponse(
            status_code=422, content={"detail": f"token_budget: {exc}", "field": "token_budget"}
        )

    @app.exception_handler(DocumentNotFound)
    async def _no_document(_: Request, exc: DocumentNotFound) -> JSONResponse:
        return JSONResponse(status_code=404, content={"detail": str(exc), "field": "document_id"})

    @app.exception_handler(ResourceNotFound)
    async def _no_resource(_: Request, exc: ResourceNotFound) -> JSONResponse:
        return JSONResponse(status_code=404, content={"detail": str(exc), "field": "ref"})

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        if first.get("type") == "json_invalid":
            return JSONResponse(
                status_code=422, content={"detail": "body: malformed JSON", "field": "body"}
            )
        loc = [str(p) for p in first.get("loc", ())]
        if loc and loc[0] in ("body", "query", "path", "header"):
            loc = loc[1:]  # the location (body, query string, ...), not the field
        if loc and loc[0] in ("classic", "agentic"):
            loc = loc[1:]  # the search mode's union tag, not the field
        field = ".".join(loc) or None
        message = str(first.get("msg", "invalid request"))
        return JSONResponse(
            status_code=422,
            content={"detail": f"{field}: {message}" if field else message, "field": field},
        )

    @app.get("/healthz", response_model=Health, tags=["health"])
    async def healthz() -> Health:
        """Ok or not, to anyone: namespaces and revisions are for keys (`/v1/namespaces`)."""
        return Health(status="ok")

    @app.get("/readyz", response_model=Health, tags=["health"], responses={503: {"model": Health}})
    async def readyz() -> Response:
        status = "ok" if service.snapshots.ready else "loading"
        body = Health(status=status).model_dump_json()
        return Response(
            body, status_code=200 if service.snapshots.ready else 503, media_type="application/json"
        )

    @app.post(
        "/v1/search",
        response_model=SearchResponse | AgenticResponse,
        responses=_ERRORS,
        tags=["search"],
    )
    async def search(request: SearchBody, svc: ServiceDep, principal: PrincipalDep) -> Response:
        _require_unicode(request)
        body, revision = await run_blocking(svc, svc.search_with_revision, principal, request)
        return Response(
            content=body,
            media_type="application/json",
            headers={"X-Corpus-Revision": str(revision)},
        )

    @app.post("/v1/read", response_model=ReadResponse, responses=_ERRORS, tags=["read"])
    async def read(request: ReadRequest, svc: ServiceDep, principal: PrincipalDep) -> Response:
        _require_unicode(request)
        response = await run_blocking(svc, svc.read, principal, request)
        return _json(response, response.revision)

    @app.get("/v1/documents", response_model=DocumentList, responses=_ERRORS, tags=["documents"])
    async def documents(
        svc: ServiceDep,
        principal: PrincipalDep,
        namespace: NamespaceParam = "default",
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> Response:
        response = await run_blocking(svc, svc.documents, principal, namespace, offset, limit)
        return _json(response, response.revision)

    @app.get(
        "/v1/documents/{document_id}",
        response_model=DocumentDetail,
        responses=_ERRORS,
        tags=["documents"],
    )
    async def document(
        document_id: DocumentIdParam,
        svc: ServiceDep,
        principal: PrincipalDep,
        namespace: NamespaceParam = "default",
    ) -> Response:
        response = await run_blocking(svc, svc.document, principal, namespace, document_id)
        return _json(response, response.revision)

    @app.get(
        "/v1/documents/{document_id}/outline",
        response_model=Outline,
        responses=_ERRORS,
        tags=["documents"],
    )
    async def outline(
        document_id: DocumentIdParam,
        svc: ServiceDep,
        principal: PrincipalDep,
        namespace: NamespaceParam = "default",
    ) -> Response:
        response = await run_blocking(svc, svc.outline, principal, namespace, document_id)
        return _json(response, response.revision)

    @app.get(
        "/v1/documents/{document_id}/neighbors",
        response_model=Neighbors,
        responses=_ERRORS,
        tags=["documents"],
    )
    async def neighbors(
        document_id: DocumentIdParam,
        svc: ServiceDep,
        principal: PrincipalDep,
        namespace: NamespaceParam = "default",
    ) -> Response:
        response = await run_blocking(svc, svc.neighbors, principal, namespace, document_id)
        return _json(response, response.revision)

    @app.get(
        "/v1/documents/{document_id}/resources/{ref:path}",
        response_class=Response,
        responses={
            200: {
                "description": "The stored file: image/png, image/jpeg, … or table HTML.",
                "content": {"image/png": {}, "image/jpeg": {}, "text/html": {}},
            },
            **_ERRORS,
        },
        tags=["documents"],
    )
    async def resource(
        document_id: DocumentIdParam,
        ref: Annotated[str, Path(description="Relative ref, e.g. images/<phash>.png.")],
        svc: ServiceDep,
        principal: PrincipalDep,
        namespace: NamespaceParam = "default",
    ) -> Response:
        """A table or image of a document, by the relative ref its results name (`url`)."""
        found = await run_blocking(svc, svc.resource, principal, namespace, document_id, ref)
        return Response(
            content=found.data,
            media_type=found.media_type,
            headers={
                "X-Corpus-Revision": str(found.revision),
                "ETag": f'"{found.sha256}"',
                # Document content: never sniffed or run as active content of this origin.
                "X-Content-Type-Options": "nosniff",
                "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
            },
        )

    @app.get("/v1/namespaces", response_model=Namespaces, responses=_ERRORS, tags=["namespaces"])
    async def namespaces(svc: ServiceDep, principal: PrincipalDep) -> Namespaces:
        return svc.namespaces(principal)

    @app.get(
        "/v1/namespaces/{namespace}/filter-values",
        response_model=FilterValues,
        responses=_ERRORS,
        tags=["namespaces"],
    )
    async def filter_values(
        namespace: Annotated[str, Path(pattern=NAMESPACE_PATTERN)],
        svc: ServiceDep,
        principal: PrincipalDep,
    ) -> Response:
        response = await run_blocking(svc, svc.filter_values, principal, namespace)
        return _json(response, response.revision)

    @app.get("/v1/cache", response_model=CacheStats, responses=_ERRORS, tags=["health"])
    async def cache_stats(svc: ServiceDep, principal: PrincipalDep) -> CacheStats:
        return svc.cache_stats(principal)

    app.mount("/mcp", _mcp_auth(service, mcp_app))
    return app


async def run_blocking_start(service: QueryService) -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, service.start)


def _mcp_auth(service: QueryService, inner: Any) -> Any:
    """The MCP endpoint takes the same API keys, resolved the same way, as the REST routes."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
            key = api_key_from(headers.get("authorization"), headers.get("x-api-key"))
            try:
                what = f"MCP {scope.get('method', '')} {scope.get('path', '')}"
                client = scope["client"][0] if scope.get("client") else None
                principal = service.keys.principal(key, what, client)
            except AccessDenied as exc:
                await denied_response(exc)(scope, receive, send)
                return
            scope.setdefault("state", {})["principal"] = principal
        await inner(scope, receive, send)

    return app
