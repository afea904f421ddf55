"""One heading stack for every format: assigns hierarchy paths and builds the heading tree.

A heading at level L closes every open heading at level >= L, so a return to a higher level
never leaves stale children on the path; skipped levels (H1 → H3) are kept as they are.
Section numbers outrank levels: a numbered heading (`2.1.6 …`) also closes every open numbered
heading that is not a prefix of its number (`1.2 …`), so a sampled or partly detected document
never files section 2.1.6 under section 1.2 just because their levels would allow it, and a
heading whose number extends an open one (`1.1` under `1`) stays inside it whatever its level.

A section is a node, not a title path: each heading opens a section whose id is its row order
(`section_id_for`), so two sibling sections with the same title ("Revenue" in PART I and again
in PART II, or the same table caption twice) stay distinct in the nav tree, the chunks and
everything published from them; the title path is only for display.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from corpus_pipeline.contracts import HeadingNode, HierarchyNode, ParsedRow, RowType

_SECTION_NUMBER = re.compile(r"(\d{1,3}(?:\.\d{1,3})*)\.?(?=\s|$)")


def section_number(title: str) -> tuple[int, ...] | None:
    """The leading decimal section number of a heading (`2.1.6 Change …` → (2, 1, 6))."""
    match = _SECTION_NUMBER.match(title)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def section_id_for(order: int) -> str:
    """A section's id: its heading's row order, stable for the same file and parser."""
    return f"s{order}"


@dataclass
class _Open:
    level: int
    title: str
    number: tuple[int, ...] | None
    section_id: str = ""


@dataclass
class HeadingStack:
    """The open headings above the current row."""

    entries: list[_Open] = field(default_factory=list)

    def push(self, level: int, title: str, section_id: str = "") -> int:
        """Open a heading; returns its depth (0-based) in the stack."""
        number = section_number(title)
        if number is not None:
            for index, entry in enumerate(self.entries):
                if entry.number is not None and entry.number != number[: len(entry.number)]:
                    del self.entries[index:]
                    break
        while self.entries and self.entries[-1].level >= level:
            top = self.entries[-1].number
            if number is not None and top is not None and top == number[: len(top)]:
                break  # `1.1` stays inside `1` even when a big chapter digit got a deeper level
            self.entries.pop()
        self.entries.append(_Open(level, title, number, section_id))
        return len(self.entries) - 1

    @property
    def path(self) -> list[str]:
        return [entry.title for entry in self.entries]

    @property
    def ids(self) -> list[str]:
        return [entry.section_id for entry in self.entries]


def _is_heading(row: ParsedRow) -> bool:
    return (
        row.row_type is RowType.HEADING and row.heading_level is not None and bool(row.text.strip())
    )


def assign_hierarchy(rows: list[ParsedRow]) -> list[ParsedRow]:
    """Return rows with `hierarchy_path` and `section_ids` set (a heading's own section is the
    last entry of both)."""
    stack = HeadingStack()
    out: list[ParsedRow] = []
    for row in rows:
        if _is_heading(row) and row.heading_level is not None:
            stack.push(row.heading_level, _title(row.text), section_id_for(row.order))
        out.append(row.model_copy(update={"hierarchy_path": stack.path, "section_ids": stack.ids}))
    return out


def _title(text: str) -> str:
    return " ".join(text.split())


def heading_tree(rows: list[ParsedRow]) -> list[HeadingNode]:
    """The full heading tree (rows must already carry hierarchy paths)."""
    roots: list[HeadingNode] = []
    stack = HeadingStack()
    nodes: list[HeadingNode] = []
    for row in rows:
        if not _is_heading(row) or row.heading_level is None:
            continue
        node = HeadingNode(
            section_id=section_id_for(row.order),
            title=_title(row.text),
            level=row.heading_level,
            order=row.order,
            path=list(row.hierarchy_path),
            page=row.page_numbers[0] if row.page_numbers else None,
            source_location=row.source_location,
        )
        depth = stack.push(row.heading_level, node.title, node.section_id)
        del nodes[depth:]
        (nodes[-1].children if nodes else roots).append(node)
        nodes.append(node)
    return roots


def compact_hierarchy(nodes: list[HeadingNode]) -> list[HierarchyNode]:
    """The manifest's nested HIERARCHY: titles and levels only."""
    return [
        HierarchyNode(title=n.title, level=n.level, children=compact_hierarchy(n.children))
        for n in nodes
    ]
