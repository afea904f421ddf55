"""The upload API's routes, one module per resource, in the order `create_ingest_app` includes
them."""

from __future__ import annotations

from fastapi import APIRouter

from corpus_pipeline.upload_api.routes import documents, formats, health, jobs, namespaces

ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    documents.router,
    jobs.router,
    namespaces.router,
    formats.router,
)
