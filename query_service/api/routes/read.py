"""`POST /v1/read`: several refs (chunks, sections, documents) at once, each with its status."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from corpus_pipeline.contracts.api import ReadRequest, ReadResponse
from query_service.api.deps import PrincipalDep, ServiceDep, run_blocking
from query_service.api.errors import ERRORS, require_unicode
from query_service.api.responses import revision_json

router = APIRouter(tags=["read"])


@router.post("/v1/read", response_model=ReadResponse, responses=ERRORS)
async def read(request: ReadRequest, svc: ServiceDep, principal: PrincipalDep) -> Response:
    require_unicode(request)
    response = await run_blocking(svc, svc.read, principal, request)
    return revision_json(response, response.revision)
