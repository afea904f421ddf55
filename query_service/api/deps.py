"""The query API's dependencies, and the one place a presented key becomes a principal for
HTTP and MCP alike: REST routes (`PrincipalDep`), the MCP endpoint over HTTP
(`access.guard.scope_principal`) and MCP over stdio (`key_principal`) all resolve keys through
`corpus_pipeline.access.keys.principal_for_authorization` with the service's resolver."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Path, Query, Request

from corpus_pipeline.access.keys import (
    KeyResolver,
    principal_for_authorization,
    require_principal,
)
from corpus_pipeline.contracts.api import NAMESPACE_PATTERN
from corpus_pipeline.contracts.keys import Principal
from query_service.service import QueryService

T = TypeVar("T")


async def get_service(request: Request) -> QueryService:
    service: QueryService = request.app.state.service
    return service


def key_principal(resolver: KeyResolver, api_key: str | None, what: str) -> Principal:
    """The principal of MCP over stdio: CORPUS_API_KEY, presented as an `X-API-Key` would be
    (resolved on every call, so a revoked key stops working)."""
    return principal_for_authorization(resolver, None, api_key, what=what)


ServiceDep = Annotated[QueryService, Depends(get_service)]
# The request's principal, resolved by the app's resolver (`create_app` installs the service's
# `keys`): 401 or 503 otherwise.
PrincipalDep = Annotated[Principal, Depends(require_principal)]
NamespaceParam = Annotated[str, Query(pattern=NAMESPACE_PATTERN, description="Namespace to read.")]
DocumentIdParam = Annotated[str, Path(min_length=1, max_length=200)]


async def run_blocking(service: QueryService, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in the service's bounded worker pool, never on the event loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(service.executor, functools.partial(fn, *args))
