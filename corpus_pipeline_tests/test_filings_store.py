"""The derivation behind `benchmarks.filings_store`: an earlier quarter of a committed filing is
a valid document of its own (the pipeline's own artifact checks pass), with its figures moved and
its embedded tables still in place."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.filings_store import Shift, derive_variant, shifted_questions
from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.artifacts import ChunksFile
from corpus_pipeline.quality.artifacts import check_chunks, check_nav

from .support import build_documents

FILING = """# Apple Inc. Form 10-Q for Q3 2023

## Item 2. Management's Discussion

Net sales were $81,797 million in the third quarter of 2023, 1.4% lower than in 2022.

| Category | Q3 2023 | Q3 2022 |
| --- | --- | --- |
| iPhone | 39,669 | 40,665 |
| Services | 21,213 | 19,604 |

Inventories are stated at the lower of cost or net realisable value.

## Controls and Procedures

The disclosure controls and procedures were effective at the reasonable assurance level.
"""


def test_a_shift_keeps_length_quarters_and_forms_and_moves_years_back() -> None:
    shift = Shift(3)
    text = "Q3 2023 10-Q: $81,797 million, 12.2% (FY2023)"
    moved = shift(text)
    assert len(moved) == len(text)
    assert moved.startswith("Q3 2017 10-Q: $") and moved.endswith("(FY2017)")
    assert moved != text.replace("2023", "2017"), "figures other than years change too"
    assert shift.html('<td rowspan="2">2023</td>') == '<td rowspan="2">2017</td>'


def test_an_earlier_quarter_of_a_filing_passes_the_artifact_checks(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "home")
    record = build_documents(settings, {"2023_Q3_AAPL.md": FILING})["2023_Q3_AAPL.md"]
    source = settings.artifacts_dir / record.document_id
    target = tmp_path / "variant"
    ids = derive_variant(source, target, "variant-1", Shift(1))
    assert check_chunks(target / "chunks.json", target) == []
    assert check_nav(target / "doc_nav.json", target / "chunks.json") == []
    chunks = ChunksFile.model_validate_json((target / "chunks.json").read_text("utf-8"))
    assert {c.chunk_id for c in chunks.chunks} == ids
    texts = " ".join(c.content for c in chunks.chunks)
    assert "third quarter of 2021" in texts and "2023" not in texts
    assert any("stated at the lower of cost" in c.content for c in chunks.chunks)
    original = ChunksFile.model_validate_json((source / "chunks.json").read_text("utf-8"))
    prose = {c.chunk_id for c in original.chunks if not any(ch.isdigit() for ch in c.content)}
    assert prose and prose <= ids, "text without figures keeps its id: one chunk across quarters"
    manifest = json.loads((target / "manifest.json").read_text("utf-8"))
    assert manifest["source_file_name"] == "2021_Q3_AAPL.md"
    assert manifest["document_id"] == "variant-1"
    table = next((target / "tables").glob("*.html")).read_text("utf-8")
    assert "2021" in table and "2023" not in table


def test_questions_that_name_a_year_are_asked_of_earlier_quarters() -> None:
    asked = shifted_questions(
        [
            {"id": "a", "question": "Apple's Q1 2023 revenue?"},
            {"id": "b", "question": "Apple's latest revenue?"},
        ]
    )
    assert [q["id"] for q in asked] == ["a", "b", "a-1", "a-2", "a-3", "a-4"]
    assert asked[2]["question"] == "Apple's Q1 2021 revenue?"
