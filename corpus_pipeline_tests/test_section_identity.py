"""Sections are nodes, not title paths: sibling sections with equal titles stay distinct in the
heading tree, the chunks, the nav counts, the published sections, read-by-section and search."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus_pipeline.contracts import ChunksFile, DocNav, SectionNode
from corpus_pipeline.contracts.api import ReadRef, ReadRequest
from corpus_pipeline.contracts.published import descendants
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.publish.sections import build_sections
from corpus_pipeline.quality.artifacts import check_nav
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision
from query_service.snapshot.store import outline, read

from .support import build_documents, publish_namespaces

# A filing-like document: "Revenue" under both parts, and the same table header twice in a row.
FILING = """# PART I

## Revenue

Net sales of iPhone rose to 43,805 million dollars in the third quarter.

## Three Months Ended

The first quarter table of operating expenses follows here.

## Three Months Ended

The second quarter table of research spending follows here.

# PART II

## Revenue

Services revenue reached 21,213 million dollars with subscriptions growing.
"""


def _walk(nodes: list[SectionNode]) -> list[SectionNode]:
    return [n for node in nodes for n in (node, *_walk(node.children))]


@pytest.fixture
def filing(settings, tmp_path):
    records = build_documents(settings, {"filing.md": FILING})
    directory = settings.artifacts_dir / records["filing.md"].document_id
    return records["filing.md"], directory


def _nav(directory: Path) -> DocNav:
    return DocNav.model_validate_json((directory / "doc_nav.json").read_text(encoding="utf-8"))


def _chunks(directory: Path) -> ChunksFile:
    return ChunksFile.model_validate_json((directory / "chunks.json").read_text(encoding="utf-8"))


def test_equal_sibling_titles_are_distinct_sections_with_their_own_ids(filing):
    _, directory = filing
    nodes = _walk(_nav(directory).sections)
    revenue = [n for n in nodes if n.title == "Revenue"]
    months = [n for n in nodes if n.title == "Three Months Ended"]
    assert len(revenue) == 2 and len(months) == 2
    assert len({n.section_id for n in nodes}) == len(nodes)
    assert [n.path for n in months] == [["PART I", "Three Months Ended"]] * 2


def test_each_duplicate_counts_only_its_own_chunks(filing):
    _, directory = filing
    nodes = _walk(_nav(directory).sections)
    for node in nodes:
        if node.title in ("Revenue", "Three Months Ended"):
            assert node.chunk_count == 1, node
    placements = sum(len(c.occurrences) for c in _chunks(directory).chunks)
    assert _nav(directory).root_chunk_count + sum(n.chunk_count for n in nodes) == placements


def test_chunks_cite_the_section_they_sit_in(filing):
    _, directory = filing
    by_id = {n.section_id: n for n in _walk(_nav(directory).sections)}
    for chunk in _chunks(directory).chunks:
        section = by_id[chunk.section_id or ""]
        assert section.title in chunk.content  # its heading line leads the chunk
        assert chunk.hierarchy_path == section.path


def test_the_nav_check_is_strict_about_counts(filing, tmp_path):
    _, directory = filing
    assert check_nav(directory / "doc_nav.json", directory / "chunks.json") == []
    nav = _nav(directory)
    first = nav.sections[0].children[0]
    bumped = first.model_copy(update={"chunk_count": first.chunk_count + 1})
    part = nav.sections[0].model_copy(update={"children": [bumped, *nav.sections[0].children[1:]]})
    broken = tmp_path / "doc_nav.json"
    broken.write_text(
        nav.model_copy(update={"sections": [part, *nav.sections[1:]]}).model_dump_json(),
        encoding="utf-8",
    )
    problems = check_nav(broken, directory / "chunks.json")
    assert any("'Revenue'" in p and "counts 2" in p for p in problems), problems


def test_published_sections_keep_duplicates_apart(settings, filing):
    record, _ = filing
    publish_namespaces(settings)
    revision = open_revision(settings.published_dir, "default")
    tree = outline(revision, record.document_id)
    parts = {s.title: s for s in tree.sections}
    assert [c.title for c in parts["PART I"].children] == [
        "Revenue",
        "Three Months Ended",
        "Three Months Ended",
    ]
    first, second = parts["PART I"].children[1:]
    assert first.section_id != second.section_id
    one = read(
        revision,
        ReadRequest(refs=[ReadRef(document_id=record.document_id, section_id=second.section_id)]),
    )
    assert [c.section_id for c in one.items[0].chunks] == [second.section_id]
    assert "research spending" in one.items[0].chunks[0].content
    both = read(
        revision,
        ReadRequest(
            refs=[
                ReadRef(
                    document_id=record.document_id, section_path=["PART I", "Three Months Ended"]
                )
            ]
        ),
    )
    assert {c.section_id for c in both.items[0].chunks} == {first.section_id, second.section_id}


def test_search_results_cite_the_section_id(settings, filing):
    _, directory = filing
    publish_namespaces(settings)
    revision = open_revision(settings.published_dir, "default")
    hit = classic_search(revision, SearchRequest(query="services subscriptions", top_k=1)).results[
        0
    ]
    part_two = next(s for s in _nav(directory).sections if s.title == "PART II")
    assert hit.section_path == ["PART II", "Revenue"]
    assert hit.section_id == part_two.children[0].section_id


def test_ingest_through_dagster_passes_the_strict_checks(settings, tmp_path):
    source = tmp_path / "filing.md"
    source.write_text(FILING, encoding="utf-8")
    [result] = ingest([source], settings)
    assert result.status == "ok", result.error
    assert result.counts["sections"] == 6


def test_section_rows_follow_the_nav_tree_parents_first():
    leaf = SectionNode(
        section_id="s4", title="A", path=["P", "A"], level=2, summary="", chunk_count=1
    )
    twin = leaf.model_copy(update={"section_id": "s6"})
    top = SectionNode(
        section_id="s0",
        title="P",
        path=["P"],
        level=1,
        summary="parts",
        chunk_count=0,
        children=[leaf, twin],
    )
    rows = build_sections([top])
    assert [(r.section_id, r.parent_id, r.sort_order) for r in rows] == [
        ("s0", None, 0),
        ("s4", "s0", 1),
        ("s6", "s0", 2),
    ]
    links = [(r.section_id, r.parent_id) for r in rows]
    assert descendants(links, {"s0"}) == {"s0", "s4", "s6"}
    assert descendants(links, {"s6"}) == {"s6"}
