"""Agentic retrieval contracts: the plan DAG, the request, cited results and the budget."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from corpus_pipeline.contracts.artifacts import ChunkType
from corpus_pipeline.contracts.base import Contract, SectionId
from corpus_pipeline.contracts.search import (
    ChunkTypes,
    DocumentIds,
    QueryText,
    SearchFilters,
    SectionPaths,
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
    exclude_document_ids: DocumentIds = Field(default_factory=list)
    exclude_section_paths: SectionPaths = Field(default_factory=list)
    filters: SearchFilters = Field(default_factory=SearchFilters)
    max_depth: int = Field(
        default=2, ge=0, le=5, description="Section-tree hops from discovered sections."
    )
    max_breadth: int = Field(default=4, ge=1, le=20, description="Sections opened per step.")


class Citation(Contract):
    """One passage of `evidence_text` and what to cite it by. Its text travels once, in
    `evidence_text` (at `span`); a citation carries only what an agent acts on."""

    chunk_id: str = Field(
        description="The chunk the passage was found by (`read` takes it; the passage may read "
        "chunks before and after it, `more_chunks`)."
    )
    document_id: str
    source_file_name: str
    section_path: list[str]
    section_id: SectionId = Field(default=None, exclude_if=lambda v: v is None)
    pages: list[int] = Field(description="1-based pages the passage's text is printed on.")
    score: float = Field(
        description="Fused discovery score of the chunk (0: context the passage reads on with)."
    )
    span: tuple[int, int] = Field(
        description="[start, end) of the passage's text in `evidence_text`, in Unicode code "
        "points (the `[n]` heading line above it is not part of it)."
    )
    more_chunks: list[str] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="The other chunks the passage reads (before and after `chunk_id`), in "
        "document order; omitted when none.",
    )
    cut: bool = Field(
        default=False,
        exclude_if=lambda v: not v,
        description="True when the budget held only the start of the passage's last chunk; "
        "`read` returns it whole (omitted when false).",
    )
    resource: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="Download path of the table or image the passage is "
        "(`/v1/documents/{document_id}/resources/{ref}?namespace=…`; omitted for text).",
    )


class StepReport(Contract):
    id: str
    query: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The step's query; omitted for the step that searches the whole question.",
    )
    depends_on: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    status: Literal["done", "skipped", "failed"]
    tokens: int = Field(description="Tokens of evidence text this step's passages hold.")
    discovered: int
    error: str | None = Field(default=None, exclude_if=lambda v: v is None)


class BudgetReport(Contract):
    limit: int
    used: int = Field(description="Tokens of this whole serialized response plus model calls.")
    model_tokens: int = Field(description="Tokens the planner and navigator models used.")
    evidence_tokens_available: int = Field(
        description="Tokens of all evidence found, before the budget cut."
    )
    unread: int = Field(
        description="Discovery hits the evidence does not hold (a larger budget, or classic "
        "search with `read`, returns them)."
    )


class EvidenceResponse(Contract):
    """Cited evidence as an agent reads it: `evidence_text` renders the passages, each under a
    `[n]` heading line, and `results[n-1]` cites passage n. Each chunk's text travels once."""

    query: str
    namespace: str
    revision: int
    mode: Literal["classic", "agentic"]
    evidence_text: str
    answer_text: Literal[""] = Field(
        default="", description="Always empty: retrieval returns evidence only."
    )
    results: list[Citation] = Field(description="One per passage, in the order they are read.")

    def passages(self) -> list[tuple[Citation, str]]:
        """Each citation with its passage's text (its span of `evidence_text`)."""
        return [(c, self.evidence_text[c.span[0] : c.span[1]]) for c in self.results]


class AgenticResponse(EvidenceResponse):
    mode: Literal["agentic"] = "agentic"
    plan: list[StepReport]
    planner: str
    budget: BudgetReport
    stop_reason: Literal["completed", "budget_exhausted"] = Field(
        description="`budget_exhausted`: evidence found was left out or cut to stay within the "
        "budget (its size, or the share of it citations may take); `completed`: nothing was."
    )
    took_ms: float
