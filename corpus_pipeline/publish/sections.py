"""Sections built top-down from segment paths: every ancestor exists, parents before children."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
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


def section_id_for(document_id: str, path: Iterable[str]) -> str:
    key = "\x1f".join([document_id, *path])
    return "s" + hashlib.sha256(key.encode()).hexdigest()[:24]


def build_sections(
    document_id: str, nav_sections: list[SectionNode], segment_paths: Iterable[tuple[str, ...]]
) -> list[SectionRow]:
    """Sections of the nav tree (with summaries and levels), plus any segment path's missing
    ancestors (level = depth). Ordered by first appearance, parents first."""
    known: dict[tuple[str, ...], tuple[int, str]] = {}

    def walk(nodes: list[SectionNode]) -> None:
        for node in nodes:
            known.setdefault(tuple(node.path), (node.level, node.summary))
            walk(node.children)

    walk(nav_sections)
    ordered: list[tuple[str, ...]] = []
    seen: set[tuple[str, ...]] = set()

    def add(path: tuple[str, ...]) -> None:
        for depth in range(1, len(path) + 1):
            prefix = path[:depth]
            if prefix not in seen:
                seen.add(prefix)
                ordered.append(prefix)

    for path in known:
        add(path)
    for path in segment_paths:
        if path:
            add(path)
    rows: list[SectionRow] = []
    for order, path in enumerate(ordered):
        level, summary = known.get(path, (len(path), ""))
        rows.append(
            SectionRow(
                section_id=section_id_for(document_id, path),
                parent_id=section_id_for(document_id, path[:-1]) if len(path) > 1 else None,
                path=path,
                title=path[-1],
                level=level,
                summary=summary,
                sort_order=order,
            )
        )
    return rows
