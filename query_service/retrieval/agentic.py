"""Agentic search: a planned DAG of retrieval steps under one shared token budget.

Each step runs three phases (`steps`): discovery (classic fused search), bounded breadth-first
navigation of the section tree around the discovered sections (`navigation`: scored
deterministically by coverage of the step's terms in titles, summaries and content, plus
proximity to discovery hits), and evidence rendering (only the chosen sections' raw segments
are loaded; embedded tables/images resolved system-side). Independent steps run concurrently.
Evidence is admitted against the budget best-first: the discovery hits first, in discovery
order (the whole question is always the first step), so the agent never reads less than
classic search would return; the context navigation adds comes after every hit. The final
serialized response (plus model calls) never exceeds the budget. Retrieval returns evidence;
it never writes an answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from corpus_pipeline.contracts.agentic import (
    AgenticRequest,
    AgenticResponse,
    AgenticResult,
    BudgetReport,
    Plan,
    PlanStep,
    StepReport,
)
from query_service.retrieval.budget import BudgetExhausted, TokenBudget, tokens_of
from query_service.retrieval.evidence import (
    HIT_SCORE,
    PART_PREVIEWS,
    Evidence,
    Outline,
    Previews,
    StepOutcome,
    embedded_targets,
    preview_order,
    render_evidence,
    result_cost,
)
from query_service.retrieval.navigation import Navigator
from query_service.retrieval.planner import Planner, layers
from query_service.retrieval.steps import run_step
from query_service.snapshot.records import RunRecorder
from query_service.snapshot.revision import Revision
from query_service.snapshot.sections import SectionCache

STEP_WORKERS = 4
PLANNER_RESERVE = 2048


class BudgetTooSmall(ValueError):
    """Even an answer without evidence would not fit: the caller gets a 422 naming the field."""

    def __init__(self, needed: int) -> None:
        self.needed = needed
        super().__init__(
            f"token_budget is too small for this query and plan (needs at least {needed})"
        )


@dataclass
class _Run:
    """A run under way: its budget, each step's outcome and status, and the evidence, outlines
    and fallback results gathered so far."""

    revision: Revision
    request: AgenticRequest
    budget: TokenBudget
    docs: SectionCache
    outcomes: dict[str, StepOutcome] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    admitted: list[Evidence] = field(default_factory=list)
    admitted_ids: set[str] = field(default_factory=set)
    outlines: list[Outline] = field(default_factory=list)
    fallback: list[AgenticResult] = field(default_factory=list)
    available: int = 0  # tokens of all evidence found, admitted or not
    exhausted: bool = False
    hits_left_out: bool = False


def agentic_search(
    revision: Revision,
    request: AgenticRequest,
    planner: Planner,
    recorder: RunRecorder | None = None,
    model_tokens: Callable[[], int] | None = None,
    navigator: Navigator | None = None,
) -> AgenticResponse:
    started = time.perf_counter()
    run = _Run(revision, request, TokenBudget(request.token_budget), SectionCache.of(revision))
    plan, model_used = _plan(run, planner, recorder, model_tokens)
    # Skeleton of the response: reserved up front so evidence can never crowd it out.
    skeleton = _response(run, plan, [], [], [], False, "completed", started, model_used)
    skeleton_cost = tokens_of(skeleton.model_dump_json()) + 64 + 40 * len(plan.steps)
    try:
        run.budget.reserve(skeleton_cost)
    except BudgetExhausted as exc:
        raise BudgetTooSmall(skeleton_cost + model_used) from exc
    with ThreadPoolExecutor(max_workers=STEP_WORKERS, thread_name_prefix="agentic-step") as pool:
        for layer in layers(plan.steps):
            if run.exhausted:
                for step in layer:
                    run.statuses[step.id] = "skipped"
                continue
            _run_layer(run, pool, layer, navigator)
            _admit_layer(run, layer)
            _close_layer(run, layer, recorder)
    # Hits the evidence could not hold come next (previews, best first), then outlines.
    kept_fallback = _admit_fallback(run, plan)
    kept_outlines = _admit_outlines(run)
    stop = "budget_exhausted" if run.exhausted else "completed"
    model_used += run.budget.per_step.get("navigator", 0)
    response = _fit(run, plan, kept_outlines, kept_fallback, stop, started, model_used)
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


def _plan(
    run: _Run,
    planner: Planner,
    recorder: RunRecorder | None,
    model_tokens: Callable[[], int] | None,
) -> tuple[Plan, int]:
    """The plan and the model tokens it cost (an LLM planner reserves before it calls and
    commits what it used)."""
    budget = run.budget
    model_used = 0
    reservation = (
        budget.reserve(min(PLANNER_RESERVE, budget.remaining)) if planner.name == "llm" else 0
    )
    before = model_tokens() if model_tokens else 0
    plan_started = time.perf_counter()
    plan: Plan = planner.plan(run.request)
    if reservation:
        model_used = (model_tokens() if model_tokens else 0) - before
        budget.commit(reservation, model_used, "planner")
    if recorder:
        recorder.add(
            "step",
            "plan",
            inputs={"query": run.request.query},
            outputs=plan.model_dump(mode="json"),
            latency_ms=(time.perf_counter() - plan_started) * 1000,
            tokens=model_used,
            model=plan.planner,
        )
    return plan, model_used


def _run_layer(
    run: _Run, pool: ThreadPoolExecutor, layer: Sequence[PlanStep], navigator: Navigator | None
) -> None:
    """A layer's steps side by side; a failing step must not lose the others' evidence."""
    futures = {
        step.id: pool.submit(
            run_step, run.revision, run.docs, run.request, step, navigator, run.budget
        )
        for step in layer
    }
    for step in layer:
        try:
            run.outcomes[step.id] = futures[step.id].result()
            run.statuses[step.id] = "done"
        except Exception as exc:  # a failing step must not lose the others' evidence
            run.outcomes[step.id] = StepOutcome(step=step, error=type(exc).__name__)
            run.statuses[step.id] = "failed"


def _admit_layer(run: _Run, layer: Sequence[PlanStep]) -> None:
    """The layer's evidence admitted best first while the budget holds it. Room for a preview
    of every hit is held first: a hit the evidence cannot hold whole is still returned (as a
    fallback result), so the agent never sees fewer places than classic search would return."""
    candidates = [
        e
        for s in layer
        for e in run.outcomes[s.id].evidence
        if e.result.chunk_id not in run.admitted_ids
    ]
    candidates.sort(
        key=lambda e: (-e.result.agent_score, -e.result.discovery_score, e.result.chunk_id)
    )
    previews = Previews(
        run.budget, preview_order(layer, run.outcomes, run.request.top_k), run.admitted_ids
    )
    previews.hold()
    seen_layer: set[str] = set()
    for item in candidates:
        if item.result.chunk_id in seen_layer:
            continue
        seen_layer.add(item.result.chunk_id)
        _admit(run, item, previews)
    run.budget.release(sum(previews.held.values()))  # the fallback admission spends it


def _admit(run: _Run, item: Evidence, previews: Previews) -> None:
    """One piece of evidence, if it fits (what it covers needs no preview: that room is
    freed first)."""
    budget = run.budget
    cost = tokens_of(item.text) + result_cost(item.result) + 24
    run.available += cost
    hit = item.result.agent_score >= HIT_SCORE
    if run.hits_left_out:
        # Hits are read in rank order: once one is left out (a preview), later ones are
        # previews after it, and context is read only once every hit is.
        return
    covers = [
        c
        for c in dict.fromkeys(  # a table embedded twice is covered once
            (
                item.result.chunk_id,
                *embedded_targets(run.docs, item.document_id, item.result.chunk_id),
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
        run.exhausted = True  # this one does not fit; smaller evidence still may
        run.hits_left_out |= hit  # it stays a (preview) fallback result
        return
    for c in covers:
        del previews.held[c]
    budget.commit(held, cost, item.step_id)
    run.admitted.append(item)
    run.admitted_ids.add(item.result.chunk_id)
    if hit:
        previews.hold()


def _close_layer(run: _Run, layer: Sequence[PlanStep], recorder: RunRecorder | None) -> None:
    """The layer's outlines and fallback results kept for later admission; each step
    recorded."""
    for s in layer:
        outcome = run.outcomes[s.id]
        run.outlines.extend(outcome.outlines)
        run.fallback.extend(f for f in outcome.fallback if f.chunk_id not in run.admitted_ids)
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
                tokens=run.budget.per_step.get(s.id, 0),
                error=outcome.error,
            )


def _admit_fallback(run: _Run, plan: Plan) -> list[AgenticResult]:
    """The hits no evidence covers, as previews: by step, then by rank (the whole question's
    hits first), while the budget holds them."""
    covered = run.admitted_ids | {
        target
        for e in run.admitted
        for target in embedded_targets(run.docs, e.document_id, e.result.chunk_id)
    }
    unique_fallback: dict[str, AgenticResult] = {}
    for f in run.fallback:  # by step, then by rank: the whole question's hits first
        if f.chunk_id not in covered:
            unique_fallback.setdefault(f.chunk_id, f)
    kept: list[AgenticResult] = []
    limit = run.request.top_k + PART_PREVIEWS * (len(plan.steps) - 1)
    for f in list(unique_fallback.values())[:limit]:
        try:
            held = run.budget.reserve(result_cost(f) + 4)
        except BudgetExhausted:
            run.exhausted = True
            break
        run.budget.commit(held, result_cost(f) + 4, "fallback")
        kept.append(f)
    return kept


def _admit_outlines(run: _Run) -> list[Outline]:
    """Outlines last, of the documents evidence was admitted from: while budget lasts."""
    kept: list[Outline] = []
    admitted_docs = {e.document_id for e in run.admitted}
    for outline in sorted(run.outlines, key=lambda o: -o.score):
        if outline.document_id not in admitted_docs:
            continue
        try:
            held = run.budget.reserve(tokens_of(outline.line) + 2)
        except BudgetExhausted:
            break
        run.budget.commit(held, tokens_of(outline.line) + 2, "outline")
        kept.append(outline)
    return kept


def _response(
    run: _Run,
    plan: Plan,
    evidence: list[Evidence],
    outlines: list[Outline],
    fallback: list[AgenticResult],
    truncated: bool,
    stop: str,
    started: float,
    model_used: int,
) -> AgenticResponse:
    """The response of what is admitted (before the run, the skeleton: nothing found yet)."""
    request, budget = run.request, run.budget
    results = sorted(
        (e.result for e in evidence), key=lambda r: (-r.agent_score, -r.discovery_score, r.chunk_id)
    )
    per_step = {
        s.id: sum(tokens_of(e.text) for e in evidence if e.step_id == s.id) for s in plan.steps
    }
    return AgenticResponse(
        query=request.query,
        namespace=request.namespace,
        revision=run.revision.number,
        evidence_text=render_evidence(evidence, outlines),
        results=results[: max(request.top_k, len(results))],
        fallback_results=fallback,
        plan=[_step_report(s, run.statuses, per_step, run.outcomes) for s in plan.steps],
        planner=plan.planner,
        budget=BudgetReport(
            limit=budget.limit,
            used=budget.limit,
            per_step=per_step,
            model_tokens=model_used,
            truncated=truncated,
            evidence_tokens_available=run.available,
        ),
        stop_reason=stop,  # type: ignore[arg-type]
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _step_report(
    s: PlanStep,
    statuses: dict[str, str],
    per_step: dict[str, int],
    outcomes: dict[str, StepOutcome],
) -> StepReport:
    outcome = outcomes.get(s.id)
    return StepReport(
        id=s.id,
        query=s.query,
        depends_on=s.depends_on,
        status=statuses.get(s.id, "skipped"),  # type: ignore[arg-type]
        tokens=per_step.get(s.id, 0),
        discovered=outcome.discovered if outcome else 0,
        sections_opened=len({(e.document_id, e.section_id) for e in outcome.evidence})
        if outcome
        else 0,
        error=outcome.error if outcome else None,
    )


def _fit(
    run: _Run,
    plan: Plan,
    outlines: list[Outline],
    fallback: list[AgenticResult],
    stop: str,
    started: float,
    model_used: int,
) -> AgenticResponse:
    """The hard invariant: tokens(serialized response) + model tokens ≤ limit. Estimates made the
    admission decisions; here the real payload is counted and trimmed from the lowest priority
    (outlines, then the context navigation added, then the hits' previews, then the weakest
    hits) until it fits."""
    evidence = sorted(
        run.admitted,
        key=lambda e: (-e.result.agent_score, -e.result.discovery_score, e.result.chunk_id),
    )
    outlines = list(outlines)
    fallback = list(fallback)
    truncated = stop == "budget_exhausted"
    while True:
        response = _response(
            run, plan, evidence, outlines, fallback, truncated, stop, started, model_used
        )
        total = tokens_of(response.model_dump_json()) + model_used
        if total <= run.budget.limit:
            final = response.model_copy(
                update={"budget": response.budget.model_copy(update={"used": total})}
            )
            if tokens_of(final.model_dump_json()) + model_used <= run.budget.limit:
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
