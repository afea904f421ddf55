"""One heading stack for every format: assigns hierarchy paths and builds the heading tree.

A heading at level L closes every open heading at level >= L, so a return to a higher level
never leaves stale children on the path; skipped levels (H1 → H3) are kept as they are.
"""

from __future__ import annotations

from corpus_pipeline.contracts import HeadingNode, HierarchyNode, ParsedRow, RowType


def assign_hierarchy(rows: list[ParsedRow]) -> list[ParsedRow]:
    """Return rows with `hierarchy_path` set (a heading's path includes its own title)."""
    stack: list[tuple[int, str]] = []
    out: list[ParsedRow] = []
    for row in rows:
        if row.row_type is RowType.HEADING and row.heading_level is not None and row.text.strip():
            while stack and stack[-1][0] >= row.heading_level:
                stack.pop()
            stack.append((row.heading_level, _title(row.text)))
        out.append(row.model_copy(update={"hierarchy_path": [title for _, title in stack]}))
    return out


def _title(text: str) -> str:
    return " ".join(text.split())


def heading_tree(rows: list[ParsedRow]) -> list[HeadingNode]:
    """The full heading tree (rows must already carry hierarchy paths)."""
    roots: list[HeadingNode] = []
    stack: list[tuple[int, HeadingNode]] = []
    for row in rows:
        if row.row_type is not RowType.HEADING or row.heading_level is None or not row.text.strip():
            continue
        node = HeadingNode(
            title=_title(row.text),
            level=row.heading_level,
            order=row.order,
            path=list(row.hierarchy_path),
            page=row.page_numbers[0] if row.page_numbers else None,
            source_location=row.source_location,
        )
        while stack and stack[-1][0] >= row.heading_level:
            stack.pop()
        (stack[-1][1].children if stack else roots).append(node)
        stack.append((row.heading_level, node))
    return roots


def compact_hierarchy(nodes: list[HeadingNode]) -> list[HierarchyNode]:
    """The manifest's nested HIERARCHY: titles and levels only."""
    return [
        HierarchyNode(title=n.title, level=n.level, children=compact_hierarchy(n.children))
        for n in nodes
    ]
