"""Entity and period routing: a question naming an issuer and a period reaches that issuer's
filing for that period, however it spells them; a store of one issuer, or a question naming
none, is not routed by name."""

from __future__ import annotations

import pytest

from corpus_pipeline.contracts import DocumentSubject
from corpus_pipeline.finance.subject import entity_key
from query_service.snapshot.routing import Router, Subject


def _subject(doc: str, entity: str, ticker: str, end: str, fy: int, fq: int, label: str):
    return Subject.of(
        doc,
        DocumentSubject(
            entity=entity,
            tickers=[ticker],
            form_type="10-Q",
            period_end=end,
            fiscal_year=fy,
            fiscal_quarter=fq,
            period_labels=[label],
        ),
    )


STORE = [
    _subject("aapl-q3-22", "Apple Inc.", "AAPL", "2022-06-25", 2022, 3, "2022q3"),
    _subject("aapl-q1-23", "Apple Inc.", "AAPL", "2022-12-31", 2023, 1, "2023q1"),
    _subject("msft-q1-23", "MICROSOFT CORPORATION", "MSFT", "2022-12-31", 2023, 2, "2023q1"),
    _subject("msft-q2-23", "MICROSOFT CORPORATION", "MSFT", "2023-03-31", 2023, 3, "2023q2"),
    _subject("amzn-q3-22", "AMAZON.COM, INC.", "AMZN", "2022-09-30", 2022, 3, "2022q3"),
    Subject.of("manual", DocumentSubject()),
]


def test_an_issuers_name_loses_its_legal_form_case_and_web_suffix():
    assert entity_key("AMAZON.COM, INC.") == "amazon"
    assert entity_key("NVIDIA CORPORATION AND SUBSIDIARIES") == "nvidia"
    assert entity_key("Apple Inc.") == "apple"


@pytest.mark.parametrize(
    "question",
    [
        "What was Apple's quick ratio at the end of the quarter ended June 25, 2022?",
        "AAPL free cash flow, Q3 2022",
        "aapl gross margin for fiscal Q3 2022",
        "Appel's working capital in the third quarter of 2022",  # a misspelling
        "Apple Inc gross margin, quarter ended June 30, 2022",  # a month's end, days away
    ],
)
def test_a_question_naming_issuer_and_period_is_routed_to_that_filing(question):
    routing = Router(STORE).route(question)
    assert routing.certain and routing.documents == ("aapl-q3-22",)


def test_abbreviations_and_the_issuers_own_name_for_the_quarter_win():
    router = Router(STORE)
    # "Q1 2023" is Microsoft's file name for the quarter ended December 31, 2022, which is
    # its fiscal Q2; the calendar Q1 2023 filing is another one: the document's own name wins.
    assert router.route("Microsoft Corp ROE in Q1 2023").documents == ("msft-q1-23",)
    assert router.route("MSFT current ratio, fiscal Q3 2023").documents == ("msft-q2-23",)


def test_two_issuers_named_route_to_a_filing_each():
    routing = Router(STORE).route("Compare Apple and Amazon gross margin in Q3 2022")
    assert routing.certain and set(routing.documents) == {"aapl-q3-22", "amzn-q3-22"}


def test_the_latest_filing_of_an_issuer():
    routing = Router(STORE).route("What was Microsoft's gross margin in the most recent 10-Q?")
    assert routing.certain and routing.documents == ("msft-q2-23",)


def test_an_issuer_without_a_period_is_a_prior_not_a_filter():
    routing = Router(STORE).route("How does Apple describe its supply chain risks?")
    assert not routing.certain and set(routing.documents) == {"aapl-q3-22", "aapl-q1-23"}


def test_a_period_without_an_issuer_ranks_reports_of_that_period():
    routing = Router(STORE).route(
        "Which company had the best margin in the quarter ended December 31, 2022?"
    )
    assert not routing.certain and set(routing.documents) == {"aapl-q1-23", "msft-q1-23"}


def test_words_that_merely_resemble_an_issuer_route_nowhere():
    router = Router(STORE)
    assert not router.route("How do I apply the filter to the intelligence report?")
    assert not router.route("How many ducks are in the pond?")


def test_a_store_of_one_issuer_is_routed_by_period_alone():
    router = Router([s for s in STORE if s.entity == "apple"])
    assert router.route("Apple's quick ratio in Q1 2023").documents == ("aapl-q1-23",)
    assert not router.route("What does Apple say about risk?").certain


def _annual(doc: str, fy: int, fq: int | None, form: str, label: str) -> Subject:
    return Subject.of(
        doc,
        DocumentSubject(
            entity="Johnson & Johnson",
            tickers=["JNJ"],
            form_type=form,
            period_end=None,
            fiscal_year=fy,
            fiscal_quarter=fq,
            period_labels=[label],
        ),
    )


FILINGS = [
    _annual("jnj-10k-22", 2022, None, "10-K", "2022"),
    _annual("jnj-q4-22", 2022, 4, "earnings release", "2022q4"),
    _annual("jnj-q2-23", 2023, 2, "earnings release", "2023q2"),
]


def test_a_fourth_quarters_report_answers_for_its_whole_year_beside_the_annual_report():
    routing = Router(FILINGS).route("How did JnJ's US sales growth compare in FY2022?")
    assert not routing.certain
    assert set(routing.documents[:2]) == {"jnj-10k-22", "jnj-q4-22"}


def test_what_a_year_was_expected_to_bring_reaches_the_year_before_it():
    routing = Router(FILINGS).route(
        "Is JnJ's adjusted EPS growth expected to accelerate in FY2023?"
    )
    assert not routing.certain
    assert {"jnj-q4-22", "jnj-10k-22", "jnj-q2-23"} <= set(routing.documents)


def test_a_period_no_document_reports_on_relaxes_to_the_issuers_nearest_filings():
    routing = Router(STORE).route("What was Apple's gross margin in Q1 2024?")
    assert not routing.certain
    assert routing.documents == ("aapl-q1-23", "aapl-q3-22")  # nearest first, never nothing


def test_the_most_recent_quarter_is_the_issuers_latest_filing():
    routing = Router(STORE).route("What was Apple's revenue in the most recent quarter?")
    assert routing.certain and routing.documents == ("aapl-q1-23",)


def test_a_comparison_of_two_years_reaches_the_filings_of_both():
    routing = Router(FILINGS).route("Compare JnJ's revenue between FY2022 and FY2023")
    assert not routing.certain
    assert set(routing.documents) == {"jnj-10k-22", "jnj-q4-22", "jnj-q2-23"}
