"""`/v1/documents`: an upload (new documents, or one replaced) queued as jobs, and a document's
removal queued."""

from __future__ import annotations

import asyncio
import functools

from fastapi import APIRouter, HTTPException, Request

from corpus_pipeline.access.keys import may_read, may_write_somewhere
from corpus_pipeline.access.openapi import example_response
from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.contracts.jobs import Job, UploadResponse, upload_form_schema
from corpus_pipeline.intake.door import Refused
from corpus_pipeline.intake.uploads import receive_form
from corpus_pipeline.upload_api.admission import accept, upload_fields
from corpus_pipeline.upload_api.deps import PrincipalDep, StateDep, require_writable
from corpus_pipeline.upload_api.errors import DELETE, UPLOAD
from corpus_pipeline.upload_api.examples import REMOVAL, UPLOAD_FORMS, UPLOADED
from corpus_pipeline.upload_api.scratch import scratch_folder

router = APIRouter(tags=["documents"])


@router.post(
    "/v1/documents",
    status_code=202,
    response_model=UploadResponse,
    responses={**example_response(UPLOADED, status=202), **UPLOAD},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {"schema": upload_form_schema(), "examples": UPLOAD_FORMS}
            },
        }
    },
)
async def upload(request: Request, who: PrincipalDep, state: StateDep) -> UploadResponse:
    """Store the files of a multipart form and queue one job per document.

    The key is checked from the headers before a byte of the body is read; the body is then
    read as a stream, its files written to a scratch folder, each limit enforced while
    reading (413 at the limit, for Content-Length and chunked requests alike). The door
    checks, archive expansion and storing run in the upload pool, off this loop; the
    scratch folder is removed whatever the outcome."""
    if not may_write_somewhere(who):  # a refusal is logged
        raise HTTPException(403, "this key may not write to any namespace")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > state.limits.request_bytes:
        raise Refused(
            413, f"request of {int(length):,} bytes is above {state.settings.max_request_mb} MiB"
        )
    with state.gate.slot(who.name):
        async with scratch_folder(state.scratch_root) as scratch:
            form = await receive_form(
                request.headers.get("content-type"), request.stream(), state.limits, scratch
            )
            fields = upload_fields(form.fields)
            require_writable(who, fields.namespace)
            if not form.files:
                raise Refused(400, "no files: send one or more 'files' parts")
            admit = functools.partial(accept, state, form, fields, who, scratch)
            return await asyncio.get_running_loop().run_in_executor(state.upload_pool, admit)


@router.delete(
    "/v1/documents/{document_id}",
    status_code=202,
    response_model=Job,
    responses={**example_response(REMOVAL, status=202), **DELETE},
)
def delete(document_id: str, who: PrincipalDep, state: StateDep) -> Job:
    """Queue the removal: the record, the artifacts, then a revision without it."""
    try:
        record = state.registry.get(document_id)
    except CorpusError:
        raise HTTPException(404, f"no document '{document_id}'") from None
    if not may_read(who, record.namespace):
        raise HTTPException(404, f"no document '{document_id}'")
    require_writable(who, record.namespace)
    return state.jobs.create(
        document_id, record.namespace, record.source_file_name, "delete", principal=who.name
    )
