"""`/v1/cache`: this process's answer cache, for the namespaces a key reads."""

from __future__ import annotations

from fastapi import APIRouter

from corpus_pipeline.contracts.api import CacheStats
from query_service.api.deps import PrincipalDep, ServiceDep
from query_service.api.errors import KEYED
from query_service.api.examples import CACHE_STATS
from query_service.api.responses import answers

router = APIRouter(tags=["health"])


@router.get(
    "/v1/cache", response_model=CacheStats, responses=answers(CACHE_STATS, KEYED, revision=False)
)
async def cache_stats(svc: ServiceDep, principal: PrincipalDep) -> CacheStats:
    return svc.cache_stats(principal)
