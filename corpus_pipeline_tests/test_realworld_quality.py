"""The pieces of `benchmarks.realworld_quality` that decide its numbers: the naive floor's
windows and ranking, the agent's reading order, and the heading statistics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pymupdf

from benchmarks.harness import REALWORLD, half_of, primary_answer
from benchmarks.realworld_quality import NaiveBM25, heading_stats, page_windows
from corpus_pipeline.contracts.agentic import AgenticResponse, Citation

from .support import needs_shared

mu: Any = pymupdf


def test_windows_are_1000_characters_with_200_overlap_and_cite_their_pages(tmp_path: Path) -> None:
    doc: Any = mu.open()
    for word in ("alpha", "beta"):
        page = doc.new_page()
        for line in range(60):
            page.insert_text((50, 50 + 12 * line), f"{word} " * 12, fontsize=8)
    doc.save(tmp_path / "two.pdf")
    windows = page_windows(tmp_path / "two.pdf")
    assert all(len(text) <= 1000 for text, _ in windows)
    assert windows[0][0][800:1000] == windows[1][0][:200]
    assert windows[0][1] == [1]
    assert [1, 2] in [pages for _, pages in windows]
    assert windows[-1][1] == [2]


def test_naive_bm25_ranks_the_window_with_the_rare_term_first() -> None:
    index = NaiveBM25(
        [
            ("a.pdf", "revenue grew in the quarter", [1]),
            ("a.pdf", "the quarter had iPhone revenue of 39,669", [2]),
            ("b.pdf", "nothing to see here", [1]),
        ]
    )
    assert index.search("iPhone revenue", 2) == [1, 0]


def test_agentic_answers_are_scored_as_their_results_in_order_with_their_passages() -> None:
    text = "[1] b.pdf, p. 3 · Intro\nbeta\n\n[2] a.pdf, p. 1 · Intro\nalpha"
    construct: Any = AgenticResponse.model_construct  # only the fields primary_answer reads
    response = construct(
        evidence_text=text,
        results=[
            Citation(
                chunk_id=chunk,
                document_id=name,
                source_file_name=f"{name}.pdf",
                section_path=["Intro"],
                pages=[page],
                score=0.1,
                span=(text.index(word), text.index(word) + len(word)),
            )
            for chunk, name, page, word in (("bb", "b", 3, "beta"), ("aa", "a", 1, "alpha"))
        ],
    )
    lines = primary_answer(response)
    assert [(r["chunk_id"], r["pages"], r["content"]) for r in lines] == [
        ("bb", [3], "beta"),
        ("aa", [1], "alpha"),
    ]


def test_heading_stats_count_header_cells_and_repeats(tmp_path: Path) -> None:
    rows = [
        ("heading", "Revenue", ["Revenue"]),
        ("heading", "Three Months Ended", ["Revenue", "Three Months Ended"]),
        ("paragraph", "text", ["Revenue", "Three Months Ended"]),
        *[("heading", "ACME Corp.", ["ACME Corp."])] * 3,
    ]
    table = pa.table(
        {
            "row_type": [r[0] for r in rows],
            "text": [r[1] for r in rows],
            "hierarchy_path": [r[2] for r in rows],
        }
    )
    pq.write_table(table, tmp_path / "parsed.parquet")
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "t.html").write_text(
        "<table><thead><tr><th>Three Months Ended</th></tr></thead>"
        "<tbody><tr><td>Revenue</td><td>1</td></tr></tbody></table>"
    )
    stats = heading_stats(tmp_path)
    assert stats == {
        "headings": 5,
        "depth": 2,
        "table_cell_share": 0.2,  # a body cell "Revenue" is no header cell
        "repeated_share": 0.6,
    }


@needs_shared(REALWORLD)
def test_the_halves_are_a_stable_hash_of_the_file_name_with_every_type_in_both() -> None:
    # The split is pinned: a changed hash would silently move documents between the halves.
    assert (half_of("2022_Q3_AAPL.pdf"), half_of("2023_Q1_MSFT.pdf")) == ("held out", "tuned")
    names = [p.name for p in (REALWORLD / "docs").glob("*.pdf")]
    assert [half_of(n) for n in names].count("tuned") == 48
    lines = (REALWORLD / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    for doc_type in {q["doc_type"] for q in questions}:
        halves = {half_of(q["doc"]) for q in questions if q["doc_type"] == doc_type}
        assert halves == {"tuned", "held out"}, doc_type
