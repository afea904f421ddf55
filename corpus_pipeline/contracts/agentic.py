"""Agentic retrieval contracts: the plan DAG, the request, cited results and the budget."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from corpus_pipeline.contracts.artifacts import ChunkType
from corpus_pipeline.contracts.base import Contract
from corpus_pipeline.contracts.search import (
    ChunkTypes,
    CitedChunk,
    Location,
    QueryText,
    Resource,
    SearchFilters,
)

MAX_PLAN_STEPS = 8


class PlanStep(Contract):
    """One retrieval step. There is deliberately no 'answer' step type: retrieval only."""

    id: str = Field(pattern=r"^[a-z0-9_-]{1,32}$")
    query: str = Field(min_length=1, max_length=4096)
    depends_on: list[str] = Field(default_factory=list, max_length=MAX_PLAN_STEPS)
    top_k: int = Field(default=10, ge=1, le=50)
    chunk_types: list[ChunkType] = Field(default_factory=lambda: list(ChunkType), min_length=1)


class Plan(Contract):
    steps: list[PlanStep] = Field(min_length=1, max_length=MAX_PLAN_STEPS)
    planner: str = Field(description="rule, llm, or rule (fallback: …)")


class AgenticRequest(Contract):
    mode: Literal["agentic"]
    query: QueryText
    namespace: str = Field(default="default", pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    token_budget: int = Field(
        default=8000, ge=512, le=200_000, description="Hard cap on the response, in o200k tokens."
    )
    top_k: int = Field(
        default=10, ge=1, le=100, description="Results to list (evidence may cover fewer)."
    )
    chunk_types: ChunkTypes = Field(default_factory=lambda: list(ChunkType))
    exclude_document_ids: list[str] = Field(default_factory=list, max_length=1000)
    exclude_section_paths: list[list[str]] = Field(default_factory=list, max_length=1000)
    filters: SearchFilters = Field(default_factory=SearchFilters)
    max_depth: int = Field(
        default=2, ge=0, le=5, description="Section-tree hops from discovered sections."
    )
    max_breadth: int = Field(default=4, ge=1, le=20, description="Sections opened per step.")


class AgenticResult(CitedChunk):
    agent_score: float = Field(
        description=(
            "Reading priority: a discovery hit 2 + 1/(rank + 1) (the whole question's hits rank "
            "first), context that navigation opened its section's score (below 2), 0 = not "
            "opened (fallback)."
        )
    )
    discovery_score: float = Field(
        description="Fused classic-search score (0 = reached by navigation only)."
    )
    step_id: str
    occurrences: list[Location] = Field(default_factory=list)
    resource: Resource | None = None


class StepReport(Contract):
    id: str
    query: str
    depends_on: list[str]
    status: Literal["done", "skipped", "failed"]
    tokens: int
    discovered: int
    sections_opened: int
    error: str | None = None


class BudgetReport(Contract):
    limit: int
    used: int = Field(description="Tokens of this whole serialized response plus model calls.")
    per_step: dict[str, int]
    model_tokens: int
    truncated: bool
    evidence_tokens_available: int = Field(
        description="Tokens of all evidence found, before the budget cut."
    )


class AgenticResponse(Contract):
    query: str
    namespace: str
    revision: int
    mode: Literal["agentic"] = "agentic"
    evidence_text: str
    answer_text: Literal[""] = Field(
        default="", description="Always empty: retrieval returns evidence only."
    )
    results: list[AgenticResult]
    fallback_results: list[AgenticResult] = Field(
        description=(
            "Discovery hits not read as evidence (the budget could not hold them), best first; "
            "their content is a preview (up to 400 characters), `read` returns the whole chunk."
        )
    )
    plan: list[StepReport]
    planner: str
    budget: BudgetReport
    stop_reason: Literal["completed", "budget_exhausted"]
    took_ms: float
