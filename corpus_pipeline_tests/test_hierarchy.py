"""One heading stack for all formats."""

from __future__ import annotations

from corpus_pipeline.contracts import ParsedRow, RowType
from corpus_pipeline.hierarchy import assign_hierarchy, compact_hierarchy, heading_tree


def _rows(spec: list[tuple[str, int | None]]) -> list[ParsedRow]:
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
