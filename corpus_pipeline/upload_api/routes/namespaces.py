"""`/v1/namespaces/{namespace}/ingestion`: whether a namespace's jobs are all done."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from corpus_pipeline.access.keys import may_read
from corpus_pipeline.access.openapi import example_response
from corpus_pipeline.contracts.jobs import IngestionStatus
from corpus_pipeline.upload_api.deps import PrincipalDep, StateDep
from corpus_pipeline.upload_api.errors import INGESTION
from corpus_pipeline.upload_api.examples import INGESTING

router = APIRouter(tags=["namespaces"])


@router.get(
    "/v1/namespaces/{namespace}/ingestion",
    response_model=IngestionStatus,
    responses={**example_response(INGESTING), **INGESTION},
)
def ingestion(namespace: str, who: PrincipalDep, state: StateDep) -> IngestionStatus:
    if not may_read(who, namespace):
        raise HTTPException(404, f"namespace '{namespace}' does not exist")
    counts = state.jobs.counts(namespace)
    busy = counts.get("queued", 0) + counts.get("processing", 0)
    return IngestionStatus(
        namespace=namespace, state="indexing" if busy else "complete", counts=counts
    )
