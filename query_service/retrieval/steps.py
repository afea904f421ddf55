"""One agentic step's phases: discovery (classic fused search), then navigation of the section
tree around the hits (`navigation`), then evidence: the chosen sections' chunks rendered (their
embedded tables and images resolved system-side), every discovery hit among them whatever
sections are opened, outlines of the relevant sections left closed, and each hit's preview."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.agentic import AgenticRequest, AgenticResult, PlanStep
from corpus_pipeline.contracts.api import ReadChunk
from corpus_pipeline.contracts.search import Location, SearchRequest, SearchResult
from query_service.retrieval.budget import TokenBudget
from query_service.retrieval.classic import classic_search
from query_service.retrieval.evidence import (
    HIT_SCORE,
    Evidence,
    Outline,
    StepOutcome,
    fallback_result,
    without_heading_lines,
)
from query_service.retrieval.navigation import (
    Navigator,
    Scored,
    choose_sections,
    coverage,
    navigate,
    score_sections,
    step_terms,
)
from query_service.snapshot.revision import Revision
from query_service.snapshot.sections import SectionCache, SectionPath, Sid
from query_service.snapshot.store import render_chunk

# The fields of an agentic request that bound every step's discovery alike (where it searches,
# what it leaves out); a step sets only its own query, depth and chunk types.
_SCOPE = {"namespace", "exclude_document_ids", "exclude_section_paths", "filters"}


def run_step(
    revision: Revision,
    docs: SectionCache,
    request: AgenticRequest,
    step: PlanStep,
    navigator: Navigator | None = None,
    budget: TokenBudget | None = None,
) -> StepOutcome:
    """Discovery, navigation and evidence of one step."""
    started = time.perf_counter()
    outcome = StepOutcome(step=step)
    allowed = set(step.chunk_types) & set(request.chunk_types) or set(request.chunk_types)
    hits = discover(revision, request, step, allowed)
    outcome.discovered = len(hits)
    terms = step_terms(revision, step.query)
    distance, proximity = navigate(docs, hits, request.max_depth)
    scored = score_sections(docs, request, terms, distance, proximity)
    opened = choose_sections(docs, step, scored, request.max_breadth, navigator, budget)
    found = _Found(
        revision=revision,
        docs=docs,
        step=step,
        allowed=allowed,
        terms=terms,
        hits={r.chunk_id: r for r in hits},
        hit_rank={r.chunk_id: rank for rank, r in enumerate(hits)},
        lead=1 if step.query == " ".join(request.query.split()) else 0,
    )
    opened_keys = {(d, p) for _, d, p in opened}
    for score, document_id, sid in [*opened, *_hit_sections(hits, opened_keys)]:
        only_hits = (document_id, sid) not in opened_keys
        outcome.evidence.extend(found.section(score, document_id, sid, only_hits))
    outcome.outlines = _closed_outlines(docs, scored, opened_keys)
    # Every hit is also a fallback result: one the budget cannot admit as evidence is still
    # returned as a preview; the run drops those it admitted.
    outcome.fallback = [fallback_result(hit, step.id) for hit in hits]
    outcome.latency_ms = (time.perf_counter() - started) * 1000
    return outcome


def discover(
    revision: Revision, request: AgenticRequest, step: PlanStep, allowed: set[ChunkType]
) -> list[SearchResult]:
    """The step's query by classic search, under the request's filters and exclusions."""
    discovery = classic_search(
        revision,
        SearchRequest(
            **request.model_dump(include=_SCOPE),
            query=step.query,
            top_k=step.top_k,
            chunk_types=sorted(allowed),
        ),
    )
    return discovery.results


def _hit_sections(hits: list[SearchResult], opened: set[tuple[str, Sid]]) -> list[Scored]:
    """Every discovery hit is evidence, in discovery order, whatever sections navigation opens:
    the agent never reads less than classic search would have returned (hits' sections that
    were not chosen contribute the hits only)."""
    sections: list[Scored] = []
    for result in hits:
        key = (result.document_id, result.section_id or "")
        if key not in opened and (0.0, *key) not in sections:
            sections.append((0.0, *key))
    return sections


def _closed_outlines(
    docs: SectionCache, scored: list[Scored], opened: set[tuple[str, Sid]]
) -> list[Outline]:
    """The relevant sections navigation did not open, as outline lines."""
    outlines = []
    for score, document_id, sid in scored:
        if (document_id, sid) in opened or score <= 0:
            continue
        section = docs.sections(document_id).get(sid)
        if section is None:
            continue
        path = tuple(section["path"])
        line = f"- {' > '.join(path)}: {section['summary']}".rstrip(": ")
        outlines.append(Outline(document_id, "", sid, path, section["sort_order"], line, score))
    return outlines


@dataclass(frozen=True)
class _Found:
    """What a step rendering its sections knows: the hits (by chunk id, with their ranks), the
    step's terms, the chunk types it returns, and whether it is the whole question (`lead`:
    its hits rank first)."""

    revision: Revision
    docs: SectionCache
    step: PlanStep
    allowed: set[ChunkType]
    terms: dict[str, float]
    hits: dict[str, SearchResult]
    hit_rank: dict[str, int]
    lead: int

    def section(self, score: float, document_id: str, sid: Sid, only_hits: bool) -> list[Evidence]:
        """A section's chunks as evidence, in document order (with `only_hits`, the hits
        alone); a host text renders its embedded tables inline and ranks as its best hit."""
        docs = self.docs
        section = docs.sections(document_id).get(sid)
        path = docs.path(document_id, sid)
        rows = docs.rows_in(document_id, sid)
        by_id = docs.by_id(document_id)
        embeds = {
            r["chunk_id"]: [
                c["target"]
                for c in json.loads(r["metadata"])["connect_to"]
                if c["relation"] == "embeds"
            ]
            for r in rows
            if ChunkType(r["chunk_type"])
            in self.allowed  # a resource stands alone if its host is not returned
        }
        embedded = {target for targets in embeds.values() for target in targets}
        out = []
        for row in rows:
            if row["chunk_id"] in embedded or ChunkType(row["chunk_type"]) not in self.allowed:
                continue
            hits = [
                self.hits[c]
                for c in [row["chunk_id"], *embeds.get(row["chunk_id"], [])]
                if c in self.hits
            ]
            hit = max(hits, key=lambda h: h.score) if hits else None
            if only_hits and hit is None:
                continue
            targets = embeds.get(row["chunk_id"], [])
            rendered = render_chunk(self.revision, row, by_id)
            found = self._result(score, document_id, sid, path, row, rendered, targets, by_id, hit)
            out.append(
                Evidence(
                    self.step.id,
                    document_id,
                    row["source_path"],
                    sid,
                    path,
                    section["sort_order"] if section else -1,
                    row["sort_order"],
                    without_heading_lines(rendered.content, path),
                    found,
                )
            )
        return out

    def _result(
        self,
        score: float,
        document_id: str,
        sid: Sid,
        path: SectionPath,
        row: dict[str, Any],
        rendered: ReadChunk,
        targets: list[str],
        by_id: dict[str, dict[str, Any]],
        hit: SearchResult | None,
    ) -> AgenticResult:
        """One rendered chunk of a section as a result: a hit ranks by its discovery rank (the
        whole question's hits first, then the parts' interleaved rank by rank), context by its
        section's score and its own coverage of the step's terms."""
        # The rendered text holds its embedded tables: it cites their pages too.
        pages = sorted(
            {
                *(row["pages"] or []),
                *(
                    page
                    for target in targets
                    for page in (by_id.get(target, {}).get("pages") or [])
                ),
            }
        )
        if hit is not None:
            agent_score = round(HIT_SCORE + self.lead + 1 / (1 + self.hit_rank[hit.chunk_id]), 6)
        else:
            agent_score = round(score + 0.2 * coverage(self.terms, row["content"]), 4)
        return AgenticResult(
            content=rendered.content,
            chunk_type=rendered.chunk_type,
            document_id=document_id,
            chunk_id=row["chunk_id"],
            source_file_name=row["source_path"],
            section_path=list(path),
            section_id=sid or None,
            pages=pages,
            agent_score=agent_score,
            discovery_score=hit.score if hit else 0.0,
            step_id=self.step.id,
            occurrences=hit.occurrences
            if hit
            else [
                Location(
                    document_id=document_id,
                    source_file_name=row["source_path"],
                    section_path=list(path),
                    section_id=sid or None,
                    pages=pages,
                )
            ],
            resource=rendered.resources[-1]
            if rendered.chunk_type is not ChunkType.TEXT and rendered.resources
            else None,
        )
