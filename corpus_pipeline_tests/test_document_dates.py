"""A document's date: the uploader's, else the one its file declares; and "the latest" of a
series of periodic documents means its newest member."""

from __future__ import annotations

import io
import json
from datetime import date, datetime
from typing import Any

import docx
import pymupdf
import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.search import SearchFilters, SearchRequest
from corpus_pipeline.parsing.dates import declared_office_date, declared_pdf_date, pdf_date
from query_service.retrieval.classic import classic_search
from query_service.retrieval.recency import asks_for_latest, series_key, superseded
from query_service.snapshot.revision import open_revision

from .support import build_documents, publish_namespaces


def pdf_bytes(text: str, created: str | None = None, modified: str | None = None) -> bytes:
    doc: Any = pymupdf.open()  # type: ignore[no-untyped-call]
    page = doc.new_page()
    page.insert_text((72, 72), text, fontsize=11)
    doc.set_metadata({"creationDate": created or "", "modDate": modified or ""})
    data: bytes = doc.tobytes()
    doc.close()
    return data


def manifest_of(settings: Any, record: Any) -> dict[str, Any]:
    path = settings.artifacts_dir / record.document_id / "manifest.json"
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return manifest


def test_a_pdf_date_stamp_reads_as_its_calendar_day():
    assert pdf_date("D:20230804063012-04'00'") == date(2023, 8, 4)
    assert pdf_date("20221028") == date(2022, 10, 28)
    assert pdf_date("D:2019") == date(2019, 1, 1)


def test_placeholder_and_broken_stamps_are_no_date():
    assert pdf_date("D:16010101000000Z") is None
    assert pdf_date("D:20991231") is None
    assert pdf_date("D:20231345") is None
    assert pdf_date("yesterday") is None
    assert pdf_date(None) is None


def test_the_creation_date_comes_before_the_modification_date():
    meta = {"creationDate": "D:20230105", "modDate": "D:20240301"}
    assert declared_pdf_date(meta) == date(2023, 1, 5)
    assert declared_pdf_date({"creationDate": "", "modDate": "D:20240301"}) == date(2024, 3, 1)
    assert declared_office_date(None, datetime(2021, 6, 2, 9, 30)) == date(2021, 6, 2)


def test_a_pdf_without_an_uploaded_date_is_filed_under_its_declared_date(tmp_path):
    settings = load_settings(home=tmp_path)
    pdf = pdf_bytes("Quarterly report of the heron survey.", created="D:20230804063012Z")
    record = build_documents(settings, {"survey.pdf": pdf})["survey.pdf"]
    manifest = manifest_of(settings, record)
    assert (manifest["document_date"], manifest["document_date_source"]) == ("2023-08-04", "file")
    assert manifest["source"]["document_date"] is None  # the uploader gave none
    publish_namespaces(settings)
    revision = open_revision(settings.published_dir, "default")
    request = SearchRequest(
        query="heron survey",
        filters=SearchFilters(date_from=date(2023, 8, 1), date_to=date(2023, 8, 31)),
    )
    assert [r.source_file_name for r in classic_search(revision, request).results] == ["survey.pdf"]


def test_the_uploaders_date_wins_over_the_files(tmp_path):
    settings = load_settings(home=tmp_path)
    pdf = pdf_bytes("Annual heron survey.", created="D:20230804")
    record = build_documents(settings, {"survey.pdf": pdf}, document_date=date(2020, 1, 31))[
        "survey.pdf"
    ]
    manifest = manifest_of(settings, record)
    assert (manifest["document_date"], manifest["document_date_source"]) == (
        "2020-01-31",
        "upload",
    )


def test_a_docx_is_filed_under_its_core_created_date(tmp_path):
    settings = load_settings(home=tmp_path)
    document = docx.Document()
    document.add_paragraph("Minutes of the heron working group.")
    document.core_properties.created = datetime(2022, 3, 14, 10, 0)
    buffer = io.BytesIO()
    document.save(buffer)
    record = build_documents(settings, {"minutes.docx": buffer.getvalue()})["minutes.docx"]
    assert manifest_of(settings, record)["document_date"] == "2022-03-14"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What was the gross margin in the latest 10-Q?", True),
        ("Gross margin in the most recent quarter", True),
        ("the newest report", True),
        ("What is on the last page?", False),
        ("current liabilities in Q3 2023", False),
    ],
)
def test_only_latest_most_recent_and_newest_ask_for_the_newest_document(query, expected):
    assert asks_for_latest(query) is expected


def test_a_series_is_the_file_name_without_digits_and_separators():
    assert series_key("2023_Q3_AAPL.pdf") == series_key("2022_Q1_AAPL.pdf") == "q aapl"
    assert series_key("2019-annual-performance-report.pdf") == "annual performance report"
    assert series_key("2023_Q3_MSFT.pdf") != series_key("2023_Q3_AAPL.pdf")
    assert series_key("reports/2024/q1.pdf") == series_key("reports/2025/q1.pdf")
    assert series_key("2303.05039v2.pdf") is None  # no word, no series


def test_only_older_dated_members_of_a_series_are_superseded():
    documents = [
        ("a1", "2022_Q3_ACME.pdf", date(2022, 7, 29)),
        ("a2", "2023_Q3_ACME.pdf", date(2023, 8, 4)),
        ("a3", "2023_Q1_ACME.pdf", None),  # undated: neither old nor new
        ("b1", "2021_Q1_OTHER.pdf", date(2021, 1, 1)),  # alone in its series
        ("p1", "2303.05039v2.pdf", date(2020, 1, 1)),
        ("p2", "2401.18059v1.pdf", date(2024, 1, 1)),
    ]
    assert superseded(documents) == frozenset({"a1"})


@pytest.fixture(scope="module")
def quarterly(tmp_path_factory):
    settings = load_settings(home=tmp_path_factory.mktemp("quarterly"))
    text = "Acme Corporation quarterly report. Gross margin was {margin} percent this quarter."
    for name, margin, day in (
        ("2022_Q3_ACME.pdf", 31, date(2022, 7, 29)),
        ("2023_Q3_ACME.pdf", 38, date(2023, 8, 4)),
        ("2023_Q1_ACME.pdf", 35, date(2023, 2, 3)),
    ):
        build_documents(settings, {name: pdf_bytes(text.format(margin=margin))}, document_date=day)
    for i in range(12):  # enough other chunks that the corpus is not answered whole
        build_documents(settings, {f"notes/{i}.md": f"# Note {i}\n\nHerons and egrets {i}.\n"})
    publish_namespaces(settings)
    return open_revision(settings.published_dir, "default")


def test_the_latest_of_a_series_ranks_before_its_older_members(quarterly):
    request = SearchRequest(query="Acme gross margin in the latest quarterly report", top_k=3)
    found = [r.source_file_name for r in classic_search(quarterly, request).results]
    assert found[0] == "2023_Q3_ACME.pdf"
    assert set(found) == {"2022_Q3_ACME.pdf", "2023_Q1_ACME.pdf", "2023_Q3_ACME.pdf"}


def test_without_a_recency_word_the_series_keeps_its_text_ranking(quarterly):
    request = SearchRequest(query="Acme gross margin 31 percent quarterly report", top_k=3)
    found = [r.source_file_name for r in classic_search(quarterly, request).results]
    assert found[0] == "2022_Q3_ACME.pdf"
