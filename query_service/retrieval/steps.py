"""One agentic step: discovery (classic fused search, the step's hits in rank order; for the
whole question, again within the document of its best hit), then navigation of the section tree
around the hits (`navigation`), whose opened sections give the context the evidence may read
besides the hits. Every chunk comes back as a `Piece`: its compact
text, where it is and how it was found."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.agentic import AgenticRequest, PlanStep
from corpus_pipeline.contracts.search import SearchRequest, SearchResult
from query_service.retrieval.budget import TokenBudget
from query_service.retrieval.classic import classic_search
from query_service.retrieval.evidence import Piece, piece_of, result_piece
from query_service.retrieval.navigation import (
    Navigator,
    choose_sections,
    coverage,
    navigate,
    score_sections,
    step_terms,
)
from query_service.snapshot.revision import Revision
from query_service.snapshot.sections import SectionCache

# The fields of an agentic request that bound every step's discovery alike (where it searches,
# what it leaves out); a step sets only its own query, depth and chunk types.
_SCOPE = {"namespace", "exclude_document_ids", "exclude_section_paths", "filters"}


@dataclass
class StepOutcome:
    step: PlanStep
    hits: list[Piece] = field(default_factory=list)  # discovery order
    within: list[Piece] = field(default_factory=list)  # its query within its best document
    context: list[Piece] = field(default_factory=list)  # best first
    error: str | None = None
    latency_ms: float = 0.0


def allowed_types(request: AgenticRequest, step: PlanStep) -> set[ChunkType]:
    return set(step.chunk_types) & set(request.chunk_types) or set(request.chunk_types)


def run_step(
    revision: Revision,
    docs: SectionCache,
    request: AgenticRequest,
    step: PlanStep,
    depth: int,
    navigator: Navigator | None = None,
    budget: TokenBudget | None = None,
    deepen: bool = False,
) -> StepOutcome:
    """Discovery `depth` deep (`deepen`: and again within the document of its best hit), then
    the context of the sections navigation opens."""
    started = time.perf_counter()
    allowed = allowed_types(request, step)
    hits = discover(revision, request, step, allowed, depth)
    outcome = StepOutcome(step=step, hits=[_hit_piece(revision, docs, h, step.id) for h in hits])
    if deepen and hits and request.filters.document_ids != [hits[0].document_id]:
        # The question again within the document of its best hit: in one document the ranking
        # finds that document's pages better than in the whole store (a filing's statement
        # page behind the notes that mention it).
        best = request.filters.model_copy(update={"document_ids": [hits[0].document_id]})
        scoped = request.model_copy(update={"filters": best})
        outcome.within = [
            _hit_piece(revision, docs, h, step.id)
            for h in discover(revision, scoped, step, allowed, step.top_k)
        ]
    terms = step_terms(revision, step.query)
    distance, proximity = navigate(docs, hits, request.max_depth)
    scored = score_sections(docs, request, terms, distance, proximity)
    opened = choose_sections(docs, step, scored, request.max_breadth, navigator, budget)
    found = {h.chunk_id for h in hits}
    ranked: list[tuple[float, Piece]] = []
    for score, document_id, sid in opened:
        path = docs.path(document_id, sid)
        by_id = docs.by_id(document_id)
        rows = [r for r in docs.rows_in(document_id, sid) if ChunkType(r["chunk_type"]) in allowed]
        for row in rows:
            if row["chunk_id"] in found:
                continue
            piece = piece_of(revision.namespace, row, by_id, path, sid, step_id=step.id)
            ranked.append((score + 0.2 * coverage(terms, row["content"]), piece))
    ranked.sort(key=lambda item: (-item[0], item[1].document_id, item[1].order))
    outcome.context = [piece for _, piece in ranked]
    outcome.latency_ms = (time.perf_counter() - started) * 1000
    return outcome


def discover(
    revision: Revision,
    request: AgenticRequest,
    step: PlanStep,
    allowed: set[ChunkType],
    depth: int,
) -> list[SearchResult]:
    """The step's query by classic search, under the request's filters and exclusions."""
    discovery = classic_search(
        revision,
        SearchRequest(
            **request.model_dump(include=_SCOPE),
            query=step.query,
            top_k=depth,
            chunk_types=sorted(allowed),
        ),
    )
    return discovery.results


def _hit_piece(revision: Revision, docs: SectionCache, hit: SearchResult, step_id: str) -> Piece:
    """A discovery hit as evidence, cited where classic search cites it."""
    by_id = docs.by_id(hit.document_id)
    row = by_id.get(hit.chunk_id)
    path, sid = tuple(hit.section_path), hit.section_id or ""
    if row is not None:
        return piece_of(revision.namespace, row, by_id, path, sid, hit.score, step_id)
    return result_piece(hit, step_id)  # not among its document's rows (never expected)
