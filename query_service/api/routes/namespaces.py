"""`/v1/namespaces`: the namespaces a key reads, and the values a namespace's filters take."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import Response

from corpus_pipeline.contracts.api import NAMESPACE_PATTERN, FilterValues, Namespaces
from query_service.api.deps import PrincipalDep, ServiceDep, run_blocking
from query_service.api.errors import KEYED, NAMESPACED
from query_service.api.examples import FILTER_VALUES, NAMESPACES
from query_service.api.responses import answers, revision_json

router = APIRouter(tags=["namespaces"])


@router.get(
    "/v1/namespaces",
    response_model=Namespaces,
    responses=answers(NAMESPACES, KEYED, revision=False),
)
async def namespaces(svc: ServiceDep, principal: PrincipalDep) -> Namespaces:
    return svc.namespaces(principal)


@router.get(
    "/v1/namespaces/{namespace}/filter-values",
    response_model=FilterValues,
    responses=answers(FILTER_VALUES, NAMESPACED),
)
async def filter_values(
    namespace: Annotated[str, Path(pattern=NAMESPACE_PATTERN)],
    svc: ServiceDep,
    principal: PrincipalDep,
) -> Response:
    response = await run_blocking(svc, svc.filter_values, principal, namespace)
    return revision_json(response, response.revision)
