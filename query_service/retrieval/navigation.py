"""Agentic navigation: from a step's discovery hits, a bounded breadth-first walk of the
section tree, each section reached scored deterministically by the coverage of the step's
terms in its title, summary and content plus its proximity to the hits; the best ones are
opened (a model, when one is configured, may choose among their outlines instead)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Protocol

from corpus_pipeline.contracts.agentic import AgenticRequest, PlanStep
from corpus_pipeline.contracts.search import SearchResult
from corpus_pipeline.enrich.text import STOP_WORDS
from corpus_pipeline.index import channels as ch
from query_service.retrieval.budget import BudgetExhausted, TokenBudget
from query_service.retrieval.instructions import search_text
from query_service.retrieval.spelling import spelled
from query_service.snapshot.revision import Revision
from query_service.snapshot.sections import SectionCache, SectionPath, Sid

MAX_VISITED_SECTIONS = 60
NAVIGATOR_RESERVE = 1500
_STOP_STEMS = frozenset(t for w in STOP_WORDS for t in ch.analyze("content", w))

SectionKey = tuple[str, Sid]  # (document id, section id)
Scored = tuple[float, str, Sid]  # (score, document id, section id)


class Navigator(Protocol):
    """Chooses which candidate sections to open, from their outlines (title + summary)."""

    def choose(self, query: str, outlines: list[str], k: int) -> tuple[list[int] | None, int]:
        """Indices of the sections to open (None = no opinion) and the model tokens spent."""
        ...


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


def step_terms(revision: Revision, query: str) -> dict[str, float]:
    """A step's content terms (function words left out, misspellings corrected), IDF-weighted."""
    return _idf_weights(revision, _terms(spelled(revision.searcher, search_text(query))[0]))


def coverage(terms: dict[str, float], text: str) -> float:
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


def _excluded_path(path: SectionPath, request: AgenticRequest) -> bool:
    return any(list(path[: len(p)]) == p for p in request.exclude_section_paths if p)


def navigate(
    docs: SectionCache, hits: Sequence[SearchResult], max_depth: int
) -> tuple[dict[SectionKey, int], dict[SectionKey, float]]:
    """The sections reached from the hits (BFS over the section tree, bounded), each with its
    distance in hops, and its `proximity`: the best discovery score (relative to the step's
    best) of the hits a section holds, halved per hop of the tree away from them."""
    distance: dict[SectionKey, int] = {}
    proximity: dict[SectionKey, float] = {}
    frontier: list[SectionKey] = []
    best_score = max((r.score for r in hits), default=0.0) or 1.0
    for result in hits:
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
    while frontier and depth < max_depth and len(distance) < MAX_VISITED_SECTIONS:
        depth += 1
        nxt: list[SectionKey] = []
        for document_id, sid in frontier:
            for near in docs.neighbours(document_id, sid):
                key = (document_id, near)
                proximity[key] = max(proximity.get(key, 0.0), proximity[(document_id, sid)] / 2)
                if key not in distance and len(distance) < MAX_VISITED_SECTIONS:
                    distance[key] = depth
                    nxt.append(key)
        frontier = nxt
    return distance, proximity


def score_sections(
    docs: SectionCache,
    request: AgenticRequest,
    terms: dict[str, float],
    reached: Iterable[SectionKey],
    proximity: dict[SectionKey, float],
) -> list[Scored]:
    """The reached sections a request does not exclude, best first: coverage of the step's
    terms in the heading and in the content, plus proximity to the hits for a section that
    matches any of them at all."""
    scored: list[Scored] = []
    for document_id, sid in reached:
        if _excluded_path(docs.path(document_id, sid), request):
            continue
        section = docs.sections(document_id).get(sid)
        heading = f"{section['title']} {section['summary']}" if section else ""
        body = " ".join(r["content"] for r in docs.rows_in(document_id, sid))
        score = 0.35 * coverage(terms, heading) + 0.35 * coverage(terms, body)
        if score > 0:  # proximity only ranks sections that match the step's terms at all
            score += 0.3 * proximity.get((document_id, sid), 0.0)
        scored.append((round(score, 4), document_id, sid))
    scored.sort(key=lambda s: (-s[0], s[1], docs.order(s[1], s[2])))
    return scored


def choose_sections(
    docs: SectionCache,
    step: PlanStep,
    scored: list[Scored],
    k: int,
    navigator: Navigator | None = None,
    budget: TokenBudget | None = None,
) -> list[Scored]:
    """The sections to open: the `k` best matching ones, or the model's choice among them."""
    opened = [s for s in scored if s[0] > 0][:k]
    if navigator is not None and budget is not None and len([s for s in scored if s[0] > 0]) > 1:
        opened = _model_choice(navigator, budget, docs, step, scored, k) or opened
    return opened


def _model_choice(
    navigator: Navigator,
    budget: TokenBudget,
    docs: SectionCache,
    step: PlanStep,
    scored: list[Scored],
    k: int,
) -> list[Scored] | None:
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
