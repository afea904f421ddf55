"""Financial reports: periods, statements by title and by line items, an issuer's subject, the
vocabulary of measures, and the outline of a filing."""

from __future__ import annotations

from datetime import date

import pytest

from corpus_pipeline.contracts import ChunkType, ParsedRow, RowType, StatementType
from corpus_pipeline.finance.measures import expand, measures_named, without_measures
from corpus_pipeline.finance.periods import (
    calendar_quarter,
    dates_in,
    fiscal_period,
    period_labels,
    period_reference,
    stated_period_end,
)
from corpus_pipeline.finance.statements import (
    statement_of_chunk,
    statement_of_lines,
    statement_of_title,
    statements_named,
)
from corpus_pipeline.finance.structure import filing_structure, title_at_start
from corpus_pipeline.finance.subject import document_subject
from corpus_pipeline.structure.hierarchy import assign_hierarchy

BS, IS, CF = StatementType.BALANCE_SHEET, StatementType.INCOME, StatementType.CASH_FLOW
EQ, OCI = StatementType.EQUITY, StatementType.COMPREHENSIVE_INCOME

# -- periods ------------------------------------------------------------------------------------


def test_dates_are_read_in_the_ways_reports_and_questions_write_them():
    text = (
        "ended June 25, 2022; at 31 December 2022, on 2023-01-05 and Sept. 3 2021 (not 31 Feb 2022)"
    )
    assert dates_in(text) == [
        date(2022, 6, 25),
        date(2022, 12, 31),
        date(2023, 1, 5),
        date(2021, 9, 3),
    ]


def test_a_cover_states_the_end_of_its_period():
    cover = "QUARTERLY REPORT\nFor the quarterly period ended\nOctober 1, 2022\nor\nTRANSITION"
    assert stated_period_end(cover) == date(2022, 10, 1)
    assert stated_period_end("for the year ended 31 December 2022") == date(2022, 12, 31)
    assert stated_period_end("The quarter was good.") is None


@pytest.mark.parametrize(
    ("end", "months", "fiscal"),
    [
        (date(2022, 6, 25), 9, (2022, 3)),  # Apple: fiscal year ends in September
        (date(2022, 12, 31), 6, (2023, 2)),  # Microsoft: fiscal year ends in June
        (date(2022, 10, 1), 9, (2022, 3)),  # a 52-week quarter closing September
        (date(2023, 4, 30), 3, (2024, 1)),  # NVIDIA: fiscal year ends in January
        (date(2022, 12, 31), 12, (2022, None)),  # a whole year
    ],
)
def test_the_fiscal_year_is_the_year_its_fiscal_year_ends(end, months, fiscal):
    assert fiscal_period(end, months) == fiscal


def test_a_quarter_is_the_calendar_quarter_of_its_middle_month():
    assert calendar_quarter(date(2023, 4, 30)) == "2023q1"  # February to April
    assert calendar_quarter(date(2022, 10, 1)) == "2022q3"
    assert calendar_quarter(date(2022, 12, 31)) == "2022q4"


def test_a_question_names_periods_by_date_quarter_year_and_latest():
    ref = period_reference("NVIDIA FY23 vs fiscal 2022 in Q3 2023, as of July 1, 2023, latest")
    assert ref.dates == (date(2023, 7, 1),)
    assert ref.quarters == ("2023q3",)
    assert ref.years == (2023, 2022)  # the quarter's and the date's years are not years named
    assert ref.latest
    assert not period_reference("How do ducks feed?")


def test_a_document_names_its_period_in_its_file_name_title_and_running_headers():
    assert period_labels("2022_Q3_AAPL.pdf", "Apple Inc. | Q3 2022 Form 10-Q") == ["2022q3"]
    assert period_labels("2019-annual-performance-report.pdf") == ["2019"]
    assert period_labels("NARA2022.pdf") == ["2022"]
    assert period_labels("2303.05039v2.pdf") == []


# -- statements ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("CONDENSED CONSOLIDATED BALANCE SHEETS (Unaudited)", BS),
        ("Consolidated statement of financial position", BS),
        ("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)", IS),
        ("Consolidated Statements of Operations and Comprehensive Income (Loss)", IS),
        ("Consolidated statement of profit or loss", IS),
        ("INCOME STATEMENTS", IS),
        ("COMPREHENSIVE INCOME STATEMENTS", OCI),
        ("Statements of Comprehensive Income", OCI),
        ("NVIDIA CORPORATION AND SUBSIDIARIES CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS", CF),
        ("CASH FLOWS STATEMENTS", CF),
        ("CONDENSED CONSOLIDATED STATEMENTS OF SHAREHOLDERS’ EQUITY (Unaudited)", EQ),
        ("Consolidated statement of changes in equity", EQ),
        ("Financial Statements Consolidated Condensed Balance Sheets", BS),
        ("Consolidated Balance Sheets as of July 30, 2023 and January 29, 2023", BS),
    ],
)
def test_a_statement_is_named_by_its_title(title, kind):
    assert statement_of_title(title) is kind


@pytest.mark.parametrize(
    "title",
    [
        "Notes to Consolidated Financial Statements",
        "Gross Amounts Not Offset in the Balance Sheet",
        "Gains (Losses) Recognized in Consolidated Condensed Statements of Income on Derivatives",
        "Supplemental Balance Sheet Information",
        "Cash Flows",
        "Results of Operations",
    ],
)
def test_a_title_that_only_mentions_a_statement_names_none(title):
    assert statement_of_title(title) is None


BALANCE_SHEET_LINES = """Cash and cash equivalents $ 4,529 $ 4,827 Short-term investments 18,030 24,426
Total current assets 57,219 57,718 Property, plant and equipment, net 80,860 63,245
Total assets 180,933 168,406 Current liabilities: Accounts payable 7,133 5,747
Total current liabilities 32,155 27,462 Total liabilities 81,048 73,015
Retained earnings 71,024 68,265 Total stockholders' equity 99,885 95,391
Total liabilities and stockholders' equity 180,933 168,406"""


def test_a_statement_set_as_loose_lines_is_known_by_its_line_items():
    assert statement_of_lines(BALANCE_SHEET_LINES) is BS
    # The same words in prose are discussion, not the statement.
    prose = "Our total assets grew and total current liabilities fell while " * 3
    assert statement_of_lines(prose) is None


def test_a_chunk_is_tagged_by_its_lines_or_by_the_statement_its_section_is_titled_by():
    assert statement_of_chunk(["Item 1", "Assets"], BALANCE_SHEET_LINES, ChunkType.TEXT) is BS
    table = "CONSOLIDATED STATEMENTS OF CASH FLOWS\nNet income | 1,019 | 6,823"
    assert statement_of_chunk(["Item 1", "Cash flows"], table, ChunkType.TABLE) is CF
    wrapper = "CONDENSED CONSOLIDATED BALANCE SHEETS\n\n[table: tables/table-0006.html]"
    assert (
        statement_of_chunk(["CONDENSED CONSOLIDATED BALANCE SHEETS"], wrapper, ChunkType.TEXT) is BS
    )
    # A note filed under a statement's heading by a lost heading is not the statement.
    note = "The Company adopted the new lease standard. It had no effect on the results."
    assert statement_of_chunk(["BALANCE SHEETS"], note, ChunkType.TEXT) is None


def test_a_question_names_statements_loosely():
    assert statements_named("Show the cash flow statement and the P&L") == [CF, IS]
    assert statements_named("What is on its balance sheet?") == [BS]


# -- measures -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "statements", "line"),
    [
        ("What is NVIDIA's cash ratio at Q3?", [BS], "total current liabilities"),
        ("What is EBITDA for Apple?", [IS, CF], "depreciation and amortization"),
        ("What was INTC's quick ratio?", [BS], "accounts receivable"),
        ("Compute Microsoft's ROE for the quarter.", [IS, BS], "net income"),
        ("AAPL FCF (operating cash flow minus capex)", [CF], "purchases of property"),
        ("debt-to-equity of Amazon?", [BS], "total liabilities"),
        ("What share of revenue went to R&D?", [IS], "research and development"),
        ("Is 3M a capital-intensive business based on FY2022 data?", [CF, BS, IS], "total assets"),
        ("What is the year end FY2018 net PPNE for 3M?", [BS], "property plant and equipment"),
    ],
)
def test_a_measure_is_expanded_into_its_statements_and_their_lines(question, statements, line):
    expansion = expand(question)
    assert list(expansion.statements) == statements
    assert line in expansion.words


def test_a_measure_inside_a_longer_one_counts_once_and_words_inside_words_none():
    names = [m.name for m in measures_named("What FCF conversion did it report?")]
    assert names == ["free cash flow conversion"]
    assert not expand("How many steps are needed? What is the retrieval metric?")


def test_a_question_without_its_measures_still_names_issuer_and_period():
    question = "Compute Apple's return on equity for the quarter ended July 1, 2023."
    assert without_measures(question) == "Compute Apple's for the quarter ended July 1, 2023."


# -- subject ------------------------------------------------------------------------------------


def _rows(texts: list[str], page: int = 1) -> list[ParsedRow]:
    return [
        ParsedRow(
            order=i, row_type=RowType.PARAGRAPH, text=t, page_numbers=[page], source_location=""
        )
        for i, t in enumerate(texts)
    ]


SEC_COVER = [
    "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
    "FORM 10-Q",
    "For the quarterly period ended June 25, 2022",
    "Commission File Number: 001-36743",
    "Apple Inc.",
    "(Exact name of Registrant as specified in its charter)",
    "Title of each class Trading symbol(s) Name of each exchange on which registered",
    "Common Stock, $0.00001 par value per share AAPL The Nasdaq Stock Market LLC",
    "Indicate by check mark whether the Registrant (1) has filed all reports",
    "Three Months Ended Nine Months Ended June 25, 2022 June 26, 2021",
    "Three Months Ended Nine Months Ended June 25, 2022 June 26, 2021",
]


def test_a_filing_cover_gives_issuer_tickers_form_and_fiscal_period():
    subject = document_subject(_rows(SEC_COVER), "2022_Q3_AAPL.pdf", "Apple Inc. Form 10-Q")
    assert subject.entity == "Apple Inc."
    assert subject.tickers == ["AAPL"]
    assert subject.form_type == "10-Q"
    assert subject.period_end == "2022-06-25"
    assert (subject.fiscal_year, subject.fiscal_quarter) == (2022, 3)
    assert subject.period_labels == ["2022q3"]


def test_a_cover_without_the_registrant_caption_names_it_after_the_file_number():
    cover = [t for t in SEC_COVER if "Exact name" not in t]
    cover[4] = "MICROSOFT CORPORATION"
    subject = document_subject(_rows(cover), "msft.pdf", "Form 10-Q")
    assert subject.entity == "MICROSOFT CORPORATION"


def test_an_annual_report_that_is_no_sec_form_names_its_company_and_year():
    rows = _rows(["Unilever PLC", "Annual Report and Accounts 2022", "Strategic report"])
    subject = document_subject(rows, "unilever-annual-report-2022.pdf", "Annual Report 2022")
    assert subject.entity == "Unilever PLC"
    assert subject.form_type == "annual report"
    assert subject.fiscal_year == 2022


def test_a_manual_has_no_subject():
    rows = _rows(["Quick start", "Press the power button for three seconds."])
    subject = document_subject(rows, "watch_manual.pdf", "Quick start")
    assert subject.entity is None and subject.form_type is None and subject.period_end is None


# -- structure ----------------------------------------------------------------------------------


def _row(order: int, text: str, page: int, kind: RowType = RowType.PARAGRAPH, level=None):
    return ParsedRow(
        order=order,
        row_type=kind,
        text=text,
        heading_level=level,
        page_numbers=[page],
        source_location="",
    )


H = RowType.HEADING
FILING = [
    ("Commission File Number 001-37845", 1, None, None),
    ("MICROSOFT CORPORATION", 1, None, None),
    ("PART I. FINANCIAL INFORMATION", 3, H, 1),
    ("Item 1. Financial Statements ACME CORP CONSOLIDATED STATEMENTS OF OPERATIONS", 3, H, 2),
    ("Revenue 50,122 45,317 Cost of revenue 15,452 13,646 Gross margin 34,670", 3, None, None),
    ("BALANCE SHEETS", 4, H, 4),
    ("Assets", 4, H, 3),
    ("Cash and cash equivalents 22,884 13,931 Total assets 359,784 364,840", 4, None, None),
    ("CASH FLOWS STATEMENTS (In millions) (Unaudited) Three Months Ended 2022 2021", 5, None, None),
    ("Net income 17,556 20,505 Net cash from operations 23,198 24,493", 5, None, None),
    ("NOTES TO FINANCIAL STATEMENTS", 6, H, 3),
    ("NOTE 1 — ACCOUNTING POLICIES", 6, None, None),
    ("Principles of Consolidation", 6, H, 3),
    ("The statements include the accounts of the company.", 6, None, None),
    ("Item 2. Management's Discussion and Analysis", 9, H, 2),
    ("Item 6. Exhibits", 12, H, 2),
    ("Exhibit 10.1", 13, H, 3),
    ("5. Dividend and Voting Rights.", 13, H, 1),
    ("By: /s/ Jane Doe", 14, H, 2),
]


def _outline(rows: list[ParsedRow]) -> list[tuple[int, str]]:
    return [(r.heading_level or 0, r.text) for r in rows if r.row_type is RowType.HEADING]


def test_a_filing_outline_gives_each_statement_and_note_its_place():
    rows = [_row(i, t, p, k or RowType.PARAGRAPH, lvl) for i, (t, p, k, lvl) in enumerate(FILING)]
    out = filing_structure(rows)
    assert _outline(out) == [
        (1, "PART I. FINANCIAL INFORMATION"),
        (2, "Item 1. Financial Statements"),
        (3, "ACME CORP CONSOLIDATED STATEMENTS OF OPERATIONS"),
        (3, "BALANCE SHEETS"),
        (3, "CASH FLOWS STATEMENTS"),
        (3, "NOTES TO FINANCIAL STATEMENTS"),
        (4, "NOTE 1 — ACCOUNTING POLICIES"),
        (5, "Principles of Consolidation"),
        (2, "Item 2. Management's Discussion and Analysis"),
        (2, "Item 6. Exhibits"),
        (3, "Exhibit 10.1"),
        (4, "5. Dividend and Voting Rights."),
    ]
    texts = [r.text for r in out]
    assert "Assets" in texts  # a row label, as text inside the balance sheet
    assert "(In millions) (Unaudited) Three Months Ended 2022 2021" in texts
    assert [r.order for r in out] == list(range(len(out)))
    paths = {r.text: r.hierarchy_path for r in assign_hierarchy(out)}
    assert paths["Assets"][-1] == "BALANCE SHEETS"
    assert paths["By: /s/ Jane Doe"][-1] == "5. Dividend and Voting Rights."


def test_a_statement_named_only_in_its_page_footer_opens_that_page():
    rows = [
        _row(0, "Commission File Number 000-06217", 1),
        _row(1, "INTEL CORPORATION", 1),
        _row(2, "Consolidated Condensed Statements of Income", 5, H, 1),
        _row(3, "Net revenue 15,338 Gross margin 6,212 Net income 1,019 Diluted 0.25", 5),
        _row(4, "(In Millions; Unaudited) Oct 1, 2022 Dec 25, 2021", 7),
        _row(5, "Assets", 7, H, 4),
        _row(6, "Total assets 180,933 168,406 Total liabilities 81,048 73,015", 7),
        _row(7, "Financial Statements Consolidated Condensed Balance Sheets 5", 7),
    ]
    out = filing_structure(rows)
    assert _outline(out) == [
        (1, "Consolidated Condensed Statements of Income"),
        (1, "Consolidated Condensed Balance Sheets"),
    ]
    assert out[4].text == "Consolidated Condensed Balance Sheets" and out[4].page_numbers == [7]


def test_a_contents_entry_is_not_a_statement_and_other_documents_are_left_alone():
    assert (
        title_at_start("Consolidated Statements of Cash Flows 3 Consolidated Statements")
        is not None
    )
    rows = [
        _row(0, "Contents", 1, H, 1),
        _row(1, "Consolidated Balance Sheets 5 Consolidated Statements of Operations 6", 1),
        _row(2, "Overview", 2, H, 2),
    ]
    assert filing_structure(rows) == rows


def test_an_item_set_in_body_type_is_an_item_of_a_filing_whose_other_items_are_headings():
    rows = [
        _row(0, "Commission File Number 001-0001", 1),
        _row(1, "ACME CORPORATION", 1),
        _row(2, "Item 8. Financial Statements and Supplementary Data 45", 2),  # contents
        _row(3, "PART II", 30, H, 1),
        _row(4, "Item 7. Management's Discussion and Analysis", 30, H, 2),
        _row(5, "Item 7A. Quantitative and Qualitative Disclosures About Market Risk", 40, H, 2),
        _row(6, "We are exposed to interest rate risk.", 40),
        _row(7, "ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA", 44),
        _row(8, "CONSOLIDATED BALANCE SHEETS", 45, H, 3),
        _row(9, "Total assets 352,755 351,002 Total liabilities 302,083 287,912", 45),
    ]
    out = assign_hierarchy(filing_structure(rows))
    assert _outline(out)[-2:] == [
        (2, "ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA"),
        (3, "CONSOLIDATED BALANCE SHEETS"),
    ]
    assert out[-1].hierarchy_path == [
        "PART II",
        "ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA",
        "CONSOLIDATED BALANCE SHEETS",
    ]


def test_a_cover_read_across_its_columns_still_names_the_registrant_alone():
    cover = [
        "FORM 10-Q",
        "For the quarterly period ended Commission file June 30, 2022 number 1-5805 "
        "JPMorgan Chase & Co.",
        "(Exact name of registrant as specified in its charter)",
    ]
    assert document_subject(_rows(cover), "jpm.pdf", "Form 10-Q").entity == "JPMorgan Chase & Co."


def test_a_cover_whose_name_is_a_logo_is_named_by_its_group_head():
    cover = [
        "FORM 10-K",
        "For the fiscal year ended December 31, 2017",
        "For the transition period from to Commission File Number 001-02217",
        "(Exact name of Registrant as specified in its charter)",
        "THE COCA-COLA COMPANY AND SUBSIDIARIES",
    ]
    subject = document_subject(_rows(cover), "ko.pdf", "Document")
    assert subject.entity == "THE COCA-COLA COMPANY"
    assert (subject.form_type, subject.fiscal_year, subject.fiscal_quarter) == ("10-K", 2017, None)


def test_symbols_are_read_before_their_exchange_whatever_the_table_heads():
    cover = [
        "FORM 10-K",
        "SECURITIES REGISTERED PURSUANT TO SECTION 12(b) OF THE ACT",
        "Common | Stock, | Par | Value $1.00 | JNJ | New | York | Stock | Exchange 0.650% | Notes "
        "| Due | May 2024 | JNJ24C | New | York | Stock | Exchange",
        "Depositary Shares, each representing a one-four hundredth interest in a share",
        "JPM PR D The New York Stock Exchange",
        "Indicate by check mark if the registrant is a well-known seasoned issuer",
    ]
    assert document_subject(_rows(cover), "x.pdf", "Form 10-K").tickers == [
        "JNJ",
        "JNJ24C",
        "JPM PR D",
    ]


def test_an_earnings_release_is_known_by_its_dateline_and_named_in_the_companys_fiscal_terms():
    rows = [
        "Ulta Beauty Announces Fourth Quarter Fiscal 2022 Results",
        "BOLINGBROOK, Ill.--(BUSINESS WIRE)-- Ulta Beauty, Inc. (NASDAQ: ULTA) today announced "
        "financial results for the thirteen-week period (“fourth quarter”) and fifty-two-week "
        "period (“fiscal 2022”) ended January 28, 2023, compared to the same periods ended "
        "January 29, 2022.",
        "Please refer to the Company's Quarterly Report on Form 10-Q for more information.",
    ]
    subject = document_subject(_rows(rows), "ulta.pdf", rows[0])
    assert subject.entity == "Ulta Beauty, Inc."
    assert subject.tickers == ["ULTA"]
    assert subject.form_type == "earnings release"
    assert subject.period_end == "2023-01-28"
    assert (subject.fiscal_year, subject.fiscal_quarter) == (2022, 4)


def test_a_release_dateline_across_lines_and_its_quarter_end_from_a_column_head():
    rows = [
        "FOR IMMEDIATE RELEASE",
        "New Brunswick, N.J. (July 20, 2023) – Johnson & Johnson (NYSE: JNJ) today announced "
        "results for second-",
        "quarter 2023. “Our robust performance in the second quarter and first half of 2023”",
        "Reconciliation of Non-GAAP Financial Measures",
        "Second Quarter | Second Quarter July 2, | 2023 GAAP Intangible asset amortization",
    ]
    subject = document_subject(_rows(rows), "jnj.pdf", rows[0])
    assert (subject.entity, subject.form_type) == ("Johnson & Johnson", "earnings release")
    assert (subject.fiscal_year, subject.fiscal_quarter) == (2023, 2)
    assert subject.period_end == "2023-07-02"


def test_an_eight_k_that_carries_a_press_release_stays_an_eight_k():
    rows = [
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
        "FORM 8-K",
        "CURRENT REPORT",
        "PepsiCo, Inc. (NASDAQ: PEP) today reported results for the first quarter of 2023.",
    ]
    assert document_subject(_rows(rows), "pep.pdf", "Form 8-K").form_type == "8-K"


def test_a_span_named_in_one_line_only_does_not_decide_the_quarter():
    cover = [t.replace("Nine Months Ended ", "") for t in SEC_COVER]
    slip = "the statements of income for the three and nine months ended June 25, 2022 and 2021"
    subject = document_subject(_rows([*cover, slip]), "2022_Q3_AAPL.pdf", "Apple Inc. Form 10-Q")
    assert subject.fiscal_quarter == 1  # three months, as every statement says


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("3M Company and Subsidiaries Consolidated Balance Shee t At December 31", "balance_sheet"),
        ("Years ended December 31 | Consolidated Statement of Cash Flow s", "cash_flow"),
    ],
)
def test_a_statement_title_the_pdf_split_a_letter_off_is_still_known(title, kind):
    assert statement_of_title(title) == StatementType(kind)
