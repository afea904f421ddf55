"""A document names itself on every page (a running footer "Heron Holdings Inc. | Q3 2023 Form
10-Q", a filing's registrant) and almost never next to an answer ("we", "our"). Those words are
stripped from the chunks' text, kept in the manifest, and indexed with every chunk of the
document, so a question that names the document finds its pages."""

from __future__ import annotations

import json
import random
from typing import Any

import pymupdf
import pytest

from corpus_pipeline.contracts.search import SearchRequest
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision

from .support import pdf_data, published_home

WORDS = ["margin", "revenue", "segment", "cost", "quarter", "product", "service", "growth"]
OTHER = ["sales", "expense", "unit", "price", "period", "goods", "income", "rise"]


def filing(footer: str | None, seed: int, words: list[str]) -> bytes:
    """Four pages of prose; `footer` printed right below each page's text."""
    doc: Any = pymupdf.open()  # type: ignore[no-untyped-call]
    rng = random.Random(seed)
    for n in range(1, 5):
        page = doc.new_page()
        y = 60.0
        for _ in range(40):
            line = " ".join(rng.choices(words, k=9))
            page.insert_text((72, y), f"Our {line}.", fontsize=10)
            y += 16
        if footer:
            page.insert_text((72, y + 18), f"{footer} | {n}", fontsize=8)
    return pdf_data(doc)


@pytest.fixture(scope="module")
def filings(tmp_path_factory):
    files = {
        # The named filing never says "segment margin"; the others say little else.
        "filing-a.pdf": filing("Heron Holdings Inc. | Q3 2023 Form 10-Q", 1, OTHER),
        "filing-b.pdf": filing(None, 2, WORDS),
        "filing-c.pdf": filing(None, 3, WORDS),
    }
    return published_home(tmp_path_factory.mktemp("context"), files)


def test_the_running_footer_is_recorded_and_not_left_in_the_text(filings):
    settings, records = filings
    directory = settings.artifacts_dir / records["filing-a.pdf"].document_id
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["running_text"] == ["Heron Holdings Inc. | Q3 2023 Form 10-Q"]
    chunks = json.loads((directory / "chunks.json").read_text(encoding="utf-8"))["chunks"]
    assert not any("Heron Holdings" in c["content"] for c in chunks)


def test_a_question_naming_the_document_finds_its_chunks(filings):
    settings, _ = filings
    revision = open_revision(settings.published_dir, "default")
    request = SearchRequest(query="What was Heron Holdings' segment margin?", top_k=2)
    assert revision.pointer.chunks > 2  # ranked, not the small-corpus listing
    top = classic_search(revision, request).results[0]
    assert top.source_file_name == "filing-a.pdf"


def test_without_its_name_the_words_decide(filings):
    settings, _ = filings
    revision = open_revision(settings.published_dir, "default")
    request = SearchRequest(query="What was the segment margin?", top_k=2)
    names = [r.source_file_name for r in classic_search(revision, request).results]
    assert names[0] in {"filing-b.pdf", "filing-c.pdf"}
