"""Contract checks of a document's artifacts (used by Dagster asset checks and tests).

Each function returns a list of problems; an empty list means the artifact honours its contract.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import ValidationError

from corpus_pipeline.common.ids import chunk_id_for
from corpus_pipeline.common.textedit import Edit, apply_edits
from corpus_pipeline.contracts import Chunk, ChunksFile, ChunkType, DocNav, Manifest, Relation
from corpus_pipeline.structure.chunking import marker_for


def hash_text_of(chunk: Chunk) -> str:
    """The chunk's content without embedded-resource markers (what its id hashes)."""
    if chunk.chunk_type is not ChunkType.TEXT:
        return chunk.content
    edits = [
        Edit(c.position[0], c.position[1], "")
        for c in chunk.metadata.connect_to
        if c.relation is Relation.EMBEDS
    ]
    text, _ = apply_edits(chunk.content, edits)
    return text


def check_chunks(chunks_path: Path, document_dir: Path | None = None) -> list[str]:
    try:
        data = ChunksFile.model_validate_json(chunks_path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        return [f"chunks.json invalid: {exc}"]
    problems: list[str] = []
    ids = {c.chunk_id for c in data.chunks}
    if len(ids) != len(data.chunks):
        problems.append("duplicate chunk_id in chunks.json")
    for chunk in data.chunks:
        meta = chunk.metadata
        where = f"chunk {chunk.chunk_id}"
        if not chunk.content.strip():
            problems.append(f"{where}: empty content")
        if meta.length != len(chunk.content):
            problems.append(f"{where}: metadata.length {meta.length} != {len(chunk.content)}")
        for conn in meta.connect_to:
            start, end = conn.position
            if not 0 <= start <= end <= len(chunk.content):
                problems.append(f"{where}: connect_to position {conn.position} outside content")
                continue
            if conn.relation is Relation.EMBEDS:
                if conn.target not in ids:
                    problems.append(f"{where}: embeds unknown chunk {conn.target}")
                kind = "table" if conn.ref.startswith("tables/") else "image"
                if chunk.content[start:end] != marker_for(kind, conn.ref):
                    problems.append(f"{where}: embed marker not at its position")
            elif chunk.content[start:end] != conn.ref:
                problems.append(f"{where}: related link text not at its position")
        if chunk_id_for(hash_text_of(chunk)) != chunk.chunk_id:
            problems.append(f"{where}: id is not the hash of its text content")
        if chunk.chunk_type in (ChunkType.TABLE, ChunkType.IMAGE):
            if not meta.file_path:
                problems.append(f"{where}: {chunk.chunk_type.value} without file_path")
            elif document_dir is not None and not (document_dir / meta.file_path).is_file():
                problems.append(f"{where}: missing resource file {meta.file_path}")
    return problems


def check_nav(nav_path: Path, chunks_path: Path) -> list[str]:
    try:
        nav = DocNav.model_validate_json(nav_path.read_text(encoding="utf-8"))
        chunks = ChunksFile.model_validate_json(chunks_path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        return [f"doc_nav.json invalid: {exc}"]
    ids = {c.chunk_id for c in chunks.chunks}
    problems = [
        f"resource {r.resource_id} points to unknown chunk {r.chunk_id}"
        for r in nav.resources
        if r.chunk_id not in ids
    ]
    # Sections are nodes: every id once, every placement counted in exactly its own section.
    counts: dict[str | None, int] = {None: nav.root_chunk_count}
    titles: dict[str, str] = {}
    stack = list(nav.sections)
    while stack:
        node = stack.pop()
        if node.section_id in counts:
            problems.append(f"section id {node.section_id} appears twice")
        counts[node.section_id] = node.chunk_count
        titles[node.section_id] = node.title
        stack.extend(node.children)
    placed: dict[str | None, int] = dict.fromkeys(counts, 0)
    for chunk in chunks.chunks:
        for occ in chunk.occurrences:
            if occ.section_id not in counts:
                problems.append(f"chunk {chunk.chunk_id} sits in unknown section {occ.section_id}")
                continue
            placed[occ.section_id] += 1
    for section_id, expected in counts.items():
        if placed[section_id] != expected:
            where = f"section {section_id} ({titles[section_id]!r})" if section_id else "root"
            problems.append(
                f"{where} counts {expected} chunk placements but chunks.json has "
                f"{placed[section_id]} there"
            )
    section_ids = set(counts) - {None}
    problems += [
        f"resource {r.resource_id} sits in unknown section {r.section_id}"
        for r in nav.resources
        if r.section_id is not None and r.section_id not in section_ids
    ]
    return problems


def check_manifest(document_dir: Path) -> list[str]:
    try:
        manifest = Manifest.model_validate_json(
            (document_dir / "manifest.json").read_text(encoding="utf-8")
        )
    except (OSError, ValidationError) as exc:
        return [f"manifest.json invalid: {exc}"]
    problems: list[str] = []
    for rel, digest in manifest.files.items():
        path = document_dir / rel
        if not path.is_file():
            problems.append(f"listed file missing: {rel}")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"file changed since manifest: {rel}")
    for required in (
        "chunks.json",
        "doc_nav.json",
        "headings.json",
        "diagnostics.json",
        manifest.source.archived_path,
    ):
        if required not in manifest.files:
            problems.append(f"required file not in manifest: {required}")
    problems += check_chunks(document_dir / "chunks.json", document_dir)
    problems += check_nav(document_dir / "doc_nav.json", document_dir / "chunks.json")
    return problems
