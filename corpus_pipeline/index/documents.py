"""A chunk's tantivy document: its channels' texts, filter fields, pages and parts.

Built from the stored payload (content and every place the chunk occurs), so a chunk found in
several documents is one index document carrying the values of each of its places.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import tantivy

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.index import channels as ch

TINY_WORDS = 12


def _path_words(occ: dict[str, Any]) -> list[str]:
    """Where a chunk sits, as the path channel reads it: file name, the document's title
    (a filing's company name or a report's title heads every chunk, even where the title
    section closes before the document's parts begin) and the section path."""
    title = occ.get("document_title") or ""
    path = list(occ["section_path"])
    head = [title] if title and title not in path[:1] else []
    return [occ["source_file_name"], *head, *path]


def _document_context(occurrences: list[dict[str, Any]]) -> str:
    """How the chunk's documents name themselves on every page (their running headers and
    footers, "Apple Inc. | Q1 2023 Form 10-Q"), indexed with each of their chunks: the words a
    question uses to say which document it means are rarely near the answer."""
    lines: dict[str, None] = {}
    for occ in occurrences:
        for line in (occ.get("document_title") or "", *occ.get("running_text", ())):
            if line:
                lines.setdefault(line, None)
    return "\n".join(lines)


def index_document(payload: dict[str, Any]) -> tantivy.Document:
    payload["occurrences"].sort(key=lambda o: (o["document_id"], o["order"]))
    occurrences = payload["occurrences"]
    paths = "\n".join(" ".join(_path_words(occ)) for occ in occurrences)
    doc = tantivy.Document()
    doc.add_text(ch.F_CHUNK_ID, payload["chunk_id"])
    doc.add_text(ch.F_CHUNK_TYPE, payload["chunk_type"])
    for document_id in sorted({occ["document_id"] for occ in occurrences}):
        doc.add_text(ch.F_DOCUMENT_IDS, document_id)
    content, summary = payload["content"], payload["summary"]
    # A summary already inside the content (a table's caption, an extractive sentence) is not
    # counted twice; a resource's lead-in is document text, so the term channel holds it too.
    extra = "" if summary in content else summary
    if payload["chunk_type"] == ChunkType.TABLE.value:
        # A table is searched by what names it too: its caption (the summary) and the title
        # of the section it sits in, where it does not open with them.
        titles = dict.fromkeys(o["section_path"][-1] for o in occurrences if o["section_path"])
        extra = "\n".join([extra, *(t for t in titles if t not in content)]).strip()
    lead_in = extra if payload["chunk_type"] != ChunkType.TEXT.value else ""
    # The documents' running headers are page text, so both text channels read them.
    context = _document_context(occurrences)
    # A text chunk too short to answer anything (a lone label, "Yes.", a heading and a table
    # marker) does not win the content channel on its document's title words: there its
    # handful of words would weigh the title as much as a whole passage's.
    tiny = payload["chunk_type"] == ChunkType.TEXT.value and len(content.split()) < TINY_WORDS
    own = "\n".join((content, extra)) if tiny else "\n".join((content, extra, context))
    doc.add_text(ch.F_CONTENT, ch.with_variants(own))
    doc.add_text(ch.F_PATH, paths)
    doc.add_text(ch.F_TERM, ch.with_variants("\n".join((content, lead_in, paths, context))))
    doc.add_bytes(ch.F_STORED, ch.encode_stored(payload))
    for field_name, key in (
        (ch.F_DOCUMENT_TYPE, "document_type"),
        (ch.F_SOURCE, "source"),
        (ch.F_ORG_UNIT, "organizational_unit"),
        (ch.F_SOURCE_PATH, "source_file_name"),
    ):
        for value in sorted({ch.filter_value(o[key]) for o in occurrences if o.get(key)}):
            doc.add_text(field_name, value)
    for value in sorted(
        {ch.filter_value(name) for o in occurrences for name in ch.entity_names(o)}
    ):
        doc.add_text(ch.F_ENTITY, value)
    for value in sorted(
        {ch.filter_value(o["form_type"]) for o in occurrences if o.get("form_type")}
    ):
        doc.add_text(ch.F_FORM_TYPE, value)
    for value in sorted({p for o in occurrences for p in ch.fiscal_periods(o)}):
        doc.add_text(ch.F_FISCAL_PERIOD, value)
    for value in sorted({o["statement"] for o in occurrences if o.get("statement")}):
        doc.add_text(ch.F_STATEMENT, value)
    for day in sorted({o["document_date"] for o in occurrences if o.get("document_date")}):
        doc.add_integer(ch.F_DATE, date.fromisoformat(day).toordinal())
    for field_name, key in ((ch.F_PAGE, "pages"), (ch.F_PAGE_FROM_END, "pages_from_end")):
        for number in sorted({n for o in occurrences for n in o.get(key, ())}):
            doc.add_integer(field_name, number)
    for label in sorted(
        {ch.filter_value(x) for o in occurrences for x in o.get("page_labels", ())}
    ):
        doc.add_text(ch.F_PAGE_LABEL, label)
    caption = summary if payload["chunk_type"] != ChunkType.TEXT.value else None
    titles = dict.fromkeys(title for occ in occurrences for title in occ["section_path"])
    for part in sorted(ch.chunk_parts(list(titles), caption)):
        doc.add_text(ch.F_PART, part)
    return doc
