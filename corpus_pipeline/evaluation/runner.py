"""Every question through the real query path, and the naive floor beside it.

The path is the query service itself: in-process, the `QueryService` object that the HTTP
routes call (same access check, answer cache and statistics; no copy of search logic), or a
running service over HTTP (`POST /v1/search` with an API key). Each answer is mapped to the
results as a user reads them: classic results in rank order; agentic results as the agent reads
its answer, the `results` in order, each with its passage's text (its span of
`evidence_text`), with the evidence tokens the budget bought (the plan's steps' `tokens`). A
question the service refuses (422) is a miss with its reason; a run
that cannot go on (no namespace, a refused key, no service) raises `EvalError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Protocol

import httpx
from pydantic import ValidationError

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.contracts.agentic import AgenticRequest, AgenticResponse
from corpus_pipeline.contracts.evaluation import (
    EvalMode,
    EvalQuestion,
    EvalRun,
    QuestionResult,
    SystemName,
    SystemResult,
)
from corpus_pipeline.contracts.keys import Principal
from corpus_pipeline.contracts.search import (
    CitedChunk,
    SearchFilters,
    SearchRequest,
    SearchResponse,
)
from corpus_pipeline.evaluation.baseline import NaiveBaseline
from corpus_pipeline.evaluation.metrics import grouped, metrics_of, per_question
from corpus_pipeline.evaluation.questions import QuestionFile
from corpus_pipeline.evaluation.relevance import Hit, judge, kind_groups
from query_service.config import ServiceSettings
from query_service.service import QueryService

Request = SearchRequest | AgenticRequest
Progress = Callable[[int, int], None]


PAGE = 500  # documents per listing page


class EvalError(CorpusError):
    """The run cannot go on; the message names what failed (never a key)."""


class QuestionRefused(Exception):
    """The service refused one question (its reason); the run goes on."""


class QueryPath(Protocol):
    """Where questions are sent: the JSON answer and the revision that answered."""

    target: str

    def send(self, request: Request) -> tuple[bytes, int | None]: ...

    def documents(self, namespace: str) -> list[tuple[str, str]]:
        """(source file name, document id) of every document of the namespace."""
        ...

    def close(self) -> None: ...


class InProcess:
    """The service object the HTTP routes call, run in this process over the local home,
    acting as a reader of the one namespace."""

    target = "in-process"

    def __init__(self, settings: ServiceSettings, namespace: str) -> None:
        from query_service.snapshot.revision import NamespaceNotFound

        self.settings = settings
        self.service = QueryService(settings)
        self.service.start()
        self.principal = Principal(name="corpus-eval", namespaces=frozenset({namespace}))
        try:
            self.service.revision(self.principal, namespace)
        except NamespaceNotFound as exc:
            self.close()
            raise EvalError(
                f"{exc} in {settings.published_dir} (run `corpus ingest` or `corpus publish` "
                "first, or give --url of a running service)"
            ) from exc

    def send(self, request: Request) -> tuple[bytes, int | None]:
        from query_service.retrieval.agentic import BudgetTooSmall
        from query_service.snapshot.revision import NamespaceNotFound

        try:
            return self.service.search_with_revision(self.principal, request)
        except BudgetTooSmall as exc:
            raise QuestionRefused(f"token_budget: {exc}") from exc
        except NamespaceNotFound as exc:
            raise EvalError(str(exc)) from exc

    def documents(self, namespace: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        while True:
            page = self.service.documents(self.principal, namespace, len(out), PAGE)
            out += [(d.source_file_name, d.document_id) for d in page.items]
            if len(page.items) < PAGE:
                return out

    def close(self) -> None:
        self.service.stop()


class OverHttp:
    """A running query service: `POST /v1/search` with the key as a bearer token."""

    def __init__(self, url: str, api_key: str, timeout: float = 120.0) -> None:
        self.target = url.rstrip("/")
        self.client = httpx.Client(
            base_url=self.target,
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout,
        )

    def send(self, request: Request) -> tuple[bytes, int | None]:
        try:
            response = self.client.post(
                "/v1/search",
                content=request.model_dump_json(),
                headers={"Content-Type": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise EvalError(f"no query service answers at {self.target} ({exc})") from exc
        if response.status_code == 200:
            revision = response.headers.get("X-Corpus-Revision")
            return response.content, int(revision) if revision else None
        detail = _detail(response)
        if response.status_code == 422:
            raise QuestionRefused(detail)
        if response.status_code in (401, 403, 503):
            raise EvalError(f"{self.target} refused the key ({response.status_code}: {detail})")
        raise EvalError(f"{self.target} answered {response.status_code}: {detail}")

    def documents(self, namespace: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        while True:
            params: dict[str, str | int] = {
                "namespace": namespace,
                "offset": len(out),
                "limit": PAGE,
            }
            try:
                response = self.client.get("/v1/documents", params=params)
            except httpx.HTTPError as exc:
                raise EvalError(f"no query service answers at {self.target} ({exc})") from exc
            if response.status_code != 200:
                raise EvalError(
                    f"{self.target} answered {response.status_code}: {_detail(response)}"
                )
            items = response.json()["items"]
            out += [(d["source_file_name"], d["document_id"]) for d in items]
            if len(items) < PAGE:
                return out

    def close(self) -> None:
        self.client.close()


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    return str(body.get("detail", body)) if isinstance(body, dict) else str(body)[:300]


def _hit(result: CitedChunk) -> Hit:
    return Hit(
        document_id=result.document_id,
        chunk_id=result.chunk_id,
        source_file_name=result.source_file_name,
        content=result.content,
        pages=tuple(result.pages),
        section_path=tuple(result.section_path),
    )


def primary_answer(response: AgenticResponse) -> list[Hit]:
    """The agentic answer as the agent reads it: its results in order, each with its passage's
    text."""
    return [
        Hit(
            document_id=c.document_id,
            chunk_id=c.chunk_id,
            source_file_name=c.source_file_name,
            content=text,
            pages=tuple(c.pages),
            section_path=tuple(c.section_path),
        )
        for c, text in response.passages()
    ]


@dataclass(frozen=True)
class Asked:
    """One answer as the scorer needs it."""

    hits: list[Hit]
    revision: int | None
    evidence_tokens: int | None = None


def parse_answer(body: bytes, revision: int | None, mode: EvalMode) -> Asked:
    """The answer body of `mode` as hits in reading order (`EvalError` when it is not one)."""
    try:
        if mode == "agentic":
            agentic = AgenticResponse.model_validate_json(body)
            tokens = sum(step.tokens for step in agentic.plan)
            hits = primary_answer(agentic)
            return Asked(hits, revision or agentic.revision, tokens)
        classic = SearchResponse.model_validate_json(body)
    except ValidationError as exc:
        raise EvalError(f"the service's answer is not a {mode} search response: {exc}") from exc
    return Asked([_hit(r) for r in classic.results], revision or classic.revision)


def request_for(
    question: EvalQuestion,
    namespace: str,
    mode: EvalMode,
    top_k: int,
    budget: int,
    document_id: str | None = None,
) -> Request:
    """The request a user would send for the question (a ValidationError for one the contract
    refuses, such as an over-long question); within one document when `document_id` is given
    (an agent that already holds the document filters by it)."""
    filters = SearchFilters(document_ids=[document_id]) if document_id else SearchFilters()
    if mode == "agentic":
        return AgenticRequest(
            mode="agentic",
            query=question.question,
            namespace=namespace,
            top_k=top_k,
            token_budget=budget,
            filters=filters,
        )
    return SearchRequest(query=question.question, namespace=namespace, top_k=top_k, filters=filters)


@dataclass(frozen=True)
class RunSettings:
    """What every system of one run shares."""

    namespace: str
    mode: EvalMode
    top_k: int
    budget: int
    per_document: bool = False  # each question asked within its gold document


def ask_service(
    path: QueryPath,
    questions: Sequence[EvalQuestion],
    run: RunSettings,
    progress: Progress | None = None,
) -> tuple[list[QuestionResult], set[int]]:
    """Each question through `path`, judged; and the revisions that answered."""
    results: list[QuestionResult] = []
    revisions: set[int] = set()
    gold = _gold_documents(path, run.namespace) if run.per_document else None
    for done, question in enumerate(questions, 1):
        try:
            document_id = _document_of(question, gold) if gold is not None else None
            request = request_for(
                question, run.namespace, run.mode, run.top_k, run.budget, document_id
            )
            started = time.perf_counter()
            body, revision = path.send(request)
            took = (time.perf_counter() - started) * 1000
        except (ValidationError, QuestionRefused) as exc:
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            results.append(judge(question, [], run.top_k, error=reason))
        else:
            asked = parse_answer(body, revision, run.mode)
            if asked.revision is not None:
                revisions.add(asked.revision)
            results.append(
                judge(
                    question,
                    asked.hits,
                    run.top_k,
                    latency_ms=took,
                    evidence_tokens=asked.evidence_tokens,
                )
            )
        if progress is not None:
            progress(done, len(questions))
    return results, revisions


def _gold_documents(path: QueryPath, namespace: str) -> dict[str, str]:
    """Document id by base file name (case-insensitive) and by stem, as the gold names them."""
    ids: dict[str, str] = {}
    for name, document_id in path.documents(namespace):
        base = PurePath(name).name.casefold()
        ids.setdefault(base, document_id)
        ids.setdefault(PurePath(base).stem, document_id)
    return ids


def _document_of(question: EvalQuestion, gold: dict[str, str]) -> str | None:
    """The question's gold document's id (None for a question of any document); a document
    the namespace does not hold makes the question a miss with that reason."""
    if question.doc is None:
        return None
    name = PurePath(question.doc).name.casefold()
    found = gold.get(name) or gold.get(PurePath(name).stem)
    if found is None:
        raise QuestionRefused(f"document '{question.doc}' is not in the namespace")
    return found


def ask_baseline(
    baseline: NaiveBaseline,
    questions: Sequence[EvalQuestion],
    top_k: int,
    per_document: bool = False,
) -> list[QuestionResult]:
    """Each question through the naive floor, judged (`per_document`: within its gold
    document, as the service was asked). Its latency is left out: an in-memory index inside
    this process says nothing next to a service, and without it the floor's figures are the
    same on every run."""
    return [
        judge(q, baseline.search(q.question, top_k, q.doc if per_document else None), top_k)
        for q in questions
    ]


def system_result(system: SystemName, results: Sequence[QuestionResult]) -> SystemResult:
    """A system's figures: overall, per kind (a "+"-joined kind in each part), per type."""
    values = per_question(results)
    return SystemResult(
        system=system,
        overall=metrics_of(results, values),
        by_kind=grouped(results, values, lambda q: kind_groups(q.kind)),
        by_doc_type=grouped(results, values, lambda q: [q.doc_type or "unspecified"]),
        questions=list(results),
    )


def evaluate(
    questions: QuestionFile,
    path: QueryPath,
    run: RunSettings,
    baseline: NaiveBaseline | None = None,
    progress: Progress | None = None,
) -> tuple[EvalRun, set[int]]:
    """One run: the service in its mode, then the floor on the same questions; and the
    revisions that answered (more than one: a revision was published during the run; the run
    records the latest)."""
    answered, revisions = ask_service(path, questions.questions, run, progress)
    systems: dict[str, SystemResult] = {run.mode: system_result(run.mode, answered)}
    if baseline is not None:
        floor = ask_baseline(baseline, questions.questions, run.top_k, run.per_document)
        systems["naive-bm25"] = system_result("naive-bm25", floor)
    result = EvalRun(
        questions_file=questions.path.name,
        questions_sha256=questions.sha256,
        namespace=run.namespace,
        mode=run.mode,
        top_k=run.top_k,
        budget=run.budget if run.mode == "agentic" else None,
        target=path.target,
        setting="per document" if run.per_document else "shared store",
        revision=max(revisions) if revisions else None,
        systems=systems,
    )
    return result, revisions
