"""Agentic search: a planned DAG of retrieval steps under one shared token budget.

Each step runs three phases: discovery (classic fused search), bounded breadth-first
navigation of the section tree around the discovered sections (scored deterministically by
coverage of the step's terms in titles, summaries and content, plus proximity to discovery
hits), and evidence rendering (only the chosen sections' raw segments are loaded; embedded
tables/images resolved system-side). Independent steps run concurrently. Evidence is admitted
against the budget best-first: the discovery hits first, in discovery order (the whole question
is always the first step), so the agent never reads less than classic search would return; the
context navigation adds comes after every hit. The final serialized response (plus model
calls) never exceeds the budget. Retrieval returns evidence; it never writes an answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.agentic import (
    AgenticRequest,
    AgenticResponse,
    AgenticResult,
    BudgetReport,
    Plan,
    PlanStep,
    StepReport,
)
from corpus_pipeline.contracts.search import Location, SearchRequest, SearchResult
from corpus_pipeline.enrich.text import STOP_WORDS
from corpus_pipeline.index import channels as ch
from corpus_pipeline.publish import tables as t
from query_service.retrieval.budget import BudgetExhausted, TokenBudget, tokens_of
from query_service.retrieval.classic import classic_search
from query_service.retrieval.instructions import search_text
from query_service.retrieval.planner import Planner, layers
from query_service.retrieval.spelling import spelled
from query_service.snapshot.records import RunRecorder
from query_service.snapshot.revision import Revision
from query_service.snapshot.store import render_chunk

MAX_VISITED_SECTIONS = 60
# Discovery hits rank above everything navigation adds (section scores stay below 1.2), in
# their discovery order.
HIT_SCORE = 2.0
MAX_CACHED_DOCUMENTS = 64
PREVIEW_SHARE = 0.5  # of the budget left, at most, held for hit previews
PART_PREVIEWS = 2  # hits of each part of a split question held back as previews
STEP_WORKERS = 4
PLANNER_RESERVE = 2048
_STOP_STEMS = frozenset(t for w in STOP_WORDS for t in ch.analyze("content", w))

Path_ = tuple[str, ...]
Sid = str  # a section's id in its document; "" = before the first heading


class BudgetTooSmall(ValueError):
    """Even an answer without evidence would not fit: the caller gets a 422 naming the field."""

    def __init__(self, needed: int) -> None:
        self.needed = needed
        super().__init__(
            f"token_budget is too small for this query and plan (needs at least {needed})"
        )


@dataclass
class Evidence:
    step_id: str
    document_id: str
    source_file_name: str
    section_id: Sid
    section_path: Path_
    section_order: int
    chunk_order: int
    text: str
    result: AgenticResult


@dataclass
class Outline:
    document_id: str
    source_file_name: str
    section_id: Sid
    section_path: Path_
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


class _DocCache:
    """Sections and chunk rows of the documents runs touch, read once per revision and shared
    by its requests (a long filing's rows take longer to read than a step takes to rank them);
    the MAX_CACHED_DOCUMENTS most recently used are kept. Sections are keyed by id: two
    sections with the same title path are two nodes of the tree."""

    def __init__(self, revision: Revision) -> None:
        self.revision = revision
        self._sections: dict[str, dict[Sid, dict[str, Any]]] = {}
        self._children: dict[str, dict[Sid, list[Sid]]] = {}
        self._chunks: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._placed: dict[str, dict[Sid, list[dict[str, Any]]]] = {}
        self._by_id: dict[str, dict[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, revision: Revision) -> _DocCache:
        cache: _DocCache = revision.memo("agentic-documents", lambda: cls(revision))
        return cache

    def sections(self, document_id: str) -> dict[Sid, dict[str, Any]]:
        if document_id not in self._sections:
            rows = (
                self.revision.table(t.SECTIONS)
                .search()
                .where(f"document_id = {t.quote(document_id)}")
                .select(["section_id", "parent_id", "path", "title", "summary", "sort_order"])
                .limit(None)
                .to_list()
            )
            rows.sort(key=lambda r: r["sort_order"])
            self._sections[document_id] = {r["section_id"]: r for r in rows}
            children: dict[Sid, list[Sid]] = {}
            for r in rows:
                children.setdefault(r["parent_id"] or "", []).append(r["section_id"])
            self._children[document_id] = children
        return self._sections[document_id]

    def neighbours(self, document_id: str, sid: Sid) -> list[Sid]:
        """The parent (the document start for a top-level section) and the children."""
        sections = self.sections(document_id)
        parent = [sections[sid]["parent_id"] or ""] if sid in sections else []
        return parent + self._children[document_id].get(sid, [])

    def path(self, document_id: str, sid: Sid) -> Path_:
        section = self.sections(document_id).get(sid)
        return tuple(section["path"]) if section else ()

    def rows_in(self, document_id: str, sid: Sid) -> list[dict[str, Any]]:
        """Chunk rows placed directly in a section (any of their occurrences), in document
        order; indexed once per document, since navigation asks for many sections."""
        if document_id not in self._placed:
            placed: dict[Sid, list[dict[str, Any]]] = {}
            for row in self.chunks(document_id):
                for key in row.get("section_ids") or [""]:
                    placed.setdefault(key, []).append(row)
            self._placed[document_id] = placed
        return self._placed[document_id].get(sid, [])

    def by_id(self, document_id: str) -> dict[str, dict[str, Any]]:
        """A document's chunk rows by chunk id (indexed once, like `rows_in`)."""
        index = self._by_id.get(document_id)
        if index is None:
            index = {r["chunk_id"]: r for r in self.chunks(document_id)}
            self._by_id[document_id] = index
        return index

    def chunks(self, document_id: str) -> list[dict[str, Any]]:
        with self._lock:
            cached = self._chunks.get(document_id)
            if cached is not None:
                self._chunks.move_to_end(document_id)
                return cached
        rows: list[dict[str, Any]] = (
            self.revision.table(t.CHUNKS)
            .search()
            .where(f"document_id = {t.quote(document_id)}")
            .limit(None)
            .to_list()
        )
        rows.sort(key=lambda r: r["sort_order"])
        with self._lock:
            self._chunks[document_id] = rows
            while len(self._chunks) > MAX_CACHED_DOCUMENTS:
                evicted, _ = self._chunks.popitem(last=False)
                self._placed.pop(evicted, None)
                self._by_id.pop(evicted, None)
        return rows


def _terms(text: str) -> set[str]:
    return {w for w in ch.analyze("content", text) if w not in _STOP_STEMS} or set(
        ch.analyze("content", text)
    )


def _idf_weights(revision: Revision, terms: set[str]) -> dict[str, float]:
    """Rarer terms count more: matching 'IBM' says more than matching 'name'."""
    total = max(revision.pointer.chunks, 1)
    out = {}
    for term in terms:
        df = revision.searcher.doc_freq(ch.F_CONTENT, term)
        out[term] = ch.bm25_idf(total, df)
    return out


def _coverage(terms: dict[str, float], text: str) -> float:
    """IDF-weighted share of the step's terms that occur in `text` (0..1)."""
    total = sum(terms.values())
    if total <= 0:
        return 0.0
    present = _term_set(text)
    return sum(w for t, w in terms.items() if t in present) / total


@lru_cache(maxsize=8192)
def _term_set(text: str) -> frozenset[str]:
    """A text's analysed terms; navigation scores the same sections and chunks for many
    queries, and analysing them is most of a step's time on long filings."""
    return frozenset(ch.analyze("content", text))


def _excluded_path(path: Path_, request: AgenticRequest) -> bool:
    return any(list(path[: len(p)]) == p for p in request.exclude_section_paths if p)


class Navigator(Protocol):
    """Chooses which candidate sections to open, from their outlines (title + summary)."""

    def choose(self, query: str, outlines: list[str], k: int) -> tuple[list[int] | None, int]:
        """Indices of the sections to open (None = no opinion) and the model tokens spent."""
        ...


def _run_step(
    revision: Revision,
    docs: _DocCache,
    request: AgenticRequest,
    step: PlanStep,
    navigator: Navigator | None = None,
    budget: TokenBudget | None = None,
) -> StepOutcome:
    started = time.perf_counter()
    outcome = StepOutcome(step=step)
    allowed = set(step.chunk_types) & set(request.chunk_types) or set(request.chunk_types)
    discovery = classic_search(
        revision,
        SearchRequest(
            query=step.query,
            namespace=request.namespace,
            top_k=step.top_k,
            chunk_types=sorted(allowed),
            exclude_document_ids=request.exclude_document_ids,
            exclude_section_paths=request.exclude_section_paths,
            filters=request.filters,
        ),
    )
    outcome.discovered = len(discovery.results)
    discovered: dict[str, SearchResult] = {r.chunk_id: r for r in discovery.results}
    hit_rank = {r.chunk_id: rank for rank, r in enumerate(discovery.results)}
    lead = 1 if step.query == " ".join(request.query.split()) else 0
    terms = _idf_weights(revision, _terms(spelled(revision.searcher, search_text(step.query))[0]))
    # Navigation: BFS over the section tree from every discovered place (bounded).
    # `proximity`: the best discovery score (relative to the step's best) of the hits a section
    # holds, halved per hop of the tree away from them.
    distance: dict[tuple[str, Sid], int] = {}
    proximity: dict[tuple[str, Sid], float] = {}
    frontier: list[tuple[str, Sid]] = []
    best_score = max((r.score for r in discovery.results), default=0.0) or 1.0
    for result in discovery.results:
        # Navigation starts where the hit is cited, not in every document that repeats it: a
        # filing's boilerplate recurs in each quarter's filing of an archive, and opening
        # them all cost a read of tens of documents per step without adding an answer.
        for loc in result.occurrences:
            if loc.document_id != result.document_id:
                continue
            key = (loc.document_id, loc.section_id or "")
            proximity[key] = max(proximity.get(key, 0.0), result.score / best_score)
            if key not in distance:
                distance[key] = 0
                frontier.append(key)
    depth = 0
    while frontier and depth < request.max_depth and len(distance) < MAX_VISITED_SECTIONS:
        depth += 1
        nxt: list[tuple[str, Sid]] = []
        for document_id, sid in frontier:
            for near in docs.neighbours(document_id, sid):
                key = (document_id, near)
                proximity[key] = max(proximity.get(key, 0.0), proximity[(document_id, sid)] / 2)
                if key not in distance and len(distance) < MAX_VISITED_SECTIONS:
                    distance[key] = depth
                    nxt.append(key)
        frontier = nxt
    scored: list[tuple[float, str, Sid]] = []
    for document_id, sid in distance:
        if _excluded_path(docs.path(document_id, sid), request):
            continue
        section = docs.sections(document_id).get(sid)
        heading = f"{section['title']} {section['summary']}" if section else ""
        body = " ".join(r["content"] for r in docs.rows_in(document_id, sid))
        score = 0.35 * _coverage(terms, heading) + 0.35 * _coverage(terms, body)
        if score > 0:  # proximity only ranks sections that match the step's terms at all
            score += 0.3 * proximity.get((document_id, sid), 0.0)
        scored.append((round(score, 4), document_id, sid))
    scored.sort(key=lambda s: (-s[0], s[1], _section_order(docs, s[1], s[2])))
    opened = [s for s in scored if s[0] > 0][: request.max_breadth]
    if navigator is not None and budget is not None and len([s for s in scored if s[0] > 0]) > 1:
        opened = _model_choice(navigator, budget, docs, step, scored, request.max_breadth) or opened
    opened_keys = {(d, p) for _, d, p in opened}
    # Every discovery hit is evidence, in discovery order, whatever sections navigation opens:
    # the agent never reads less than classic search would have returned (hits' sections that
    # were not chosen contribute the hits only).
    hit_sections: list[tuple[float, str, Sid]] = []
    for result in discovery.results:
        key = (result.document_id, result.section_id or "")
        if key not in opened_keys and (0.0, *key) not in hit_sections:
            hit_sections.append((0.0, *key))
    for score, document_id, sid in [*opened, *hit_sections]:
        only_hits = (document_id, sid) not in opened_keys
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
            in allowed  # a resource stands alone if its host is not returned
        }
        embedded = {target for targets in embeds.values() for target in targets}
        for row in rows:
            if row["chunk_id"] in embedded or ChunkType(row["chunk_type"]) not in allowed:
                continue
            # A host text renders its embedded tables inline: it ranks as its best hit.
            hits = [
                discovered[c]
                for c in [row["chunk_id"], *embeds.get(row["chunk_id"], [])]
                if c in discovered
            ]
            hit = max(hits, key=lambda h: h.score) if hits else None
            if only_hits and hit is None:
                continue
            rendered = render_chunk(revision, row, by_id)
            # The rendered text holds its embedded tables: it cites their pages too.
            pages = sorted(
                {
                    *(row["pages"] or []),
                    *(
                        page
                        for target in embeds.get(row["chunk_id"], [])
                        for page in (by_id.get(target, {}).get("pages") or [])
                    ),
                }
            )
            if hit is not None:
                # By discovery rank: the whole question's hits first, then the parts' hits
                # interleaved rank by rank.
                agent_score = round(HIT_SCORE + lead + 1 / (1 + hit_rank[hit.chunk_id]), 6)
            else:
                agent_score = round(score + 0.2 * _coverage(terms, row["content"]), 4)
            found = AgenticResult(
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
                step_id=step.id,
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
            outcome.evidence.append(
                Evidence(
                    step.id,
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
    for score, document_id, sid in scored:
        if (document_id, sid) in opened_keys or score <= 0:
            continue
        section = docs.sections(document_id).get(sid)
        if section is None:
            continue
        path = tuple(section["path"])
        line = f"- {' > '.join(path)}: {section['summary']}".rstrip(": ")
        outcome.outlines.append(
            Outline(document_id, "", sid, path, section["sort_order"], line, score)
        )
    # Every hit is also a fallback result: one the budget cannot admit as evidence is still
    # returned as a preview; the run drops those it admitted.
    for hit in discovery.results:
        outcome.fallback.append(
            AgenticResult(
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
                step_id=step.id,
                occurrences=hit.occurrences,
                # A preview names its table or image; its markup is fetched by the resource URL.
                resource=hit.resource.model_copy(update={"html": None}) if hit.resource else None,
            )
        )
    outcome.latency_ms = (time.perf_counter() - started) * 1000
    return outcome


def _preview_order(
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


class _Previews:
    """Room held for a preview of each hit of a layer, in rank order (within PREVIEW_SHARE of
    what is left: a small budget still reads its best hits whole). A hit read whole gives its
    preview's room to the next one, so the hits after the budget's last whole one are still
    returned, as previews."""

    def __init__(
        self, budget: TokenBudget, hits: Sequence[AgenticResult], admitted: set[str]
    ) -> None:
        self.budget = budget
        self.admitted = admitted
        self.costs = {f.chunk_id: _result_cost(f) + 4 for f in hits}
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


NAVIGATOR_RESERVE = 1500
FALLBACK_PREVIEW_CHARS = 400


def preview(content: str) -> str:
    """A fallback result's content: its opening, enough to judge it (`read` returns it whole)."""
    if len(content) <= FALLBACK_PREVIEW_CHARS:
        return content
    return content[:FALLBACK_PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"


def _embedded_targets(docs: _DocCache, document_id: str, chunk_id: str) -> list[str]:
    row = docs.by_id(document_id).get(chunk_id)
    if row is None:
        return []
    return [
        c["target"] for c in json.loads(row["metadata"])["connect_to"] if c["relation"] == "embeds"
    ]


def _model_choice(
    navigator: Navigator,
    budget: TokenBudget,
    docs: _DocCache,
    step: PlanStep,
    scored: list[tuple[float, str, Sid]],
    k: int,
) -> list[tuple[float, str, Sid]] | None:
    """With a model: it picks among the outlines of the best candidates, within the budget
    (reserve before the call, commit what it used); any failure keeps the deterministic choice."""
    candidates = [s for s in scored if s[0] > 0][: 3 * k]
    outlines = []
    for _, document_id, sid in candidates:
        section = docs.sections(document_id).get(sid)
        summary = section["summary"] if section else ""
        path = docs.path(document_id, sid)
        outlines.append(f"{' > '.join(path) or '(document start)'}: {summary}"[:300])
    try:
        held = budget.reserve(NAVIGATOR_RESERVE)
    except BudgetExhausted:
        return None
    try:
        chosen, used = navigator.choose(step.query, outlines, k)
    except Exception:  # provider failures: the deterministic choice stands
        chosen, used = None, 0
    budget.commit(held, used, "navigator")
    if not chosen:
        return None
    picked = [candidates[i] for i in dict.fromkeys(chosen) if 0 <= i < len(candidates)][:k]
    return picked or None


def _section_order(docs: _DocCache, document_id: str, sid: Sid) -> int:
    section = docs.sections(document_id).get(sid)
    return int(section["sort_order"]) if section else -1


def without_heading_lines(text: str, path: Sequence[str]) -> str:
    """A section's first chunk starts with its heading line(s); evidence is rendered under the
    section's breadcrumb (`## A > B`), so those lines would only repeat it."""
    paragraphs = text.split("\n\n")
    titles = set(path)
    start = 0
    while start < len(paragraphs) - 1 and paragraphs[start].strip() in titles:
        start += 1
    return "\n\n".join(paragraphs[start:])


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


def _result_cost(result: AgenticResult) -> int:
    return tokens_of(result.model_dump_json())


def agentic_search(
    revision: Revision,
    request: AgenticRequest,
    planner: Planner,
    recorder: RunRecorder | None = None,
    model_tokens: Callable[[], int] | None = None,
    navigator: Navigator | None = None,
) -> AgenticResponse:
    started = time.perf_counter()
    budget = TokenBudget(request.token_budget)
    docs = _DocCache.of(revision)
    # Plan (an LLM planner reserves before it calls and commits what it used).
    model_used = 0
    reservation = (
        budget.reserve(min(PLANNER_RESERVE, budget.remaining)) if planner.name == "llm" else 0
    )
    before = model_tokens() if model_tokens else 0
    plan_started = time.perf_counter()
    plan: Plan = planner.plan(request)
    if reservation:
        model_used = (model_tokens() if model_tokens else 0) - before
        budget.commit(reservation, model_used, "planner")
    if recorder:
        recorder.add(
            "step",
            "plan",
            inputs={"query": request.query},
            outputs=plan.model_dump(mode="json"),
            latency_ms=(time.perf_counter() - plan_started) * 1000,
            tokens=model_used,
            model=plan.planner,
        )
    # Skeleton of the response: reserved up front so evidence can never crowd it out.
    skeleton = _response(
        request, revision, plan, [], [], [], {}, budget, 0, False, "completed", started, model_used
    )
    skeleton_cost = tokens_of(skeleton.model_dump_json()) + 64 + 40 * len(plan.steps)
    try:
        budget.reserve(skeleton_cost)
    except BudgetExhausted as exc:
        raise BudgetTooSmall(skeleton_cost + model_used) from exc
    outcomes: dict[str, StepOutcome] = {}
    admitted: list[Evidence] = []
    admitted_ids: set[str] = set()
    outlines: list[Outline] = []
    fallback: list[AgenticResult] = []
    available = 0
    exhausted = False
    hits_left_out = False
    statuses: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=STEP_WORKERS, thread_name_prefix="agentic-step") as pool:
        for layer in layers(plan.steps):
            if exhausted:
                for step in layer:
                    statuses[step.id] = "skipped"
                continue
            futures = {
                step.id: pool.submit(_run_step, revision, docs, request, step, navigator, budget)
                for step in layer
            }
            for step in layer:
                try:
                    outcomes[step.id] = futures[step.id].result()
                    statuses[step.id] = "done"
                except Exception as exc:  # a failing step must not lose the others' evidence
                    outcomes[step.id] = StepOutcome(step=step, error=type(exc).__name__)
                    statuses[step.id] = "failed"
            candidates = [
                e
                for s in layer
                for e in outcomes[s.id].evidence
                if e.result.chunk_id not in admitted_ids
            ]
            candidates.sort(
                key=lambda e: (-e.result.agent_score, -e.result.discovery_score, e.result.chunk_id)
            )
            # Room for a preview of every hit is held first: a hit the evidence cannot hold
            # whole is still returned (as a fallback result), so the agent never sees fewer
            # places than classic search would return.
            previews = _Previews(
                budget, _preview_order(layer, outcomes, request.top_k), admitted_ids
            )
            previews.hold()
            seen_layer: set[str] = set()
            for item in candidates:
                if item.result.chunk_id in seen_layer:
                    continue
                seen_layer.add(item.result.chunk_id)
                cost = tokens_of(item.text) + _result_cost(item.result) + 24
                available += cost
                hit = item.result.agent_score >= HIT_SCORE
                if hits_left_out:
                    # Hits are read in rank order: once one is left out (a preview), later
                    # ones are previews after it, and context is read only once every hit is.
                    continue
                covers = [
                    c
                    for c in dict.fromkeys(  # a table embedded twice is covered once
                        (
                            item.result.chunk_id,
                            *_embedded_targets(docs, item.document_id, item.result.chunk_id),
                        )
                    )
                    if c in previews.held
                ]
                freed = sum(previews.held[c] for c in covers)  # read whole, no preview needed
                budget.release(freed)
                try:
                    held = budget.reserve(cost)
                except BudgetExhausted:
                    budget.reserve(freed)  # just released: it fits again
                    exhausted = True  # this one does not fit; smaller evidence still may
                    hits_left_out |= hit  # it stays a (preview) fallback result
                    continue
                for c in covers:
                    del previews.held[c]
                budget.commit(held, cost, item.step_id)
                admitted.append(item)
                admitted_ids.add(item.result.chunk_id)
                if hit:
                    previews.hold()
            budget.release(sum(previews.held.values()))  # the fallback admission spends it
            for s in layer:
                outcome = outcomes[s.id]
                outlines.extend(outcome.outlines)
                fallback.extend(f for f in outcome.fallback if f.chunk_id not in admitted_ids)
                if recorder:
                    recorder.add(
                        "step",
                        "retrieve",
                        step_id=s.id,
                        inputs=s.model_dump(mode="json"),
                        outputs={
                            "discovered": outcome.discovered,
                            "evidence": len(outcome.evidence),
                        },
                        latency_ms=outcome.latency_ms,
                        tokens=budget.per_step.get(s.id, 0),
                        error=outcome.error,
                    )
    # Hits the evidence could not hold come next (previews, best first), then outlines.
    covered = admitted_ids | {
        target
        for e in admitted
        for target in _embedded_targets(docs, e.document_id, e.result.chunk_id)
    }
    unique_fallback: dict[str, AgenticResult] = {}
    for f in fallback:  # by step, then by rank: the whole question's hits first
        if f.chunk_id not in covered:
            unique_fallback.setdefault(f.chunk_id, f)
    kept_fallback: list[AgenticResult] = []
    limit = request.top_k + PART_PREVIEWS * (len(plan.steps) - 1)
    for f in list(unique_fallback.values())[:limit]:
        try:
            held = budget.reserve(_result_cost(f) + 4)
        except BudgetExhausted:
            exhausted = True
            break
        budget.commit(held, _result_cost(f) + 4, "fallback")
        kept_fallback.append(f)
    # Outlines last: admitted while budget lasts.
    kept_outlines: list[Outline] = []
    admitted_docs = {e.document_id for e in admitted}
    for outline in sorted(outlines, key=lambda o: -o.score):
        if outline.document_id not in admitted_docs:
            continue
        try:
            held = budget.reserve(tokens_of(outline.line) + 2)
        except BudgetExhausted:
            break
        budget.commit(held, tokens_of(outline.line) + 2, "outline")
        kept_outlines.append(outline)
    stop = "budget_exhausted" if exhausted else "completed"
    model_used += budget.per_step.get("navigator", 0)
    response = _fit(
        request,
        revision,
        plan,
        admitted,
        kept_outlines,
        kept_fallback,
        statuses,
        outcomes,
        budget,
        available,
        stop,
        started,
        model_used,
    )
    if recorder:
        recorder.add(
            "run",
            "agentic_search",
            inputs=request.model_dump(mode="json"),
            outputs={"results": len(response.results), "stop_reason": response.stop_reason},
            latency_ms=response.took_ms,
            tokens=response.budget.used,
            model=plan.planner,
        )
    return response


def _response(
    request: AgenticRequest,
    revision: Revision,
    plan: Plan,
    evidence: list[Evidence],
    outlines: list[Outline],
    fallback: list[AgenticResult],
    statuses: dict[str, str],
    budget: TokenBudget,
    available: int,
    truncated: bool,
    stop: str,
    started: float,
    model_used: int,
    outcomes: dict[str, StepOutcome] | None = None,
    used: int | None = None,
) -> AgenticResponse:
    outcomes = outcomes or {}
    results = sorted(
        (e.result for e in evidence), key=lambda r: (-r.agent_score, -r.discovery_score, r.chunk_id)
    )
    per_step = {
        s.id: sum(tokens_of(e.text) for e in evidence if e.step_id == s.id) for s in plan.steps
    }
    return AgenticResponse(
        query=request.query,
        namespace=request.namespace,
        revision=revision.number,
        evidence_text=render_evidence(evidence, outlines),
        results=results[: max(request.top_k, len(results))],
        fallback_results=fallback,
        plan=[
            StepReport(
                id=s.id,
                query=s.query,
                depends_on=s.depends_on,
                status=statuses.get(s.id, "skipped"),  # type: ignore[arg-type]
                tokens=per_step.get(s.id, 0),
                discovered=outcomes[s.id].discovered if s.id in outcomes else 0,
                sections_opened=len(
                    {(e.document_id, e.section_id) for e in outcomes[s.id].evidence}
                )
                if s.id in outcomes
                else 0,
                error=outcomes[s.id].error if s.id in outcomes else None,
            )
            for s in plan.steps
        ],
        planner=plan.planner,
        budget=BudgetReport(
            limit=budget.limit,
            used=used if used is not None else budget.limit,
            per_step=per_step,
            model_tokens=model_used,
            truncated=truncated,
            evidence_tokens_available=available,
        ),
        stop_reason=stop,  # type: ignore[arg-type]
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _fit(
    request: AgenticRequest,
    revision: Revision,
    plan: Plan,
    evidence: list[Evidence],
    outlines: list[Outline],
    fallback: list[AgenticResult],
    statuses: dict[str, str],
    outcomes: dict[str, StepOutcome],
    budget: TokenBudget,
    available: int,
    stop: str,
    started: float,
    model_used: int,
) -> AgenticResponse:
    """The hard invariant: tokens(serialized response) + model tokens ≤ limit. Estimates made the
    admission decisions; here the real payload is counted and trimmed from the lowest priority
    (outlines, then the context navigation added, then the hits' previews, then the weakest
    hits) until it fits."""
    evidence = sorted(
        evidence,
        key=lambda e: (-e.result.agent_score, -e.result.discovery_score, e.result.chunk_id),
    )
    outlines = list(outlines)
    fallback = list(fallback)
    truncated = stop == "budget_exhausted"
    while True:
        response = _response(
            request,
            revision,
            plan,
            evidence,
            outlines,
            fallback,
            statuses,
            budget,
            available,
            truncated,
            stop,
            started,
            model_used,
            outcomes,
        )
        total = tokens_of(response.model_dump_json()) + model_used
        if total <= budget.limit:
            final = response.model_copy(
                update={"budget": response.budget.model_copy(update={"used": total})}
            )
            if tokens_of(final.model_dump_json()) + model_used <= budget.limit:
                return final
        truncated, stop = True, "budget_exhausted"
        if outlines:
            outlines.pop()
        elif evidence and evidence[-1].result.agent_score < HIT_SCORE:
            evidence.pop()  # context before any hit, even a hit's preview
        elif fallback:
            fallback.pop()
        elif evidence:
            evidence.pop()
        else:
            raise BudgetTooSmall(total)
