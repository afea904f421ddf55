"""`POST /v1/search`: classic or agentic, by the body's `mode`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from fastapi.responses import Response
from pydantic import Discriminator, Tag

from corpus_pipeline.access.openapi import request_examples
from corpus_pipeline.contracts.agentic import AgenticRequest, AgenticResponse
from corpus_pipeline.contracts.search import SearchRequest, SearchResponse
from query_service.api.deps import PrincipalDep, ServiceDep, run_blocking
from query_service.api.errors import SEARCHED, require_unicode
from query_service.api.examples import (
    AGENTIC_REQUEST,
    AGENTIC_RESPONSE,
    CLASSIC_REQUEST,
    FILTERED_REQUEST,
    SEARCH_RESPONSE,
)
from query_service.api.responses import answers

router = APIRouter(tags=["search"])


def _mode(value: Any) -> str:
    mode = (
        value.get("mode", "classic")
        if isinstance(value, dict)
        else getattr(value, "mode", "classic")
    )
    return mode if mode in ("classic", "agentic") else "classic"


SearchBody = Annotated[
    Annotated[SearchRequest, Tag("classic")] | Annotated[AgenticRequest, Tag("agentic")],
    Discriminator(_mode),
    Body(
        openapi_examples=request_examples(
            classic=("Classic: fused search, best results first", CLASSIC_REQUEST),
            filtered=("Classic, tables only, filtered", FILTERED_REQUEST),
            agentic=("Agentic: cited evidence under a token budget", AGENTIC_REQUEST),
        )
    ),
]


@router.post(
    "/v1/search",
    response_model=SearchResponse | AgenticResponse,
    responses=answers(
        {
            "classic": ("Classic search (`mode` classic)", SEARCH_RESPONSE),
            "agentic": ("Agentic search (`mode` agentic)", AGENTIC_RESPONSE),
        },
        SEARCHED,
    ),
)
async def search(request: SearchBody, svc: ServiceDep, principal: PrincipalDep) -> Response:
    require_unicode(request)
    body, revision = await run_blocking(svc, svc.search_with_revision, principal, request)
    return Response(
        content=body,
        media_type="application/json",
        headers={"X-Corpus-Revision": str(revision)},
    )
