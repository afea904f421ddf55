"""Filters win: a caller's filter is an instruction, a question's routing a guess. A question
that names one filing ("GBX … Q1 2023") asked with a filter that leaves that filing out answers
from the filtered documents, ranked, never with nothing — for every filter field, in classic
and agentic mode."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.agentic import AgenticRequest
from corpus_pipeline.contracts.search import SearchFilters, SearchRequest
from query_service.retrieval.agentic import agentic_search
from query_service.retrieval.classic import classic_search
from query_service.retrieval.planner import RulePlanner
from query_service.snapshot import store
from query_service.snapshot.revision import open_revision

from .support import build_documents, publish_namespaces
from .test_financial_search import COMPANIES, QUARTERS, filing

ROUTED = "2023_Q1_GBX.md"  # the filing the question names
QUESTION = "GBX working capital, Q1 2023"
UNITS = {"ACME": "East", "GBX": "West"}
DATES = {"2023_Q1": date(2023, 5, 5), "2023_Q2": date(2023, 8, 4)}


@pytest.fixture(scope="module")
def revision(tmp_path_factory: pytest.TempPathFactory) -> Any:
    settings = load_settings(home=tmp_path_factory.mktemp("filters-win"))
    for scale, (company, ticker) in enumerate(COMPANIES.items(), start=1):
        for quarter, (period, months) in QUARTERS.items():
            build_documents(
                settings,
                {f"{quarter}_{ticker}.md": filing(company, ticker, period, months, scale)},
                organizational_unit=UNITS[ticker],
                document_date=DATES[quarter],
            )
    publish_namespaces(settings)
    return open_revision(settings.published_dir, "default")


def _ids(revision: Any) -> dict[str, str]:
    return {d.source_file_name: d.document_id for d in store.list_documents(revision, 0, 10).items}


def _files(revision: Any, **request: Any) -> list[str]:
    answer = classic_search(revision, SearchRequest(query=QUESTION, top_k=5, **request))
    return [r.source_file_name for r in answer.results]


def test_unfiltered_the_question_keeps_to_the_filing_it_names(revision):
    assert set(_files(revision)) == {ROUTED}


@pytest.mark.parametrize(
    ("filters", "allowed"),
    [
        ({"entity": ["acme"]}, {"2023_Q1_ACME.md", "2023_Q2_ACME.md"}),
        ({"fiscal_period": ["2023Q2"]}, {"2023_Q2_ACME.md", "2023_Q2_GBX.md"}),
        ({"path_prefix": ["2023_Q2"]}, {"2023_Q2_ACME.md", "2023_Q2_GBX.md"}),
        ({"organizational_unit": ["east"]}, {"2023_Q1_ACME.md", "2023_Q2_ACME.md"}),
        (
            {"date_from": "2023-07-01", "date_to": "2023-12-31"},
            {"2023_Q2_ACME.md", "2023_Q2_GBX.md"},
        ),
    ],
    ids=["entity", "fiscal_period", "path_prefix", "organizational_unit", "dates"],
)
def test_a_filter_leaving_out_the_named_filing_answers_from_the_filtered_ones(
    revision, filters, allowed
):
    files = _files(revision, filters=SearchFilters(**filters))
    assert files, "never nothing where the filtered documents hold a match"
    assert set(files) <= allowed


def test_document_ids_leaving_out_the_named_filing_answer_from_those_documents(revision):
    ids = _ids(revision)
    files = _files(revision, filters=SearchFilters(document_ids=[ids["2023_Q2_ACME.md"]]))
    assert files and set(files) == {"2023_Q2_ACME.md"}


def test_excluding_the_named_filing_answers_from_the_others(revision):
    files = _files(revision, exclude_document_ids=[_ids(revision)[ROUTED]])
    assert files and ROUTED not in files


@pytest.mark.parametrize(
    "filters",
    [{"form_type": ["10-q"]}, {"document_type": ["markdown"]}, {"source": ["cli"]}],
    ids=["form_type", "document_type", "source"],
)
def test_a_filter_keeping_the_named_filing_still_ranks_it_first(revision, filters):
    files = _files(revision, filters=SearchFilters(**filters))
    assert files and files[0] == ROUTED


def test_agentic_search_keeps_to_the_callers_documents_too(revision):
    ids = _ids(revision)
    request = AgenticRequest(
        mode="agentic",
        query=QUESTION,
        token_budget=4000,
        filters=SearchFilters(document_ids=[ids["2023_Q2_ACME.md"]]),
    )
    answer = agentic_search(revision, request, RulePlanner())
    assert answer.results and {r.source_file_name for r in answer.results} == {"2023_Q2_ACME.md"}
    assert "Total current assets" in answer.evidence_text
