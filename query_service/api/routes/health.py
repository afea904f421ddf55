"""Liveness and readiness, to anyone: namespaces and revisions are for keys."""

from __future__ import annotations

from fastapi import Request

from corpus_pipeline.access.openapi import probe_router
from query_service.service import QueryService


def _ready(request: Request) -> bool:
    service: QueryService = request.app.state.service
    return service.snapshots.ready


router = probe_router(
    _ready,
    "the published revisions are still loading.",
    "Ready once the published revisions of every namespace are loaded.",
)
