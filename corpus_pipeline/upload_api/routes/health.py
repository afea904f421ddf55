"""Liveness and readiness, to anyone: jobs and namespaces are for keys."""

from __future__ import annotations

from fastapi import Request

from corpus_pipeline.access.openapi import probe_router
from corpus_pipeline.upload_api.state import IngestState


def _ready(request: Request) -> bool:
    state: IngestState = request.app.state.ingest
    return state.readiness.ready() and not state.door.broken()


router = probe_router(
    _ready,
    "the job store failed its checks for the last seconds, or a door process died and its "
    "pool awaits replacement (the next upload replaces it).",
    "Ready while the job store answered its last check (a query every second, in a thread of "
    "its own) and the door processes are whole: a probe never waits for the store, however "
    "busy uploads keep it. The job and "
    "document routes are plain functions, run in FastAPI's thread pool, so their SQLite and "
    "object-store calls never stall the loop either.",
)
