"""Agentic search: a planned DAG of retrieval steps under one shared token budget.

Each step discovers (classic fused search) and navigates the section tree around its hits
(`steps`); independent steps run concurrently. The evidence is then read under the budget
(`passages`): the whole question's hits first, in classic rank order, then each part's best
hits, then what reads on from them, each chunk's text once, in `evidence_text`, with one
citation per passage in `results`. The budget buys evidence: the response's frame is reserved
first, a hit that does not fit whole is cut at a sentence or row boundary rather than left out,
and the final serialized response (plus model calls) never exceeds the budget. Retrieval returns
evidence; it never writes an answer.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.agentic import (
    AgenticRequest,
    AgenticResponse,
    BudgetReport,
    Plan,
    PlanStep,
    StepReport,
)
from query_service.retrieval.budget import BudgetExhausted, TokenBudget, tokens_of
from query_service.retrieval.evidence import (
    CUT_MARK,
    Passage,
    Piece,
    cut_text,
    json_tokens,
    piece_of,
    render,
)
from query_service.retrieval.navigation import Navigator
from query_service.retrieval.passages import (
    MIN_TEXT,
    PART_HITS,
    Follow,
    Reading,
    interleave,
    read_evidence,
)
from query_service.retrieval.planner import Planner, layers, whole_question
from query_service.retrieval.steps import StepOutcome, allowed_types, run_step
from query_service.snapshot.records import RunRecorder
from query_service.snapshot.revision import Revision
from query_service.snapshot.sections import SectionCache

STEP_WORKERS = 4
PLANNER_RESERVE = 2048
FURTHER = 2  # the whole question is discovered this many times its top k deep
FRAME_MARGIN = 24  # tokens kept back for the figures the frame holds once known
# Room for a first passage (its citation, heading line and a sentence or two); a plan whose
# frame leaves less is read as the whole question alone.
LEAST_PASSAGE = 220


class BudgetTooSmall(ValueError):
    """Even an answer without evidence would not fit: the caller gets a 422 naming the field."""

    def __init__(self, needed: int) -> None:
        self.needed = needed
        super().__init__(
            f"token_budget is too small for this query and plan (needs at least {needed})"
        )


@dataclass
class _Run:
    revision: Revision
    request: AgenticRequest
    budget: TokenBudget
    docs: SectionCache
    outcomes: dict[str, StepOutcome] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)


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
    frame = _frame_cost(run, plan, model_used, started)
    if len(plan.steps) > 1 and frame + LEAST_PASSAGE > run.budget.remaining:
        # A split plan's frame would leave no room to read: the whole question alone.
        plan = plan.model_copy(update={"steps": plan.steps[:1]})
        frame = _frame_cost(run, plan, model_used, started)
    try:
        run.budget.reserve(frame)
    except BudgetExhausted as exc:
        raise BudgetTooSmall(frame + model_used) from exc
    with ThreadPoolExecutor(max_workers=STEP_WORKERS, thread_name_prefix="agentic-step") as pool:
        for layer in layers(plan.steps):
            _run_layer(run, pool, layer, navigator)
    model_used += run.budget.per_step.get("navigator", 0)
    reading = _read(run, plan, frame)
    if not reading.passages and any(o.hits for o in run.outcomes.values()):
        raise BudgetTooSmall(frame + model_used + LEAST_PASSAGE)
    response = _fit(run, plan, reading, started, model_used)
    if recorder:
        _record(recorder, run, plan, response)
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


def _frame_cost(run: _Run, plan: Plan, model_used: int, started: float) -> int:
    """Tokens of the response around the evidence (reserved first, so evidence never crowds
    it out), with room for its figures."""
    frame = _response(run, plan, [], "budget_exhausted", started, model_used, 0, 0)
    return tokens_of(frame.model_dump_json()) + FRAME_MARGIN + 4 * len(plan.steps)


def _run_layer(
    run: _Run, pool: ThreadPoolExecutor, layer: Sequence[PlanStep], navigator: Navigator | None
) -> None:
    """A layer's steps side by side; a failing step must not lose the others' evidence."""
    lead = _lead(run.request, layer)
    futures = {
        step.id: pool.submit(
            run_step,
            run.revision,
            run.docs,
            run.request,
            step,
            max(step.top_k, FURTHER * run.request.top_k) if step is lead else step.top_k,
            navigator,
            run.budget,
            step is lead,
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


def _lead(request: AgenticRequest, steps: Sequence[PlanStep]) -> PlanStep | None:
    """The step that searches the whole question (a rule plan's first; a model's plan may have
    none)."""
    whole = whole_question(request)
    return next((s for s in steps if s.query == whole), None)


def _read(run: _Run, plan: Plan, frame: int) -> Reading:
    """The evidence under what is left of the budget: the question's top k hits in classic
    order and each part's best ones first; then what reads on from them."""
    lead = _lead(run.request, plan.steps) or plan.steps[0]
    top_k = run.request.top_k
    main = run.outcomes[lead.id]
    parts = [run.outcomes[s.id] for s in plan.steps if s.id != lead.id]
    lead_hits = {p.chunk_id for p in main.hits[:top_k]}
    # The question within its best document reads like one more part (`steps.run_step`).
    new = [
        [p for p in hits if p.chunk_id not in lead_hits]
        for hits in (main.within, *(o.hits for o in parts))
    ]
    core = [*main.hits[:top_k], *interleave([hits[:PART_HITS] for hits in new])]
    further = [*main.hits[top_k:], *interleave([hits[PART_HITS:] for hits in new])]
    context = interleave([o.context for o in (main, *parts)])
    return read_evidence(
        core,
        further,
        context,
        _follower(run),
        room=run.budget.remaining,
        frame=frame,
        limit=run.budget.limit,
    )


def _follower(run: _Run) -> Follow:
    """The chunk a piece reads on into (`back`: back into): the next (previous) one in document
    order that the request returns, in the piece's section unless `across` (None at the end, or
    where the evidence already holds it)."""
    allowed = allowed_types(run.request, PlanStep(id="follow", query="follow"))
    docs = run.docs

    def follow(piece: Piece, read: set[str], across: bool, back: bool) -> Piece | None:
        if piece.order < 0:
            return None
        document_id = piece.document_id
        rows = docs.chunks(document_id) if across else docs.rows_in(document_id, piece.section_id)
        if back:
            nearby = rows[: bisect_left(rows, piece.order, key=_order)][::-1]
        else:
            nearby = rows[bisect_right(rows, piece.order, key=_order) :]
        for row in nearby:
            if row["chunk_id"] in piece.embeds or ChunkType(row["chunk_type"]) not in allowed:
                continue
            if row["chunk_id"] in read:
                return None
            sid = piece.section_id if not across else (row.get("section_id") or "")
            path = piece.section_path if not across else tuple(row["section_path"] or ())
            by_id = docs.by_id(document_id)
            return piece_of(run.revision.namespace, row, by_id, path, sid, step_id=piece.step_id)
        return None

    return follow


def _order(row: dict[str, Any]) -> int:
    return int(row["sort_order"])


def _response(
    run: _Run,
    plan: Plan,
    passages: Sequence[Passage],
    stop: str,
    started: float,
    model_used: int,
    available: int,
    unread: int,
) -> AgenticResponse:
    request, budget = run.request, run.budget
    evidence_text, citations = render(passages)
    per_step = {s.id: 0 for s in plan.steps}
    for passage in passages:
        step_id = passage.anchor.step_id
        if step_id in per_step:
            per_step[step_id] += tokens_of(passage.text())
    return AgenticResponse(
        query=request.query,
        namespace=request.namespace,
        revision=run.revision.number,
        evidence_text=evidence_text,
        results=citations,
        plan=[_step_report(s, run, per_step, request) for s in plan.steps],
        planner=plan.planner,
        budget=BudgetReport(
            limit=budget.limit,
            used=budget.limit,
            model_tokens=model_used,
            evidence_tokens_available=available,
            unread=unread,
        ),
        stop_reason=stop,  # type: ignore[arg-type]
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _step_report(
    s: PlanStep, run: _Run, per_step: dict[str, int], request: AgenticRequest
) -> StepReport:
    outcome = run.outcomes.get(s.id)
    return StepReport(
        id=s.id,
        query=None if s.query == whole_question(request) else s.query,
        depends_on=s.depends_on,
        status=run.statuses.get(s.id, "skipped"),  # type: ignore[arg-type]
        tokens=per_step.get(s.id, 0),
        discovered=len(outcome.hits) if outcome else 0,
        error=outcome.error if outcome else None,
    )


def _found(run: _Run) -> tuple[int, list[str]]:
    """Tokens of all evidence found (hits and context, each chunk once) and the hits' ids."""
    pieces: dict[str, Piece] = {}
    hits: list[str] = []
    for outcome in run.outcomes.values():
        for piece in outcome.hits:
            pieces.setdefault(piece.chunk_id, piece)
            hits.append(piece.chunk_id)
        for piece in outcome.context:
            pieces.setdefault(piece.chunk_id, piece)
    return sum(tokens_of(p.text) for p in pieces.values()), list(dict.fromkeys(hits))


def _fit(
    run: _Run, plan: Plan, reading: Reading, started: float, model_used: int
) -> AgenticResponse:
    """The hard invariant: tokens(serialized response) + model tokens ≤ limit. The reading was
    planned on estimates; here the real payload is counted, and while it is over, the last
    passage gives way: context first, then the last chunk it read on into, then its text is cut
    shorter — the first passage is never dropped."""
    passages = list(reading.passages)
    available, hits = _found(run)
    exhausted = reading.exhausted
    limit = run.budget.limit
    while True:
        read = {c for p in passages for c in p.chunk_ids()}
        unread = sum(1 for c in hits if c not in read)
        stop = "budget_exhausted" if exhausted else "completed"
        response = _response(run, plan, passages, stop, started, model_used, available, unread)
        total = tokens_of(response.model_dump_json()) + model_used
        if total <= limit:
            final = response.model_copy(
                update={"budget": response.budget.model_copy(update={"used": total})}
            )
            if tokens_of(final.model_dump_json()) + model_used <= limit:
                return final
            total = limit + 1
        exhausted = True
        if not passages:
            raise BudgetTooSmall(total)
        passages = _give_way(passages, total - limit)
        if not passages:  # found evidence is never answered with none: too small a budget
            raise BudgetTooSmall(total + MIN_TEXT)


def _give_way(passages: list[Passage], excess: int) -> list[Passage]:
    """The passages with about `excess` tokens fewer: the last one dropped when it is not a
    hit; else its last chunk cut shorter, or the chunk it read furthest from its anchor
    dropped; else the last hit dropped, except the first, whose text is cut as short as it
    must be (an empty list: not even that fits)."""
    last = passages[-1]
    if len(passages) > 1 and not last.core:
        return passages[:-1]
    now = json_tokens(last.cut + CUT_MARK) if last.cut is not None else last.last.cost
    shorter = cut_text(last.last.text, now - excess - 1)
    alone = len(passages) == 1 and len(last.pieces) == 1
    if shorter is not None and (alone or json_tokens(shorter) >= MIN_TEXT):
        return [*passages[:-1], last.but(list(last.pieces), shorter)]
    if len(last.pieces) > 1:
        far = last.pieces[0] if last.anchor_at >= len(last.pieces) - 1 else last.pieces[-1]
        return [*passages[:-1], last.but([p for p in last.pieces if p is not far], None)]
    return passages[:-1]


def _record(recorder: RunRecorder, run: _Run, plan: Plan, response: AgenticResponse) -> None:
    for s in plan.steps:
        outcome = run.outcomes.get(s.id)
        recorder.add(
            "step",
            "retrieve",
            step_id=s.id,
            inputs=s.model_dump(mode="json"),
            outputs={
                "discovered": len(outcome.hits) if outcome else 0,
                "context": len(outcome.context) if outcome else 0,
            },
            latency_ms=outcome.latency_ms if outcome else 0.0,
            tokens=next((r.tokens for r in response.plan if r.id == s.id), 0),
            error=outcome.error if outcome else None,
        )
    recorder.add(
        "run",
        "agentic_search",
        inputs=run.request.model_dump(mode="json"),
        outputs={"results": len(response.results), "stop_reason": response.stop_reason},
        latency_ms=response.took_ms,
        tokens=response.budget.used,
        model=plan.planner,
    )
