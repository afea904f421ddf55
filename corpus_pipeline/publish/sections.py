"""Sections of a published document: the nav tree's nodes, parents before children.

A section is identified by its id in the document (its heading's row order), never by its title
path: two sibling sections with the same title are two rows with their own chunks. The title
path stays for display and for `section_path` filters."""

from __future__ import annotations

from dataclasses import dataclass

from corpus_pipeline.contracts import SectionNode


@dataclass(frozen=True)
class SectionRow:
    section_id: str
    parent_id: str | None
    path: tuple[str, ...]
    title: str
    level: int
    summary: str
    sort_order: int


def build_sections(nav_sections: list[SectionNode]) -> list[SectionRow]:
    """Every node of the nav tree in document order (pre-order: parents first)."""
    rows: list[SectionRow] = []

    def walk(nodes: list[SectionNode], parent: str | None) -> None:
        for node in nodes:
            rows.append(
                SectionRow(
                    section_id=node.section_id,
                    parent_id=parent,
                    path=tuple(node.path),
                    title=node.title,
                    level=node.level,
                    summary=node.summary,
                    sort_order=len(rows),
                )
            )
            walk(node.children, node.section_id)

    walk(nav_sections, None)
    return rows
