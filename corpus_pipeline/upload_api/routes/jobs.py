"""`/v1/jobs`: a job's status, and a failed job queued again."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from corpus_pipeline.access.keys import may_read
from corpus_pipeline.access.openapi import example_response
from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.contracts.jobs import Job
from corpus_pipeline.contracts.keys import Principal
from corpus_pipeline.storage.store import SourceRegistry
from corpus_pipeline.upload_api.deps import PrincipalDep, StateDep, require_writable
from corpus_pipeline.upload_api.errors import JOB, RETRY
from corpus_pipeline.upload_api.examples import DONE, FAILED, QUEUED
from corpus_pipeline.upload_api.state import IngestState

router = APIRouter(tags=["jobs"])


@router.get(
    "/v1/jobs/{job_id}",
    response_model=Job,
    responses={
        **example_response(
            {
                "done": ("Done: its document is in the published revision", DONE),
                "queued": ("Queued: waiting for a worker", QUEUED),
                "error": ("Failed: the reason in words, naming the file", FAILED),
            }
        ),
        **JOB,
    },
)
def job_status(job_id: str, who: PrincipalDep, state: StateDep) -> Job:
    return _readable_job(state, who, job_id)


@router.post(
    "/v1/jobs/{job_id}/retry",
    status_code=202,
    response_model=Job,
    responses={**example_response(QUEUED, status=202), **RETRY},
)
def retry(job_id: str, who: PrincipalDep, state: StateDep) -> Job:
    job = _readable_job(state, who, job_id)
    require_writable(who, job.namespace)
    if job.status != "error":
        raise HTTPException(400, f"job '{job_id}' did not fail (it is {job.status})")
    if job.kind == "document" and not _original_kept(state.registry, job.document_id):
        raise HTTPException(400, f"the original of job '{job_id}' is gone")
    again = state.jobs.requeue(job_id)
    if again is None:
        raise HTTPException(400, f"job '{job_id}' did not fail")
    return again


def _readable_job(state: IngestState, who: Principal, job_id: str) -> Job:
    """The job, or 404 when there is none or its namespace is not the key's to read."""
    job = state.jobs.get(job_id)
    if job is None or not may_read(who, job.namespace):
        raise HTTPException(404, f"no job '{job_id}'")
    return job


def _original_kept(registry: SourceRegistry, document_id: str) -> bool:
    try:
        return registry.store.exists(registry.get(document_id).object_key)
    except CorpusError:
        return False
