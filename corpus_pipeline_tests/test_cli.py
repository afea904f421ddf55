"""The `corpus` command as a user meets it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner, Result

from corpus_pipeline.cli.main import main

from .support import DOCS


@pytest.fixture
def runner(corpus_home) -> CliRunner:
    return CliRunner()


def json_lines(result: Result) -> list[dict[str, Any]]:
    """What a command printed on stdout, one JSON object per line (its stdout is no terminal)."""
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.slow
def test_ingest_then_inspect_shows_the_section_tree(runner):
    result = runner.invoke(main, ["ingest", str(DOCS / "unit_test_headers.docx"), "--json"])
    assert result.exit_code == 0, result.output
    (summary, _publish) = json_lines(result)
    assert summary["status"] == "ingested" and summary["chunk_types"]["text"] > 0
    shown = runner.invoke(main, ["inspect", summary["document_id"]])
    assert shown.exit_code == 0, shown.output
    assert "Test Document" in shown.output
    assert "Section 1.2.3" in shown.output
    assert "chunks:" in shown.output


@pytest.mark.slow
def test_ingest_reports_each_failure_and_exits_non_zero(runner, tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00\x01\x02" * 500)
    result = runner.invoke(main, ["ingest", str(blob), str(DOCS / "wiki.md")])
    assert result.exit_code == 1
    status = {line["file"]: (line["status"], line.get("error")) for line in json_lines(result)[:2]}
    assert status["blob.bin"][0] == "failed"
    assert "unsupported format 'unknown'" in (status["blob.bin"][1] or "")
    assert status["wiki.md"] == ("ingested", None)


def test_ingest_of_a_missing_path_names_it(runner, tmp_path):
    result = runner.invoke(main, ["ingest", str(tmp_path / "nope.docx")])
    assert result.exit_code == 1
    assert "nope.docx" in result.output and "neither a file nor a folder" in result.output


def test_inspect_of_an_unknown_document_is_an_error_naming_it(runner):
    result = runner.invoke(main, ["inspect", "no-such-doc"])
    assert result.exit_code == 1
    assert "no artifacts for 'no-such-doc'" in result.output


def test_debug_stops_at_profile(runner):
    result = runner.invoke(main, ["debug", str(DOCS / "word_sample.docx"), "--stop-at", "profile"])
    assert result.exit_code == 0
    profile = json.loads(result.output)
    assert profile["format"] == "docx" and profile["routing"]["strategy"] == "docx"


def test_debug_stops_at_parse_with_raw_rows(runner):
    result = runner.invoke(main, ["debug", str(DOCS / "mixed.md"), "--stop-at", "parse", "--json"])
    rows = json.loads(result.output)
    assert {r["row_type"] for r in rows} >= {"heading", "table"}
    assert all(r["hierarchy_path"] == [] for r in rows), "parse stops before the hierarchy"


def test_debug_stops_at_hierarchy_with_the_heading_tree(runner):
    result = runner.invoke(
        main, ["debug", str(DOCS / "word_sample.docx"), "--stop-at", "hierarchy", "--json"]
    )
    tree = json.loads(result.output)
    assert tree[0]["title"] == "Swimming in the lake"
    assert tree[0]["children"][0]["children"][0]["path"] == [
        "Swimming in the lake",
        "Let’s swim!",
        "Let’s eat",
    ]


def test_debug_stops_at_chunks(runner):
    result = runner.invoke(
        main, ["debug", str(DOCS / "word_tables.docx"), "--stop-at", "chunks", "--json"]
    )
    chunks = json.loads(result.output)
    assert sum(c["chunk_type"] == "table" for c in chunks) == 7


def test_debug_of_an_unsupported_file_names_the_format(runner, tmp_path):
    blob = tmp_path / "x.bin"
    blob.write_bytes(bytes(range(256)) * 8)
    result = runner.invoke(main, ["debug", str(blob)])
    assert result.exit_code == 1
    assert "unsupported format 'unknown'" in result.output


def test_debug_of_a_broken_pdf_says_it_is_corrupt(runner, tmp_path):
    pdf = tmp_path / "x.pdf"
    pdf.write_bytes(b"%PDF-1.4\n%%EOF")
    result = runner.invoke(main, ["debug", str(pdf)])
    assert result.exit_code == 1
    assert "corrupt pdf document" in result.output


@pytest.mark.slow
def test_a_search_right_after_ingest_sees_the_files(runner, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "ducks.md").write_text("# Ducks\n\n## Feeding\n\nTufted ducks dive for mussels.\n")
    (inbox / "geese.md").write_text("# Geese\n\nGeese graze on grass.\n")
    ingested = runner.invoke(main, ["ingest", str(inbox)])
    assert ingested.exit_code == 0, ingested.output
    published = json_lines(ingested)[-1]["publish"]
    assert (published["namespace"], published["revision"], published["documents"]) == (
        "default",
        1,
        2,
    )
    found = runner.invoke(
        main, ["search", "Which ducks dive for mussels?", "--json", "--top-k", "1"]
    )
    assert found.exit_code == 0, found.output
    response = json.loads(found.output)
    (top,) = response["results"]
    assert top["source_file_name"] == "ducks.md"
    assert top["section_path"] == ["Ducks", "Feeding"]
    assert {"content", "chunk_type", "document_id", "chunk_id", "pages", "score"} <= set(top)


@pytest.mark.slow
def test_delete_removes_the_document_from_search(runner, tmp_path):
    doc = tmp_path / "swans.md"
    doc.write_text("# Swans\n\nMute swans are the heaviest flying birds of the lake.\n")
    other = tmp_path / "coots.md"
    other.write_text("# Coots\n\nCoots have lobed toes instead of webbed feet.\n")
    (summary,) = [
        line
        for line in json_lines(runner.invoke(main, ["ingest", str(doc), str(other), "--json"]))
        if line.get("file") == "swans.md"
    ]
    deleted = runner.invoke(main, ["delete", summary["document_id"]])
    assert deleted.exit_code == 0, deleted.output
    assert "revision 2" in deleted.output
    found = json.loads(runner.invoke(main, ["search", "heaviest flying birds", "--json"]).output)
    assert all(r["source_file_name"] != "swans.md" for r in found["results"])


def test_search_before_any_publish_says_what_to_do(runner):
    result = runner.invoke(main, ["search", "anything"])
    assert result.exit_code == 1
    assert "has no published revision" in result.output and "corpus ingest" in result.output
