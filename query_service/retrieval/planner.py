"""Planners turn a query into a DAG of retrieval steps (most queries: one step).

The rule-based planner is the default and needs no model: comparisons ("compare A and B",
"A vs B") become one step per side, a financial measure computed from several statements one
step per statement, multi-part questions one step per part, and a part that
refers back ("when did *it* …") or names no subject of its own depends on the first part and
borrows its subject. An
LLM planner, when a model is configured, proposes a plan as JSON; any timeout, provider error
or invalid plan falls back to the rule plan. No planner ever emits an answer step.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import ValidationError

from corpus_pipeline.contracts.agentic import MAX_PLAN_STEPS, AgenticRequest, Plan, PlanStep
from corpus_pipeline.finance.measures import STATEMENT_NAMES, expand, without_measures
from query_service.retrieval.instructions import search_text


class InvalidPlan(ValueError):
    pass


def validate_plan(steps: list[PlanStep]) -> list[PlanStep]:
    """Unique ids, known dependencies, no cycles, bounded size; returns the steps unchanged."""
    if not 1 <= len(steps) <= MAX_PLAN_STEPS:
        raise InvalidPlan(f"a plan has 1 to {MAX_PLAN_STEPS} steps, got {len(steps)}")
    ids = [s.id for s in steps]
    if len(set(ids)) != len(ids):
        raise InvalidPlan("step ids must be unique")
    known = set(ids)
    for step in steps:
        unknown = [d for d in step.depends_on if d not in known]
        if unknown:
            raise InvalidPlan(f"step {step.id} depends on unknown steps {unknown}")
        if step.id in step.depends_on:
            raise InvalidPlan(f"step {step.id} depends on itself")
    layers(steps)  # raises on cycles
    return steps


def layers(steps: list[PlanStep]) -> list[list[PlanStep]]:
    """Topological layers: every step's dependencies are in earlier layers."""
    remaining = {s.id: s for s in steps}
    done: set[str] = set()
    out: list[list[PlanStep]] = []
    while remaining:
        ready = [s for s in remaining.values() if set(s.depends_on) <= done]
        if not ready:
            raise InvalidPlan(f"dependency cycle among {sorted(remaining)}")
        ready.sort(key=lambda s: s.id)
        out.append(ready)
        for s in ready:
            done.add(s.id)
            del remaining[s.id]
    return out


class Planner(Protocol):
    name: str

    def plan(self, request: AgenticRequest) -> Plan: ...


_COMPARE = [
    re.compile(
        r"^(?P<lead>.*?)\b(?:compare|contrast)\s+(?P<a>.+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<b>.+?)[?.!]*$",
        re.I,
    ),
    re.compile(
        r"^(?P<lead>.*?)\bdifferences?\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)[?.!]*$", re.I
    ),
    re.compile(r"^(?P<lead>)(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)[?.!]*$", re.I),
]
_PART_SPLIT = re.compile(
    r"\?\s+|;\s+|,\s+and\s+(?=(?:what|when|where|who|which|how|why|is|are|did|does|do)\b)|\s+and\s+also\s+",
    re.I,
)
_BACK_REFERENCE = re.compile(
    r"\b(it|its|they|their|them|this|that|these|those|he|she|his|her)\b", re.I
)
_SUBJECT = re.compile(r"\b[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*|\b[\w-]*\d[\w-]*\b")


def _subject(text: str) -> str:
    """Capitalised names and codes of a part (skipping a leading question word)."""
    words = [m.group(0) for m in _SUBJECT.finditer(text)]
    first = text.split(maxsplit=1)[0] if text.split() else ""
    return " ".join(w for w in words if w != first)


def whole_question(request: AgenticRequest) -> str:
    """The question as the step that searches all of it asks it (white space folded)."""
    return " ".join(request.query.split())


class RulePlanner:
    name = "rule"

    def plan(self, request: AgenticRequest) -> Plan:
        query = whole_question(request)
        types = list(request.chunk_types)
        # The whole question is always the first step: its hits lead the evidence, so a split
        # plan never reads less than one search for the question would return.
        whole = PlanStep(id="s1", query=query, chunk_types=types)
        for pattern in _COMPARE:
            match = pattern.match(query)
            if match and len(match["a"].split()) <= 12 and len(match["b"].split()) <= 12:
                lead = match["lead"].strip()
                return Plan(
                    planner=self.name,
                    steps=[
                        whole,
                        PlanStep(id="s2", query=f"{lead} {match['a']}".strip(), chunk_types=types),
                        PlanStep(id="s3", query=f"{lead} {match['b']}".strip(), chunk_types=types),
                    ],
                )
        # A measure computed from several statements ("return on equity": the income statement
        # and the balance sheet) gets a step per statement, each asking for that statement of
        # the issuer and period the question names.
        expansion = expand(search_text(query))
        if len(expansion.statements) >= 2:
            subject = without_measures(search_text(query)).rstrip(" ?.!")
            return Plan(
                planner=self.name,
                steps=[
                    whole,
                    *(
                        PlanStep(
                            id=f"s{index}",
                            query=f"{subject} {STATEMENT_NAMES[statement]}",
                            chunk_types=types,
                        )
                        for index, statement in enumerate(
                            expansion.statements[: MAX_PLAN_STEPS - 1], start=2
                        )
                    ),
                ],
            )
        # Answer-format instructions ("Write the answer in int format") are never a step.
        parts = [
            p.strip(" ,?.") for p in _PART_SPLIT.split(search_text(query)) if len(p.split()) >= 3
        ]
        if len(parts) < 2:
            return Plan(planner=self.name, steps=[whole])
        steps: list[PlanStep] = []
        for index, part in enumerate(parts[: MAX_PLAN_STEPS - 1], start=2):
            depends: list[str] = []
            text = part
            # A later part that refers back ("when did *it* …") or names no subject of its own
            # ("… relying on the cash flow statement") is about the first part's subject.
            subject = _subject(steps[0].query) if steps else ""
            if index > 2 and (_BACK_REFERENCE.search(part) or (subject and not _subject(part))):
                depends = [steps[0].id]
                if subject and subject.lower() not in part.lower():
                    text = f"{part} {subject}"
            steps.append(
                PlanStep(id=f"s{index}", query=text, depends_on=depends, chunk_types=types)
            )
        return Plan(planner=self.name, steps=validate_plan([whole, *steps]))


PLAN_PROMPT = """You plan retrieval for a document search system. Split the user's query into at most {max_steps}
retrieval steps only when it asks for several things (comparisons, multi-part questions, lookups that need an
earlier result); most queries are ONE step. Never add a step that writes an answer. Reply in JSON:
{{"steps": [{{"id": "s1", "query": "...", "depends_on": [], "top_k": 10}}]}}
Query: {query}"""


class LLMPlanner:
    """Plans with a chat model (json mode); falls back to the rule plan on any failure."""

    name = "llm"

    def __init__(
        self, complete_json: Callable[[str], tuple[dict[str, Any], int]], fallback: Planner
    ) -> None:
        self._complete_json = complete_json
        self._fallback = fallback
        self.last_error: str | None = None
        self.tokens_used = 0

    def plan(self, request: AgenticRequest) -> Plan:
        self.last_error = None
        try:
            data, tokens = self._complete_json(
                PLAN_PROMPT.format(max_steps=MAX_PLAN_STEPS, query=request.query)
            )
            self.tokens_used += tokens
            raw_steps = data.get("steps") if isinstance(data, dict) else None
            if not isinstance(raw_steps, list):
                raise InvalidPlan("no steps list")
            steps = [
                PlanStep.model_validate({**s, "chunk_types": list(request.chunk_types)})
                if isinstance(s, dict)
                else None
                for s in raw_steps
            ]
            if any(s is None for s in steps):
                raise InvalidPlan("a step is not an object")
            return Plan(planner=self.name, steps=validate_plan([s for s in steps if s is not None]))
        except (InvalidPlan, ValidationError, TimeoutError, OSError, ValueError) as exc:
            self.last_error = type(exc).__name__
        except Exception as exc:  # provider errors of any client library
            self.last_error = type(exc).__name__
        plan = self._fallback.plan(request)
        return plan.model_copy(update={"planner": f"rule (fallback: {self.last_error})"})


def _client(settings: Any, model: str) -> Any:
    """An LLM client for one role model on the shared endpoint and rotated keys."""
    from query_service.retrieval.llm import LLMClient, LLMConfig

    keys = [k.strip() for k in settings.llm_api_keys.get_secret_value().split(",") if k.strip()]
    return LLMClient(
        LLMConfig(
            base_url=settings.llm_base_url,
            model=model,
            api_keys=keys or ["not-set"],
            requests_per_minute=settings.llm_requests_per_minute,
            timeout=settings.llm_timeout_seconds,
        )
    )


def make_planner(settings: Any) -> tuple[Planner, Callable[[], int]]:
    """(planner, model-token counter): rule-based unless a planner model is configured."""
    rule = RulePlanner()
    model = getattr(settings, "planner_model", "")
    if not model:
        return rule, lambda: 0
    from query_service.retrieval.llm import LLMError

    client = _client(settings, model)
    used = [0]

    def complete_json(prompt: str) -> tuple[dict[str, Any], int]:
        try:
            data, result = client.complete_json(
                [{"role": "user", "content": prompt}], max_tokens=512
            )
        except LLMError as exc:
            if exc.result is not None:  # an invalid reply still spent tokens: they count
                used[0] += exc.result.usage.total_tokens
            raise
        used[0] += result.usage.total_tokens
        return data, result.usage.total_tokens

    return LLMPlanner(complete_json, rule), lambda: used[0]


NAVIGATE_PROMPT = """You help a retrieval system decide which document sections to open for a query.
Choose at most {k} sections most likely to hold evidence. Reply in JSON: {{"open": [indices]}}.
Query: {query}
Sections:
{lines}"""


class LLMNavigator:
    """Lets a chat model choose among section outlines (json mode)."""

    def __init__(self, complete_json: Callable[[str], tuple[dict[str, Any], int]]) -> None:
        self._complete_json = complete_json

    def choose(self, query: str, outlines: list[str], k: int) -> tuple[list[int] | None, int]:
        lines = "\n".join(f"{i}. {line}" for i, line in enumerate(outlines))
        data, tokens = self._complete_json(NAVIGATE_PROMPT.format(k=k, query=query, lines=lines))
        raw = data.get("open") if isinstance(data, dict) else None
        if not isinstance(raw, list) or not all(isinstance(i, int) for i in raw):
            return None, tokens
        return [int(i) for i in raw], tokens


def make_navigator(settings: Any) -> LLMNavigator | None:
    """The model navigator when `navigator_model` is configured, else None (deterministic)."""
    model = getattr(settings, "navigator_model", "")
    if not model:
        return None
    from query_service.retrieval.llm import LLMError

    client = _client(settings, model)

    def complete_json(prompt: str) -> tuple[dict[str, Any], int]:
        try:
            data, result = client.complete_json(
                [{"role": "user", "content": prompt}], max_tokens=256
            )
        except LLMError as exc:
            if exc.result is not None:
                return {}, exc.result.usage.total_tokens
            raise
        return data, result.usage.total_tokens

    return LLMNavigator(complete_json)
