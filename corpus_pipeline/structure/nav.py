"""doc_nav.json: the section tree with summaries and direct chunk counts, plus resources.

Chunks are counted by the id of the section they sit in, never by its title path: sibling
sections with the same title ("Revenue" under PART I and PART II) keep their own counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from corpus_pipeline.contracts import (
    Chunk,
    ChunkType,
    DocNav,
    HeadingNode,
    ResourceEntry,
    SectionNode,
)


def build_nav(
    document_id: str,
    title: str,
    headings: list[HeadingNode],
    chunks: list[Chunk],
    resources: list[ResourceEntry],
    summarize: Callable[[str], str],
) -> DocNav:
    counts: Counter[str | None] = Counter()
    text_by_section: dict[str | None, list[str]] = {}
    for chunk in chunks:
        for occ in chunk.occurrences:
            counts[occ.section_id] += 1
            if chunk.chunk_type is ChunkType.TEXT:
                text_by_section.setdefault(occ.section_id, []).append(chunk.content)

    def section(node: HeadingNode) -> SectionNode:
        children = [section(child) for child in node.children]
        body = " ".join(text_by_section.get(node.section_id, []))[:4000]
        if body:
            summary = summarize(body)
        elif children:
            summary = "Sections: " + "; ".join(c.title for c in children[:8])
        else:
            summary = ""
        return SectionNode(
            section_id=node.section_id,
            title=node.title,
            path=list(node.path),
            level=node.level,
            summary=summary,
            chunk_count=counts.get(node.section_id, 0),
            children=children,
        )

    return DocNav(
        document_id=document_id,
        title=title,
        root_chunk_count=counts.get(None, 0),
        sections=[section(h) for h in headings],
        resources=resources,
    )
