"""Liveness and readiness, to anyone: jobs and namespaces are for keys."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from corpus_pipeline.access.openapi import example_response, readiness, readiness_responses
from corpus_pipeline.contracts.api import Health
from corpus_pipeline.upload_api.deps import StateDep

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, responses=example_response(Health(status="ok")))
async def healthz() -> Health:
    """Ok or not, to anyone (jobs and namespaces are for keys)."""
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    responses=readiness_responses("the job store failed its checks for the last seconds."),
)
async def readyz(state: StateDep) -> Response:
    """Ready while the job store answered its last check (a query every second, in a
    thread of its own): a probe never waits for the store, however busy uploads keep it.
    The job and document routes are plain functions, run in FastAPI's thread pool, so
    their SQLite and object-store calls never stall the loop either."""
    return readiness(state.readiness.ready())
