"""Agentic evidence: what a step found (chunks rendered under their sections, outlines of
sections not opened, previews of its hits), the room held for previews while evidence is
admitted against the budget, and the evidence text the agent reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corpus_pipeline.contracts.agentic import AgenticResult, PlanStep
from corpus_pipeline.contracts.search import SearchResult
from query_service.retrieval.budget import BudgetExhausted, TokenBudget, tokens_of
from query_service.snapshot.sections import SectionCache, SectionPath, Sid

# Discovery hits rank above everything navigation adds (section scores stay below 1.2), in
# their discovery order.
HIT_SCORE = 2.0
PREVIEW_SHARE = 0.5  # of the budget left, at most, held for hit previews
PART_PREVIEWS = 2  # hits of each part of a split question held back as previews
FALLBACK_PREVIEW_CHARS = 400


@dataclass
class Evidence:
    step_id: str
    document_id: str
    source_file_name: str
    section_id: Sid
    section_path: SectionPath
    section_order: int
    chunk_order: int
    text: str
    result: AgenticResult


@dataclass
class Outline:
    document_id: str
    source_file_name: str
    section_id: Sid
    section_path: SectionPath
    section_order: int
    line: str
    score: float


@dataclass
class StepOutcome:
    step: PlanStep
    evidence: list[Evidence] = field(default_factory=list)
    fallback: list[AgenticResult] = field(default_factory=list)
    outlines: list[Outline] = field(default_factory=list)
    discovered: int = 0
    error: str | None = None
    latency_ms: float = 0.0


def preview(content: str) -> str:
    """A fallback result's content: its opening, enough to judge it (`read` returns it whole)."""
    if len(content) <= FALLBACK_PREVIEW_CHARS:
        return content
    return content[:FALLBACK_PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"


def fallback_result(hit: SearchResult, step_id: str) -> AgenticResult:
    """A hit as a fallback result: one the budget cannot admit as evidence is still returned,
    as a preview."""
    return AgenticResult(
        content=preview(hit.content),
        chunk_type=hit.chunk_type,
        document_id=hit.document_id,
        chunk_id=hit.chunk_id,
        source_file_name=hit.source_file_name,
        section_path=hit.section_path,
        section_id=hit.section_id,
        pages=hit.pages,
        agent_score=0.0,
        discovery_score=hit.score,
        step_id=step_id,
        occurrences=hit.occurrences,
        # A preview names its table or image; its markup is fetched by the resource URL.
        resource=hit.resource.model_copy(update={"html": None}) if hit.resource else None,
    )


def without_heading_lines(text: str, path: Sequence[str]) -> str:
    """A section's first chunk starts with its heading line(s); evidence is rendered under the
    section's breadcrumb (`## A > B`), so those lines would only repeat it."""
    paragraphs = text.split("\n\n")
    titles = set(path)
    start = 0
    while start < len(paragraphs) - 1 and paragraphs[start].strip() in titles:
        start += 1
    return "\n\n".join(paragraphs[start:])


def embedded_targets(docs: SectionCache, document_id: str, chunk_id: str) -> list[str]:
    """The chunks (tables, images) a chunk embeds."""
    row = docs.by_id(document_id).get(chunk_id)
    if row is None:
        return []
    return [
        c["target"] for c in json.loads(row["metadata"])["connect_to"] if c["relation"] == "embeds"
    ]


def render_evidence(evidence: list[Evidence], outlines: list[Outline]) -> str:
    """What the agent reads, in the order of relevance: the discovery hits first, best first
    (so it never reads less, or later, than classic search would have returned), then the
    context navigation opened around them, strongest section first and each section's chunks
    in document order. A section's heading precedes its chunks and a document header each
    change of document; unopened but relevant sections follow at the end as outlines."""
    best: dict[tuple[str, Sid], float] = {}
    for item in evidence:
        key = (item.document_id, item.section_id)
        best[key] = max(best.get(key, 0.0), item.result.agent_score)

    def order(e: Evidence) -> tuple[Any, ...]:
        if e.result.agent_score >= HIT_SCORE:
            return (0, -e.result.agent_score, e.result.chunk_id)
        key = (e.document_id, e.section_id)
        return (1, -best[key], e.document_id, e.section_order, e.chunk_order)

    ordered = sorted(evidence, key=order)
    parts: list[str] = []
    current: tuple[str, Sid] | None = None
    for item in ordered:
        if current is None or item.document_id != current[0]:
            parts.append(f"# {item.source_file_name} (document {item.document_id})")
        if (item.document_id, item.section_id) != current:
            current = (item.document_id, item.section_id)
            parts.append(f"## {' > '.join(item.section_path) or '(document start)'}")
        pages = f", pages {','.join(map(str, item.result.pages))}" if item.result.pages else ""
        parts.append(f"{item.text}\n[chunk {item.result.chunk_id}{pages}]")
    names = {e.document_id: e.source_file_name for e in evidence}
    for document_id in dict.fromkeys(e.document_id for e in ordered):
        lines = [o.line for o in outlines if o.document_id == document_id]
        if lines:
            parts.append(
                f"# {names[document_id]}: other sections (not opened)\n" + "\n".join(lines)
            )
    return "\n\n".join(parts)


def result_cost(result: AgenticResult) -> int:
    return tokens_of(result.model_dump_json())


def preview_order(
    layer: Sequence[PlanStep], outcomes: dict[str, StepOutcome], top_k: int
) -> list[AgenticResult]:
    """The hits a layer holds previews for, in reading order: the first step's top k (the
    whole question, when it is in the layer), then each other step's best PART_PREVIEWS hits
    that are new, so every part of a split question is answered by something."""
    order: list[AgenticResult] = []
    seen: set[str] = set()
    for index, step in enumerate(layer):
        fresh = [f for f in outcomes[step.id].fallback if f.chunk_id not in seen]
        fresh = fresh[: top_k if index == 0 else PART_PREVIEWS]
        seen.update(f.chunk_id for f in fresh)
        order.extend(fresh)
    return order


class Previews:
    """Room held for a preview of each hit of a layer, in rank order (within PREVIEW_SHARE of
    what is left: a small budget still reads its best hits whole). A hit read whole gives its
    preview's room to the next one, so the hits after the budget's last whole one are still
    returned, as previews."""

    def __init__(
        self, budget: TokenBudget, hits: Sequence[AgenticResult], admitted: set[str]
    ) -> None:
        self.budget = budget
        self.admitted = admitted
        self.costs = {f.chunk_id: result_cost(f) + 4 for f in hits}
        self.waiting = [c for c in dict.fromkeys(f.chunk_id for f in hits) if c not in admitted]
        self.room = int(PREVIEW_SHARE * budget.remaining)
        self.held: dict[str, int] = {}

    def hold(self) -> None:
        while self.waiting:
            chunk_id = self.waiting[0]
            if chunk_id not in self.admitted:
                cost = self.costs[chunk_id]
                if sum(self.held.values()) + cost > self.room:
                    return
                try:
                    self.held[chunk_id] = self.budget.reserve(cost)
                except BudgetExhausted:
                    return
            self.waiting.pop(0)
