"""The development 10-Qs (20 filings of five issuers) through profile, parse and chunks: each
primary statement is a section of its own, titled by the statement and holding the statement's
figures, and every document carries its issuer, ticker and reporting period."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts import DocumentSubject, RowType, StatementType
from corpus_pipeline.finance.statements import statement_of_title
from corpus_pipeline.pipeline import stages as pipeline

from .support import REALWORLD_DOCS, needs_shared

pytestmark = [pytest.mark.slow, needs_shared(REALWORLD_DOCS)]

FILINGS = (
    sorted(p.name for p in REALWORLD_DOCS.glob("20??_Q?_*.pdf")) if REALWORLD_DOCS.is_dir() else []
)
CORE = {
    StatementType.INCOME,
    StatementType.COMPREHENSIVE_INCOME,
    StatementType.BALANCE_SHEET,
    StatementType.CASH_FLOW,
}
ISSUERS = {
    "AAPL": "Apple Inc.",
    "AMZN": "AMAZON.COM, INC.",
    "INTC": "INTEL CORPORATION",
    "MSFT": "MICROSOFT CORPORATION",
    "NVDA": "NVIDIA CORPORATION",
}


def expected_statements(name: str) -> set[StatementType]:
    # Amazon's 10-Q presents the changes in stockholders' equity in a note, not a statement.
    return CORE if name.endswith("_AMZN.pdf") else {*CORE, StatementType.EQUITY}


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, ...]]:
    settings = load_settings(home=tmp_path_factory.mktemp("filings"))
    out = {}
    for name in FILINGS:
        path = REALWORLD_DOCS / name
        profiled = pipeline.run_profile(path, name)
        profile = profiled.profile
        work = tmp_path_factory.mktemp(name.replace(".", "_"))
        parse = pipeline.run_parse(name, replace(profiled, reads=None), work / "parse", settings)
        chunks = pipeline.run_chunks(name, parse, profile, settings, work / "chunks")
        out[name] = (pipeline.read_rows(parse.rows_path), parse.subject, chunks)
    return out


def test_the_set_holds_twenty_filings():
    assert len(FILINGS) == 20


@pytest.mark.parametrize("name", FILINGS)
def test_every_primary_statement_of_a_10q_is_a_section_holding_its_figures(parsed, name):
    rows, _, chunks = parsed[name]
    tagged = pipeline.read_chunks(chunks.chunks_path).chunks
    sections: dict[StatementType, list[str]] = {}
    for row in rows:
        kind = statement_of_title(row.text) if row.row_type is RowType.HEADING else None
        if kind is not None:
            sections.setdefault(kind, []).append(row.section_ids[-1])
    for kind in expected_statements(name):
        holding = [
            section
            for section in sections.get(kind, [])
            if any(c.section_id == section and c.metadata.statement is kind for c in tagged)
        ]
        assert holding, (kind, sections.get(kind))


@pytest.mark.parametrize("name", FILINGS)
def test_a_10q_names_its_issuer_ticker_form_and_period(parsed, name):
    subject: DocumentSubject = parsed[name][1]
    ticker = name.removesuffix(".pdf").rsplit("_", 1)[1]
    assert subject.entity == ISSUERS[ticker]
    assert subject.tickers[:1] == [ticker]
    assert subject.form_type == "10-Q"
    assert subject.period_end is not None and subject.fiscal_quarter in (1, 2, 3)
    year, quarter = name[:4], name[6]
    assert subject.period_labels == [f"{year}q{quarter}"]
