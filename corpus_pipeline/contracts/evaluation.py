"""What `corpus eval` reads and writes: a question file, and the scored results of one run.

One question schema serves both kinds of gold the project knows: answer strings (a result is
relevant when it names the question's document and its text holds one of them, the rule of
`../shared/corpus/score_search.py`) and gold pages (relevant when it names the document and
one of its pages is a gold page, the rule of `../shared/realworld/score_pages.py`). A question
may carry both; answers decide then, and its pages only say where the answer is (the
development set's `page`). The results file is what the notebooks and `--compare` read.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from corpus_pipeline.contracts.base import Contract, FrozenModel

EvalMode = Literal["classic", "agentic"]
# The systems a run can score side by side: the service in one mode, or the naive floor.
SystemName = Literal["classic", "agentic", "naive-bm25"]


class EvalQuestion(FrozenModel):
    """One line of a question file (JSON Lines). Unknown fields are kept out, not refused, so
    the development sets' extra fields (`source`, `gold_answer`, `metric`, …) load as they are."""

    id: str
    question: str
    doc: str | None = Field(
        default=None,
        description="The file the answer is in (base name, case-insensitive); None: any document.",
    )
    answers: list[str] = Field(
        default_factory=list, description="Answer strings; a relevant result contains one."
    )
    pages: list[int] = Field(
        default_factory=list, description="Gold pages (1-based); a relevant result is on one."
    )
    kind: str = Field(default="unspecified", description="Question kind, for per-kind figures.")
    doc_type: str | None = Field(default=None, description="Document type, for per-type figures.")

    @model_validator(mode="before")
    @classmethod
    def _single_page(cls, data: object) -> object:
        """`page: 6` (the development set's form) is `pages: [6]`; `page: null` is no page."""
        if isinstance(data, dict) and "page" in data and not data.get("pages"):
            page = data.get("page")
            data = {**data, "pages": [page] if isinstance(page, int) else []}
        return data

    @property
    def gold(self) -> Literal["pages", "answers", "document"]:
        """What decides relevance: answer strings, else gold pages, else the document alone."""
        return "answers" if self.answers else "pages" if self.pages else "document"


class RankedResult(Contract):
    """One returned result as scored: where it is and whether it was relevant."""

    rank: int = Field(ge=1)
    document_id: str
    chunk_id: str
    source_file_name: str
    pages: list[int] = Field(default_factory=list)
    section_path: list[str] = Field(default_factory=list)
    relevant: bool
    snippet: str = Field(default="", description="The first characters of the result's text.")


class QuestionResult(Contract):
    """One question through one system."""

    id: str
    question: str
    kind: str
    doc_type: str | None = None
    doc: str | None = None
    gold: Literal["pages", "answers", "document"]
    first_relevant_rank: int | None = Field(
        default=None, description="Rank of the first relevant result in the top k; None: a miss."
    )
    doc_hit: bool = Field(description="The question's document is among the results.")
    results: list[RankedResult] = Field(default_factory=list)
    latency_ms: float | None = None
    evidence_tokens: int | None = Field(
        default=None, description="Agentic mode: tokens of the returned evidence."
    )
    error: str | None = Field(default=None, description="Why the question got no results.")


class Metrics(Contract):
    """Figures of a group of questions, computed by ir-measures (hit@k is `Success@k`)."""

    n: int
    hit_at_1: float
    hit_at_5: float
    hit_at_10: float
    mrr_at_10: float
    ndcg_at_10: float
    doc_hit_at_10: float
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    evidence_tokens_mean: float | None = None


class SystemResult(Contract):
    """One system's figures: overall, per question kind, per document type, and each question."""

    system: SystemName
    overall: Metrics
    by_kind: dict[str, Metrics] = Field(default_factory=dict)
    by_doc_type: dict[str, Metrics] = Field(default_factory=dict)
    questions: list[QuestionResult] = Field(default_factory=list)


class EvalRun(Contract):
    """`results.json` of `corpus eval`: every system of one run, scored on the same questions."""

    schema_version: Literal[1] = 1
    questions_file: str = Field(description="Base name of the question file.")
    questions_sha256: str
    namespace: str
    mode: EvalMode
    top_k: int
    budget: int | None = Field(default=None, description="Agentic token budget, when agentic.")
    target: str = Field(description="'in-process' or the service's base URL (no key, no query).")
    setting: Literal["shared store", "per document"] = Field(
        default="shared store",
        description="Every question asked of the whole namespace, or each within its gold "
        "document (`filters.document_ids`, resolved from its file name).",
    )
    revision: int | None = Field(default=None, description="Published revision that answered.")
    systems: dict[str, SystemResult] = Field(
        description="By system name; the service's mode first, then any baseline."
    )
