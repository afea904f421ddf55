"""Liveness and readiness, to anyone: namespaces and revisions are for keys."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from corpus_pipeline.contracts.api import Health
from query_service.api.deps import ServiceDep

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """Ok or not, to anyone: namespaces and revisions are for keys (`/v1/namespaces`)."""
    return Health(status="ok")


@router.get("/readyz", response_model=Health, responses={503: {"model": Health}})
async def readyz(svc: ServiceDep) -> Response:
    status = "ok" if svc.snapshots.ready else "loading"
    body = Health(status=status).model_dump_json()
    return Response(
        body, status_code=200 if svc.snapshots.ready else 503, media_type="application/json"
    )
