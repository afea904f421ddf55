"""A chunk's index document: what each channel reads of it."""

from __future__ import annotations

from typing import Any

from corpus_pipeline.index import channels as ch
from corpus_pipeline.index.documents import index_document

TITLE = "Annual Performance Report of the Harbour Authority"


def _payload(content: str, chunk_type: str = "text") -> dict[str, Any]:
    return {
        "chunk_id": "c" * 32,
        "chunk_type": chunk_type,
        "content": content,
        "summary": "",
        "occurrences": [
            {
                "document_id": "d1",
                "order": 3,
                "source_file_name": "harbour.pdf",
                "document_title": TITLE,
                "running_text": ["Harbour Authority | FY 2022"],
                "section_path": ["Goals", "Performance Indicators"],
            }
        ],
    }


def _field(content: str, field: str) -> str:
    values = index_document(_payload(content)).to_dict()[field]
    return " ".join(str(v) for v in values)


def test_a_passage_is_searched_with_its_documents_title_and_running_heads():
    passage = "Vessel arrivals rose by a fifth as the new berth opened in the spring. " * 2
    assert "Harbour Authority" in _field(passage, ch.F_CONTENT)


def test_a_chunk_too_short_to_answer_does_not_win_the_content_channel_on_the_title():
    label = "Performance Indicators\n\nTarget met."
    assert "Harbour Authority" not in _field(label, ch.F_CONTENT)
    assert "Harbour Authority" in _field(label, ch.F_TERM)  # still found by the document's name
