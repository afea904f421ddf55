"""Rows → typed segments (`text`, `image`, `table`) with deterministic content-hash ids.

Text is grouped per section and bounded by a token limit (split at paragraph, then sentence,
then word boundaries). A section's heading line leads its first chunk, so a title is text a
reader and a search find, and identical paragraphs under different headings start distinct
chunks. No text chunk is only a heading or a fragment: a section holding nothing but its heading
opens into the next section's first chunk, a tiny tail joins the chunk before it in its section,
and a heading that only introduces tables is carried by those tables. Tables and images are
never split here and become their own segments (a table chunk opens with its caption, else the
title of its section, and is indexed with the text that introduces it), referenced from the
text flow by an `embeds` connection at the marker's character span.
Markers are planned as edits over the plain text and applied in reverse order (`textedit`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from corpus_pipeline.common.ids import chunk_id_for
from corpus_pipeline.common.textedit import Edit, apply_edits, shift_offset
from corpus_pipeline.contracts import (
    Chunk,
    ChunkMetadata,
    ChunkType,
    ConnectTo,
    LinkSpan,
    Occurrence,
    ParsedRow,
    Relation,
    ResourceEntry,
    RowType,
)
from corpus_pipeline.contracts.artifacts import image_placeholder
from corpus_pipeline.enrich.text import (
    Passage,
    analyse,
    chunk_keywords,
    passage_text,
    sentence_spans,
)
from corpus_pipeline.enrich.tokens import count_tokens
from corpus_pipeline.finance.statements import statement_of_chunk

PARAGRAPH_SEPARATOR = "\n\n"
_LEAD_IN_WORDS = 80
# A text group under this many tokens is a fragment, not a chunk: it joins a neighbour.
MIN_TEXT_TOKENS = 25
# A table or image chunk's text at most: parsers part tables at 600 tokens of rows (and of
# columns, for rows too wide), so this binds only what they cannot part — one huge cell, an
# image's alt text — whose chunk then reads its start (the table's HTML holds the rest).
RESOURCE_MAX_TOKENS = 2000
_BODY_TYPES = {RowType.PARAGRAPH, RowType.LIST_ITEM, RowType.TOC, RowType.CAPTION}


@dataclass(frozen=True)
class ChunkingOptions:
    max_tokens: int = 300
    keywords_per_chunk: int = 8
    language: str | None = None
    summarize: Callable[[Passage], str] = lambda passage: passage_text(passage)[:200]


@dataclass
class _TextPiece:
    text: str
    pages: list[int]
    links: list[LinkSpan] = field(default_factory=list)
    tokens: int = 0
    heading: bool = False


@dataclass
class _EmbedPiece:
    chunk_id: str
    file_path: str
    kind: str
    pages: list[int]


_Piece = _TextPiece | _EmbedPiece


@dataclass
class _Draft:
    """A segment before per-document dedupe."""

    chunk_type: ChunkType
    content: str
    hash_text: str
    path: list[str]
    pages: list[int]
    section_id: str | None = None
    file_path: str | None = None
    connect_to: list[ConnectTo] = field(default_factory=list)
    caption: str | None = None
    context: str = ""


@dataclass
class ChunkingResult:
    chunks: list[Chunk]
    resources: list[ResourceEntry]


def marker_for(kind: str, file_path: str) -> str:
    """The visible reference to an embedded resource inside text content."""
    return f"[{kind}: {file_path}]"


def build_chunks(rows: list[ParsedRow], options: ChunkingOptions) -> ChunkingResult:
    """Segment rows (with hierarchy paths assigned) into chunks and resource entries."""
    captions, consumed = _attach_captions(rows)
    drafts: list[_Draft] = []
    resources: list[tuple[ParsedRow, _Draft]] = []
    buffer: list[_Piece] = []
    path: list[str] = []
    ids: list[str] = []

    def flush() -> None:
        drafts.extend(_text_drafts(buffer, path, ids[-1] if ids else None, options))
        buffer.clear()

    # The last words of body text before a resource in its section: the lead-in that says what
    # a table or image is about (layout often puts its real caption a paragraph or two away).
    context = ""
    for row in rows:
        if row.row_type is RowType.HEADING or row.section_ids != ids:
            new_ids = list(row.section_ids)
            if not _only_headings(buffer):
                flush()
            path, ids = list(row.hierarchy_path), new_ids
            context = ""
        if row.row_type is RowType.HEADING:
            if has_content(row.text):
                buffer.append(_heading_piece(row))
        elif row.row_type in (RowType.TABLE, RowType.IMAGE):
            draft = _resource_draft(row, captions.get(row.order), context)
            context = ""
            drafts.append(draft)
            resources.append((row, draft))
            buffer.append(
                _EmbedPiece(
                    chunk_id_for(draft.hash_text),
                    draft.file_path or "",
                    draft.chunk_type.value,
                    row.page_numbers,
                )
            )
        elif row.row_type in _BODY_TYPES and row.order not in consumed and has_content(row.text):
            buffer.append(_text_piece(row))
            context = " ".join((context + " " + row.text).split()[-_LEAD_IN_WORDS:])
    flush()
    chunks = _dedupe(drafts, options)
    return ChunkingResult(chunks=chunks, resources=_resource_entries(resources))


def has_content(text: str) -> bool:
    """Text a reader sees and can search: a letter, a digit or a symbol. Punctuation, spaces and
    invisible characters alone (a CSV of only commas, a file of zero-width characters) make no
    chunk, so such a document fails as empty instead of publishing junk."""
    return any(unicodedata.category(ch)[0] in "LNS" for ch in text)


def _only_headings(buffer: list[_Piece]) -> bool:
    """A section holding nothing but its heading(s) opens into the next section: its heading
    lines lead that section's first chunk (as a reader meets them) instead of standing alone as
    a heading-only chunk."""
    return bool(buffer) and all(isinstance(p, _TextPiece) and p.heading for p in buffer)


def _heading_piece(row: ParsedRow) -> _TextPiece:
    """A heading line leads its section's first chunk: the title is part of the text a reader
    sees there (and what a question about the section's name must find)."""
    text = " ".join(row.text.split())
    return _TextPiece(text, list(row.page_numbers), [], count_tokens(text), heading=True)


def _text_piece(row: ParsedRow) -> _TextPiece:
    """A body row as text; list items get a bullet so lists stay readable in content."""
    prefix = "- " if row.row_type is RowType.LIST_ITEM else ""
    text = (prefix + row.text).rstrip()
    links = [
        LinkSpan(
            start=lk.start + len(prefix), end=min(lk.end + len(prefix), len(text)), target=lk.target
        )
        for lk in row.links
        if lk.start + len(prefix) < len(text)
    ]
    return _TextPiece(text, list(row.page_numbers), links, count_tokens(text))


def _attach_captions(rows: list[ParsedRow]) -> tuple[dict[int, str], set[int]]:
    """Caption text for table/image rows from an adjacent caption row in the same section,
    and the caption rows so consumed (they are not repeated in the text flow)."""
    out: dict[int, str] = {}
    used: set[int] = set()
    for i, row in enumerate(rows):
        if row.row_type not in (RowType.TABLE, RowType.IMAGE):
            continue
        for j in (i + 1, i - 1):
            if 0 <= j < len(rows):
                cand = rows[j]
                if (
                    cand.row_type is RowType.CAPTION
                    and cand.order not in used
                    and cand.section_ids == row.section_ids
                    and cand.text.strip()
                ):
                    out[row.order] = " ".join(cand.text.split())
                    used.add(cand.order)
                    break
    return out, used


def _resource_draft(row: ParsedRow, caption: str | None, context: str = "") -> _Draft:
    kind = ChunkType.TABLE if row.row_type is RowType.TABLE else ChunkType.IMAGE
    text = row.text.strip()
    # A table opens with what names it: its caption, else the title of its section (figures
    # alone rarely say what they measure). Images keep their own text: they are deduplicated by
    # what they show, wherever they appear.
    name = caption or (
        row.hierarchy_path[-1] if kind is ChunkType.TABLE and row.hierarchy_path else None
    )
    if name and not text.startswith(name):
        text = f"{name}\n{text}".strip()
    if count_tokens(text) > RESOURCE_MAX_TOKENS:
        # What the parser could not part (one huge cell, an image's alt text): the chunk reads
        # its start; the table's HTML (the resource) holds all of it.
        stop = fitting_end(text, 0, len(text), RESOURCE_MAX_TOKENS - 8, 4 * RESOURCE_MAX_TOKENS)
        text = text[:stop].rstrip() + " […]"
    if not text and row.resource_path:
        # An image with neither alt text nor caption: its perceptual hash is its content.
        text = image_placeholder(PurePosixPath(row.resource_path).stem)
    return _Draft(
        chunk_type=kind,
        content=text,
        hash_text=text,
        path=list(row.hierarchy_path),
        pages=list(row.page_numbers),
        section_id=row.section_ids[-1] if row.section_ids else None,
        file_path=row.resource_path,
        caption=caption,
        context=context,
    )


def _text_drafts(
    pieces: list[_Piece], path: list[str], section_id: str | None, options: ChunkingOptions
) -> list[_Draft]:
    drafts: list[_Draft] = []
    for group in _merge_fragments(_pack(_split_long(pieces, options), options.max_tokens)):
        if _introduces_tables(group):
            continue
        draft = _assemble(group, path, section_id)
        if draft is not None:
            drafts.append(draft)
    return drafts


def _split_long(pieces: list[_Piece], options: ChunkingOptions) -> list[_Piece]:
    """Split text pieces over the limit at sentence, then word boundaries. Parts are spans of
    the original text (whitespace kept as written), so link offsets carry over exactly."""
    out: list[_Piece] = []
    for piece in pieces:
        if isinstance(piece, _EmbedPiece) or piece.tokens <= options.max_tokens:
            out.append(piece)
            continue
        for start, end in _bounded_spans(piece.text, options):
            part = piece.text[start:end]
            links = [
                LinkSpan(start=lk.start - start, end=lk.end - start, target=lk.target)
                for lk in piece.links
                if lk.start >= start and lk.end <= end
            ]
            out.append(_TextPiece(part, piece.pages, links, count_tokens(part)))
    return out


def _bounded_spans(text: str, options: ChunkingOptions) -> list[tuple[int, int]]:
    parts: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for start, end in sentence_spans(text, options.language):
        if count_tokens(text[start:end]) > options.max_tokens:
            if current:
                parts.append(current)
                current = None
            parts.extend(_word_windows(text, start, end, options.max_tokens))
            continue
        if current and count_tokens(text[current[0] : end]) > options.max_tokens:
            parts.append(current)
            current = (start, end)
        else:
            current = (current[0], end) if current else (start, end)
    if current:
        parts.append(current)
    return parts


def _word_windows(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """Spans of whole words within `max_tokens`; a word longer than that alone (text without
    spaces: a hash, a URL, a base64 blob) is cut into windows of characters."""
    windows: list[tuple[int, int]] = []
    first: int | None = None
    last = start
    used = 0
    for match in re.finditer(r"\S+", text[start:end]):
        w_start, w_end = start + match.start(), start + match.end()
        cost = count_tokens(match.group(0) + " ")
        if first is not None and used + cost > max_tokens:
            windows.append((first, last))
            first, used = None, 0
        if cost > max_tokens:
            windows.extend(char_windows(text, w_start, w_end, max_tokens))
            continue
        if first is None:
            first = w_start
        last = w_end
        used += cost
    if first is not None:
        windows.append((first, last))
    return windows


def char_windows(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """`text[start:end]` cut into consecutive spans of at most `max_tokens` tokens, each the
    longest that fits (`fitting_end`)."""
    windows: list[tuple[int, int]] = []
    guess = 4 * max_tokens
    while start < end:
        stop = fitting_end(text, start, end, max_tokens, guess)
        windows.append((start, stop))
        guess, start = stop - start, stop
    return windows


def fitting_end(text: str, start: int, end: int, max_tokens: int, guess: int) -> int:
    """The largest stop <= end with `text[start:stop]` within `max_tokens` tokens (at least one
    character): galloping from `guess` characters, then bisection (a longer span never holds
    fewer tokens), so a long run costs a few tokenizations of each window, not of the run."""
    fits, over = start + 1, None
    probe = min(end, start + max(guess, 1))
    while over is None and fits < end:
        if count_tokens(text[start:probe]) <= max_tokens:
            fits = probe
            probe = min(end, start + 2 * (probe - start))
        else:
            over = probe
    high = (over - 1) if over is not None else fits
    while fits < high:
        mid = (fits + high + 1) // 2
        if count_tokens(text[start:mid]) <= max_tokens:
            fits = mid
        else:
            high = mid - 1
    return fits


def _pack(pieces: list[_Piece], max_tokens: int) -> list[list[_Piece]]:
    """Greedy packing of consecutive pieces under the token limit (embeds cost ~10 tokens)."""
    groups: list[list[_Piece]] = []
    current: list[_Piece] = []
    used = 0
    for piece in pieces:
        cost = piece.tokens if isinstance(piece, _TextPiece) else 10
        if current and used + cost > max_tokens and any(isinstance(p, _TextPiece) for p in current):
            groups.append(current)
            current, used = [], 0
        current.append(piece)
        used += cost
    if current:
        groups.append(current)
    return groups


def _text_tokens(group: list[_Piece]) -> int:
    return sum(p.tokens for p in group if isinstance(p, _TextPiece))


def _merge_fragments(groups: list[list[_Piece]]) -> list[list[_Piece]]:
    """A section's last group under MIN_TEXT_TOKENS (the tail of a split: one short sentence, a
    lone list item) joins the group before it, which may then exceed the limit by that much."""
    if len(groups) > 1 and _text_tokens(groups[-1]) < MIN_TEXT_TOKENS:
        return [*groups[:-2], groups[-2] + groups[-1]]
    return groups


def _introduces_tables(group: list[_Piece]) -> bool:
    """Heading lines followed only by tables: each table opens with its section's title, so a
    text chunk of the title and the markers would be a heading-only fragment."""
    embeds = [p for p in group if isinstance(p, _EmbedPiece)]
    return (
        bool(embeds)
        and all(e.kind == ChunkType.TABLE.value for e in embeds)
        and all(p.heading for p in group if isinstance(p, _TextPiece))
    )


def _assemble(group: list[_Piece], path: list[str], section_id: str | None) -> _Draft | None:
    """Join text pieces; plan one insertion per embed, then apply them in reverse order."""
    texts: list[str] = []
    links: list[tuple[int, LinkSpan]] = []
    anchors: list[tuple[int, _EmbedPiece]] = []
    pages: set[int] = set()
    length = 0
    for piece in group:
        pages.update(piece.pages)
        if isinstance(piece, _EmbedPiece):
            anchors.append((length, piece))
            continue
        if texts:
            length += len(PARAGRAPH_SEPARATOR)
        links.extend((length, lk) for lk in piece.links)
        texts.append(piece.text)
        length += len(piece.text)
    base = PARAGRAPH_SEPARATOR.join(texts)
    if not base.strip():
        return None
    edits: list[Edit] = []
    marker_offsets: list[int] = []
    for anchor, embed in anchors:
        # Anchors sit at the end of a paragraph: the marker becomes its own paragraph.
        marker = marker_for(embed.kind, embed.file_path)
        before, after = (PARAGRAPH_SEPARATOR, "") if anchor > 0 else ("", PARAGRAPH_SEPARATOR)
        edits.append(Edit(anchor, anchor, before + marker + after))
        marker_offsets.append(len(before))
    content, spans = apply_edits(base, edits)
    connect: list[ConnectTo] = []
    for (_, embed), (start, _end), lead in zip(anchors, spans, marker_offsets, strict=True):
        marker = marker_for(embed.kind, embed.file_path)
        connect.append(
            ConnectTo(
                target=embed.chunk_id,
                relation=Relation.EMBEDS,
                ref=embed.file_path,
                position=(start + lead, start + lead + len(marker)),
            )
        )
    for base_offset, link in links:
        start = shift_offset(base_offset + link.start, edits)
        end = start + (link.end - link.start)
        connect.append(
            ConnectTo(
                target=link.target,
                relation=Relation.RELATED,
                ref=content[start:end],
                position=(start, end),
            )
        )
    connect.sort(key=lambda c: (c.position, c.relation.value, c.target))
    return _Draft(
        chunk_type=ChunkType.TEXT,
        content=content,
        hash_text=base,
        path=path,
        pages=sorted(pages),
        section_id=section_id,
        connect_to=connect,
    )


def _dedupe(drafts: list[_Draft], options: ChunkingOptions) -> list[Chunk]:
    """One chunk per content hash; later identical drafts become extra occurrences."""
    by_id: dict[str, tuple[_Draft, list[Occurrence], int]] = {}
    for order, draft in enumerate(drafts):
        cid = chunk_id_for(draft.hash_text)
        occurrence = Occurrence(
            hierarchy_path=draft.path,
            section_id=draft.section_id,
            order=order,
            page_nums=draft.pages,
        )
        if cid in by_id:
            by_id[cid][1].append(occurrence)
        else:
            by_id[cid] = (draft, [occurrence], order)
    chunks: list[Chunk] = []
    # One tokenisation per chunk, read by its keywords and its summary.
    analyses = [analyse(draft.hash_text) for draft, _, _ in by_id.values()]
    keywords = chunk_keywords(analyses, options.keywords_per_chunk)
    for (cid, (draft, occurrences, order)), chunk_words, analysis in zip(
        by_id.items(), keywords, analyses, strict=True
    ):
        pages = sorted({p for occ in occurrences for p in occ.page_nums})
        if draft.chunk_type is ChunkType.TEXT:
            summary = options.summarize(analysis)
        else:
            # Caption, else the lead-in text before it: indexed with the resource.
            summary = draft.caption or draft.context or draft.content.split("\n", 1)[0][:200]
        metadata = ChunkMetadata(
            length=len(draft.content),
            summary=summary,
            page_nums=pages,
            tokens=count_tokens(draft.content),
            keywords=chunk_words,
            file_path=draft.file_path,
            order=order,
            connect_to=draft.connect_to,
            statement=statement_of_chunk(draft.path, draft.content, draft.chunk_type),
        )
        chunks.append(
            Chunk(
                chunk_id=cid,
                chunk_type=draft.chunk_type,
                content=draft.content,
                hierarchy_path=draft.path,
                section_id=draft.section_id,
                metadata=metadata,
                occurrences=occurrences,
            )
        )
    return chunks


def _resource_entries(resources: list[tuple[ParsedRow, _Draft]]) -> list[ResourceEntry]:
    entries: list[ResourceEntry] = []
    images = 0
    for row, draft in resources:
        if draft.chunk_type is ChunkType.TABLE:
            resource_id = PurePosixPath(draft.file_path or "table").stem
        else:
            images += 1
            resource_id = f"image-{images:04d}"
        entries.append(
            ResourceEntry(
                resource_id=resource_id,
                kind="table" if draft.chunk_type is ChunkType.TABLE else "image",
                file_path=draft.file_path or "",
                chunk_id=chunk_id_for(draft.hash_text),
                caption=draft.caption,
                section_path=list(row.hierarchy_path),
                section_id=draft.section_id,
                page_nums=list(row.page_numbers),
            )
        )
    return entries
