"""`POST /v1/read`: several refs (chunks, sections, documents) at once, each with its status."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body
from fastapi.responses import Response

from corpus_pipeline.access.openapi import request_examples
from corpus_pipeline.contracts.api import ReadRequest, ReadResponse
from query_service.api.deps import PrincipalDep, ServiceDep, run_blocking
from query_service.api.errors import READ, require_unicode
from query_service.api.examples import READ_REQUEST, READ_RESPONSE
from query_service.api.responses import answers, revision_json

router = APIRouter(tags=["read"])


ReadBody = Annotated[
    ReadRequest,
    Body(
        openapi_examples=request_examples(
            refs=("A chunk, a section by id and a section by its path", READ_REQUEST)
        )
    ),
]


@router.post("/v1/read", response_model=ReadResponse, responses=answers(READ_RESPONSE, READ))
async def read(request: ReadBody, svc: ServiceDep, principal: PrincipalDep) -> Response:
    require_unicode(request)
    response = await run_blocking(svc, svc.read, principal, request)
    return revision_json(response, response.revision)
