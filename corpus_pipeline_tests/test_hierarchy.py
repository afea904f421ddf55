"""One heading stack for all formats."""

from __future__ import annotations

from collections.abc import Sequence

from corpus_pipeline.contracts import ParsedRow, RowType
from corpus_pipeline.structure.hierarchy import assign_hierarchy, compact_hierarchy, heading_tree


def _rows(spec: Sequence[tuple[str, int | None]]) -> list[ParsedRow]:
    return [
        ParsedRow(
            order=i,
            row_type=RowType.HEADING if level else RowType.PARAGRAPH,
            text=text,
            heading_level=level,
            source_location=f"row {i}",
        )
        for i, (text, level) in enumerate(spec)
    ]


def test_returning_to_a_higher_level_closes_child_levels():
    rows = assign_hierarchy(_rows([("A", 1), ("A.1", 2), ("A.1.a", 3), ("B", 1), ("text", None)]))
    assert rows[2].hierarchy_path == ["A", "A.1", "A.1.a"]
    assert rows[3].hierarchy_path == ["B"]
    assert rows[4].hierarchy_path == ["B"]


def test_a_sibling_replaces_its_predecessor_at_the_same_level():
    rows = assign_hierarchy(_rows([("A", 1), ("A.1", 2), ("A.2", 2), ("body", None)]))
    assert rows[3].hierarchy_path == ["A", "A.2"]


def test_skipped_levels_nest_under_the_nearest_open_heading():
    rows = assign_hierarchy(_rows([("Top", 1), ("Deep", 4), ("Mid", 2)]))
    assert rows[1].hierarchy_path == ["Top", "Deep"]
    assert rows[2].hierarchy_path == ["Top", "Mid"]


def test_text_before_any_heading_has_an_empty_path():
    rows = assign_hierarchy(_rows([("preface", None), ("A", 1)]))
    assert rows[0].hierarchy_path == []


def test_heading_tree_and_compact_hierarchy_mirror_the_stack():
    rows = assign_hierarchy(_rows([("A", 1), ("A.1", 2), ("B", 1), ("B.1", 2), ("B.1.a", 3)]))
    tree = heading_tree(rows)
    assert [n.title for n in tree] == ["A", "B"]
    assert tree[1].children[0].children[0].path == ["B", "B.1", "B.1.a"]
    compact = compact_hierarchy(tree)
    assert compact[0].children[0].title == "A.1"
    assert compact[1].children[0].children[0].level == 3


def test_a_numbered_heading_never_nests_under_another_numbered_branch():
    # A sampled report: sections 1.2 and 2.1.6 follow each other, 2 and 2.1 are not in the file.
    spec = [("Report", 1), ("1.2 Current state", 2), ("2.1.6 Change usage", 3), ("body", None)]
    rows = assign_hierarchy(_rows(spec))
    assert rows[3].hierarchy_path == ["Report", "2.1.6 Change usage"]


def test_a_numbered_heading_stays_inside_the_heading_its_number_extends():
    # The chapter digit was set large (a deeper level by font) than its sections.
    spec = [("1", 3), ("Securing data", 4), ("1.1 Fundamentals", 2), ("1.3.1 Control", 3)]
    rows = assign_hierarchy(_rows(spec))
    assert rows[2].hierarchy_path == ["1", "1.1 Fundamentals"]
    assert rows[3].hierarchy_path == ["1", "1.3.1 Control"]
    (chapter,) = heading_tree(rows)
    assert [c.title for c in chapter.children] == [
        "Securing data",
        "1.1 Fundamentals",
        "1.3.1 Control",
    ]


def test_years_and_unnumbered_headings_follow_levels_only():
    spec = [("1 Intro", 1), ("2020 results", 2), ("Summary", 2), ("1.1 Scope", 2)]
    rows = assign_hierarchy(_rows(spec))
    assert rows[1].hierarchy_path == ["1 Intro", "2020 results"]
    assert rows[3].hierarchy_path == ["1 Intro", "1.1 Scope"]
