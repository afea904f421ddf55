"""Read operations over one revision's LanceDB tables: documents, outline, read, neighbors,
filter values. Pure functions of a Revision (no HTTP), shared by the API and the MCP tools."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from typing import Any

from corpus_pipeline.common.textedit import Edit, apply_edits
from corpus_pipeline.contracts import ChunkMetadata, ChunkType, DocNav, Manifest, Relation
from corpus_pipeline.contracts import published as t
from corpus_pipeline.contracts.api import (
    MAX_READ_CHUNKS,
    DocumentDetail,
    DocumentList,
    DocumentSummary,
    FilterValues,
    Neighbor,
    Neighbors,
    Outline,
    OutlineSection,
    ReadChunk,
    ReadItem,
    ReadRef,
    ReadRequest,
    ReadResponse,
)
from corpus_pipeline.contracts.published import descendants
from corpus_pipeline.contracts.search import Resource, is_relative_ref
from query_service.snapshot.payloads import payload_for_chunk, resource_from_payload
from query_service.snapshot.revision import Revision

_SUMMARY_COLUMNS = [
    "document_id",
    "namespace",
    "source_file_name",
    "title",
    "format",
    "status",
    "active_revision",
    "chunk_count",
    "source_kind",
    "organizational_unit",
    "document_date",
    "created_at",
    "updated_at",
]
# Columns a revision published before documents carried their subject lacks (read when there).
_SUBJECT_COLUMNS = ["entity", "tickers", "form_type", "period_end", "fiscal_year", "fiscal_quarter"]


def _summary_columns(table: Any) -> list[str]:
    names = set(table.schema.names)
    return _SUMMARY_COLUMNS + [c for c in _SUBJECT_COLUMNS if c in names]


class DocumentNotFound(LookupError):
    def __init__(self, document_id: str) -> None:
        self.document_id = document_id
        super().__init__(f"document '{document_id}' not found")


class ResourceNotFound(LookupError):
    """Not a resource of the document in this revision: unknown, malformed or escaping refs
    all answer the same way."""

    def __init__(self, document_id: str, ref: str) -> None:
        self.document_id = document_id
        self.ref = ref
        super().__init__(f"resource '{ref}' not found in document '{document_id}'")


@dataclass(frozen=True)
class ResourceFile:
    """The stored bytes of one table/image file, as the revision published them."""

    data: bytes
    media_type: str
    sha256: str
    revision: int


# The only characters a published ref holds (images/<phash>.<ext>, tables/table-0001.html).
_REF_CHARS = re.compile(r"[A-Za-z0-9._/-]{1,300}")


def _summary(row: dict[str, Any]) -> DocumentSummary:
    fields = {k: row[k] for k in (*_SUMMARY_COLUMNS, *_SUBJECT_COLUMNS) if k in row}
    fields["tickers"] = fields.get("tickers") or []
    return DocumentSummary.model_validate(fields)


def _document_row(
    revision: Revision, document_id: str, columns: list[str] | None = None
) -> dict[str, Any]:
    query = revision.table(t.DOCUMENTS).search().where(f"document_id = {t.quote(document_id)}")
    if columns:
        query = query.select(columns)
    rows = query.limit(1).to_list()
    if not rows:
        raise DocumentNotFound(document_id)
    row: dict[str, Any] = rows[0]
    return row


def resource_file(revision: Revision, document_id: str, ref: str) -> ResourceFile:
    """A resource's bytes, looked up by exact (document, ref) in the revision's resources table:
    a ref is never joined onto a file-system path, so only listed resources can be answered."""
    _document_row(revision, document_id, ["document_id"])
    if not _REF_CHARS.fullmatch(ref) or not is_relative_ref(ref):
        raise ResourceNotFound(document_id, ref)
    try:
        table = revision.table(t.RESOURCES)
    except KeyError:  # a revision published before resources were stored
        raise ResourceNotFound(document_id, ref) from None
    rows = (
        table.search()
        .where(f"document_id = {t.quote(document_id)} AND ref = {t.quote(ref)}")
        .select(["media_type", "sha256", "data"])
        .limit(1)
        .to_list()
    )
    if not rows:
        raise ResourceNotFound(document_id, ref)
    row = rows[0]
    return ResourceFile(
        data=bytes(row["data"]),
        media_type=row["media_type"],
        sha256=row["sha256"],
        revision=revision.number,
    )


def list_documents(revision: Revision, offset: int, limit: int) -> DocumentList:
    rows = revision.rows(t.DOCUMENTS, columns=_summary_columns(revision.table(t.DOCUMENTS)))
    rows.sort(key=lambda r: (r["source_file_name"], r["document_id"]))
    return DocumentList(
        namespace=revision.namespace,
        revision=revision.number,
        total=len(rows),
        offset=offset,
        limit=limit,
        items=[_summary(r) for r in rows[offset : offset + limit]],
    )


def document_detail(revision: Revision, document_id: str) -> DocumentDetail:
    row = _document_row(revision, document_id)
    return DocumentDetail(
        revision=revision.number,
        document=_summary(row),
        manifest=Manifest.model_validate_json(row["manifest"]),
        nav=DocNav.model_validate_json(row["nav"]),
    )


def _sections_of(revision: Revision, document_id: str) -> list[dict[str, Any]]:
    """A document's published sections in document order (parents before children)."""
    sections = revision.rows(
        t.SECTIONS,
        f"document_id = {t.quote(document_id)}",
        ["section_id", "parent_id", "path", "title", "level", "summary", "sort_order"],
    )
    sections.sort(key=lambda s: s["sort_order"])
    return sections


def outline(revision: Revision, document_id: str) -> Outline:
    row = _document_row(revision, document_id, ["title", "source_file_name"])
    sections = _sections_of(revision, document_id)
    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for s in sections:
        children[s["parent_id"]].append(s)

    def build(parent: str | None) -> list[OutlineSection]:
        return [
            OutlineSection(
                section_id=s["section_id"],
                title=s["title"],
                path=list(s["path"]),
                level=s["level"],
                summary=s["summary"],
                children=build(s["section_id"]),
            )
            for s in children.get(parent, [])
        ]

    return Outline(
        revision=revision.number,
        document_id=document_id,
        title=row["title"],
        source_file_name=row["source_file_name"],
        sections=build(None),
    )


def _resource_of(revision: Revision, chunk_row: dict[str, Any]) -> Resource | None:
    """A table/image chunk's resource, resolved from the published index payload."""
    payload = payload_for_chunk(revision, chunk_row["chunk_id"])
    return resource_from_payload(revision.namespace, payload) if payload else None


def resource_marker(resource: Resource) -> str:
    """How an embedded image (or a table without HTML) reads in text: its relative ref and
    document, which the resource URL serves — never a path on the server."""
    return (
        f"[{resource.kind} {resource.ref} (document {resource.document_id}): "
        f"{resource.description or ''}]"
    )


def render_chunk(
    revision: Revision, row: dict[str, Any], by_id: dict[str, dict[str, Any]]
) -> ReadChunk:
    """Embed connected tables (HTML) and images (ref + description) at their marker spans —
    planned edits applied in reverse order, never string replacement of placeholders."""
    metadata = ChunkMetadata.model_validate_json(row["metadata"])
    resources: list[Resource] = []
    edits: list[Edit] = []
    for conn in metadata.connect_to:
        if conn.relation is not Relation.EMBEDS:
            continue
        target = by_id.get(conn.target) or _chunk_row(revision, conn.target, row["document_id"])
        resource = _resource_of(revision, target) if target else None
        if resource is None:
            continue
        resources.append(resource)
        if resource.kind == "table" and resource.html:
            replacement = resource.html
        else:
            replacement = resource_marker(resource)
        edits.append(Edit(conn.position[0], conn.position[1], replacement))
    content, _ = apply_edits(row["content"], edits)
    own = None
    if row["chunk_type"] != ChunkType.TEXT.value:
        own = _resource_of(revision, row)
        if own is not None:
            resources.append(own)
            if own.kind == "table" and own.html:
                content = own.html
    return ReadChunk(
        chunk_id=row["chunk_id"],
        chunk_type=ChunkType(row["chunk_type"]),
        document_id=row["document_id"],
        source_file_name=row["source_path"],
        section_path=list(row["section_path"]),
        section_id=row.get("section_id"),
        pages=list(row["pages"] or []),
        content=content,
        resources=resources,
    )


def _chunk_row(
    revision: Revision, chunk_id: str, document_id: str | None = None
) -> dict[str, Any] | None:
    where = f"chunk_id = {t.quote(chunk_id)}"
    if document_id:
        where += f" AND document_id = {t.quote(document_id)}"
    rows = revision.table(t.CHUNKS).search().where(where).limit(1).to_list()
    return rows[0] if rows else None


def read(revision: Revision, request: ReadRequest) -> ReadResponse:
    """Each ref resolved on its own: one bad ref never hides the others."""
    items = []
    left = MAX_READ_CHUNKS
    for ref in request.refs:
        if left == 0:
            items.append(
                ReadItem(
                    ref=ref,
                    status="ok",
                    truncated=True,
                    message=f"not read: this answer holds {MAX_READ_CHUNKS} chunks; ask again",
                )
            )
            continue
        item = _read_ref(revision, ref, min(request.max_chunks_per_ref, left))
        left -= len(item.chunks)
        items.append(item)
    return ReadResponse(namespace=revision.namespace, revision=revision.number, items=items)


def _read_ref(revision: Revision, ref: ReadRef, limit: int) -> ReadItem:
    if ref.chunk_id is not None:
        row = _chunk_row(revision, ref.chunk_id)
        if row is None:
            return ReadItem(
                ref=ref, status="not_found", message=f"chunk '{ref.chunk_id}' not found"
            )
        return ReadItem(ref=ref, status="ok", chunks=[render_chunk(revision, row, {})])
    assert ref.document_id is not None
    rows = revision.rows(t.CHUNKS, f"document_id = {t.quote(ref.document_id)}")
    if not rows:
        return ReadItem(
            ref=ref, status="not_found", message=f"document '{ref.document_id}' not found"
        )
    wanted = _selected_sections(revision, ref)
    selected = sorted(
        (r for r in rows if wanted is None or wanted & set(r.get("section_ids") or [])),
        key=lambda r: r["sort_order"],
    )
    if not selected:
        what = ref.section_id or " > ".join(ref.section_path or [])
        return ReadItem(
            ref=ref,
            status="not_found",
            message=f"section '{what}' not found in '{ref.document_id}'",
        )
    by_id = {r["chunk_id"]: r for r in rows}
    embedded = {
        conn.target
        for r in selected
        for conn in ChunkMetadata.model_validate_json(r["metadata"]).connect_to
        if conn.relation is Relation.EMBEDS
    }
    # Resources embedded in a selected text chunk are shown there, not again on their own.
    selected = [r for r in selected if r["chunk_id"] not in embedded]
    chunks = [render_chunk(revision, r, by_id) for r in selected[:limit]]
    return ReadItem(ref=ref, status="ok", chunks=chunks, truncated=len(selected) > limit)


def _selected_sections(revision: Revision, ref: ReadRef) -> set[str] | None:
    """The ids of the sections a ref reads (with everything below them); None = the whole
    document. A path selects every section with that path (titles may repeat), an id one."""
    if ref.section_id is None and not ref.section_path:
        return None
    assert ref.document_id is not None
    sections = _sections_of(revision, ref.document_id)
    if ref.section_id is not None:
        roots = {s["section_id"] for s in sections if s["section_id"] == ref.section_id}
    else:
        prefix = list(ref.section_path or [])
        roots = {s["section_id"] for s in sections if list(s["path"]) == prefix}
    return descendants(((s["section_id"], s["parent_id"]) for s in sections), roots)


def neighbors(revision: Revision, document_id: str) -> Neighbors:
    _document_row(revision, document_id, ["document_id"])
    quoted = t.quote(document_id)
    edges = revision.rows(t.GRAPH_EDGES, f"source = {quoted} OR target = {quoted}")
    others = {e["target"] if e["source"] == document_id else e["source"]: e for e in edges}
    docs = {}
    if others:
        docs = {
            r["document_id"]: r
            for r in revision.rows(
                t.DOCUMENTS,
                t.in_list("document_id", sorted(others)),
                ["document_id", "title", "source_file_name"],
            )
        }
    result = [
        Neighbor(
            document_id=other,
            title=docs[other]["title"],
            source_file_name=docs[other]["source_file_name"],
            relation=edge["relation"],
            score=edge["score"],
            shared_keywords=list(edge["shared_keywords"]),
        )
        for other, edge in others.items()
        if other in docs
    ]
    result.sort(key=lambda n: (-n.score, n.document_id))
    return Neighbors(revision=revision.number, document_id=document_id, neighbors=result)


def filter_values(revision: Revision) -> FilterValues:
    names = revision.table(t.DOCUMENTS).schema.names
    columns = ["format", "source_kind", "organizational_unit", "document_date", "source_file_name"]
    rows = revision.rows(t.DOCUMENTS, columns=columns + [c for c in _SUBJECT_COLUMNS if c in names])
    dates: list[date] = [r["document_date"] for r in rows if r["document_date"]]
    return FilterValues(
        namespace=revision.namespace,
        revision=revision.number,
        document_type=sorted({r["format"] for r in rows}),
        source=sorted({r["source_kind"] for r in rows}),
        organizational_unit=sorted(
            {r["organizational_unit"] for r in rows if r["organizational_unit"]}
        ),
        date_min=min(dates, default=None),
        date_max=max(dates, default=None),
        path_prefix=sorted(
            {
                r["source_file_name"].split("/", 1)[0] + "/"
                for r in rows
                if "/" in r["source_file_name"]
            }
        ),
        entity=sorted({n for r in rows for n in (r.get("entity"), *(r.get("tickers") or ())) if n}),
        form_type=sorted({r["form_type"] for r in rows if r.get("form_type")}),
        fiscal_period=sorted(
            {
                period
                for r in rows
                if r.get("fiscal_year")
                for period in (
                    str(r["fiscal_year"]),
                    *(
                        [f"{r['fiscal_year']}Q{r['fiscal_quarter']}"]
                        if r.get("fiscal_quarter")
                        else []
                    ),
                )
            }
        ),
    )
