"""Liveness and readiness, to anyone: namespaces and revisions are for keys."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from corpus_pipeline.access.openapi import example_response, readiness, readiness_responses
from corpus_pipeline.contracts.api import Health
from query_service.api.deps import ServiceDep

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, responses=example_response(Health(status="ok")))
async def healthz() -> Health:
    """Ok or not, to anyone: namespaces and revisions are for keys (`/v1/namespaces`)."""
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    responses=readiness_responses("the published revisions are still loading."),
)
async def readyz(svc: ServiceDep) -> Response:
    return readiness(svc.snapshots.ready)
