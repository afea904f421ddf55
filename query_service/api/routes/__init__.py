"""The query API's routes, one module per resource, in the order `create_app` includes them."""

from __future__ import annotations

from fastapi import APIRouter

from query_service.api.routes import (
    admin,
    documents,
    formats,
    health,
    namespaces,
    read,
    search,
)

ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    search.router,
    read.router,
    documents.router,
    namespaces.router,
    formats.router,
    admin.router,
)
