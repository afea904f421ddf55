"""doc_nav.json: the section tree with summaries and direct chunk counts, plus resources."""

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
    counts: Counter[tuple[str, ...]] = Counter()
    text_by_path: dict[tuple[str, ...], list[str]] = {}
    for chunk in chunks:
        for occ in chunk.occurrences:
            key = tuple(occ.hierarchy_path)
            counts[key] += 1
            if chunk.chunk_type is ChunkType.TEXT:
                text_by_path.setdefault(key, []).append(chunk.content)

    def section(node: HeadingNode) -> SectionNode:
        key = tuple(node.path)
        children = [section(child) for child in node.children]
        body = " ".join(text_by_path.get(key, []))[:4000]
        if body:
            summary = summarize(body)
        elif children:
            summary = "Sections: " + "; ".join(c.title for c in children[:8])
        else:
            summary = ""
        return SectionNode(
            title=node.title,
            path=list(node.path),
            level=node.level,
            summary=summary,
            chunk_count=counts.get(key, 0),
            children=children,
        )

    return DocNav(
        document_id=document_id,
        title=title,
        root_chunk_count=counts.get((), 0),
        sections=[section(h) for h in headings],
        resources=resources,
    )
