"""Evidence as an agent reads it: each chunk rendered once, compactly (a table as its text rows,
a table a text embeds in its place), passages of chunks that read on in their section, a
passage's last chunk cut at a sentence or row boundary when the budget ends inside it, and
the evidence text with one citation per passage."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from corpus_pipeline.common.textedit import Edit, apply_edits, shift_offset
from corpus_pipeline.contracts.agentic import Citation, EvidenceResponse
from corpus_pipeline.contracts.search import (
    Resource,
    SearchResponse,
    SearchResult,
    resource_url,
)
from query_service.retrieval.budget import tokens_of
from query_service.snapshot.sections import SectionPath, Sid
from query_service.snapshot.store import resource_marker

CUT_MARK = " […cut: `read` returns the rest]"
# Between two hits of one section that are not next to each other: rows skipped.
GAP_MARK = "\n\n[…]\n\n"
# Where a cut may end a chunk's text: after a sentence, or at a line break (a table row, a list
# item, a paragraph); a word boundary only when the first sentence alone does not fit.
_SENTENCE_OR_ROW = re.compile(r"(?<=[.!?:;])[\"'”’)\]]*(?=\s)|(?=\n)")
_WORD = re.compile(r"(?=\s)")


@dataclass(frozen=True)
class Piece:
    """One chunk as evidence: where it is, its compact text and how it was found."""

    chunk_id: str
    document_id: str
    source_file_name: str
    section_id: Sid
    section_path: SectionPath
    order: int  # its place in its document
    pages: tuple[int, ...]
    text: str
    embeds: tuple[str, ...] = ()  # chunks rendered inside it (tables in their place)
    resource: str | None = None
    score: float = 0.0  # fused discovery score (0: context)
    step_id: str = ""
    raw: str = ""  # the stored content, with its embedding markers
    inlined: tuple[tuple[int, int, str, str], ...] = ()  # (start, end, chunk id, text) per table

    @property
    def cost(self) -> int:
        """Its text's tokens as the JSON response carries them (escapes included)."""
        return json_tokens(self.text)

    def without(self, read: set[str]) -> Piece:
        """This chunk as read after the tables in `read`: those keep their markers (their rows
        are in the evidence already)."""
        if not any(target in read for _, _, target, _ in self.inlined):
            return self
        edits = [Edit(a, b, text) for a, b, target, text in self.inlined if target not in read]
        return replace(self, text=_edited(self.raw, edits))


@dataclass
class Passage:
    """Chunks of one section in document order: the one it was found by (its anchor), the ones
    before it the passage reads back into and the ones after it reads on into, and further hits
    of the same section joined to it (`gaps`: the chunks before which rows were skipped, shown
    as GAP_MARK). `cut` holds the last chunk's text when the budget ended in it."""

    pieces: list[Piece]
    cut: str | None = None
    core: bool = False  # a hit of the question or of one of its parts (never dropped)
    anchor_at: int = 0
    gaps: frozenset[str] = frozenset()

    @property
    def anchor(self) -> Piece:
        return self.pieces[self.anchor_at]

    @property
    def last(self) -> Piece:
        return self.pieces[-1]

    def text(self) -> str:
        texts = [p.text for p in self.pieces]
        if self.cut is not None:
            texts[-1] = self.cut
        out = texts[0]
        for piece, text in zip(self.pieces[1:], texts[1:], strict=True):
            out += (GAP_MARK if piece.chunk_id in self.gaps else "\n\n") + text
        return out

    def text_cost(self) -> int:
        gaps = sum(1 for p in self.pieces[1:] if p.chunk_id in self.gaps)
        return (
            sum(p.cost for p in self.pieces[:-1])
            + json_tokens(self.last.text if self.cut is None else self.cut + CUT_MARK)
            + gaps * GAP_COST
        )

    def chunk_ids(self) -> set[str]:
        return {c for p in self.pieces for c in (p.chunk_id, *p.embeds)}

    def but(self, pieces: list[Piece], cut: str | None) -> Passage:
        """The same passage over other pieces (its anchor among them)."""
        return Passage(pieces, cut, self.core, pieces.index(self.anchor), self.gaps)


@lru_cache(maxsize=16384)
def json_tokens(text: str) -> int:
    """Tokens of a text inside a JSON string (newlines and quotes escaped), as the response
    carries it."""
    return tokens_of(json.dumps(text, ensure_ascii=False)) - 1


GAP_COST = json_tokens(GAP_MARK)


def _edited(content: str, edits: list[Edit]) -> str:
    try:
        return apply_edits(content, edits)[0]
    except ValueError:  # overlapping marker spans: the markers stay as they are
        return content


def compact_text(
    row: dict[str, Any], by_id: dict[str, dict[str, Any]]
) -> tuple[str, tuple[str, ...], str, tuple[tuple[int, int, str, str], ...]]:
    """A chunk row's text for the agent: the content, each embedded table's rows in its place
    (the table's HTML stays one `read` or download away), each image as its ref and description
    (as `read` renders it); with the chunks it embeds, the text before the tables are inlined,
    and the tables it inlines (their spans in that text)."""
    metadata = json.loads(row["metadata"])
    inlined: list[tuple[int, int, str, str]] = []
    images: list[Edit] = []
    embeds: list[str] = []
    for link in metadata.get("connect_to", []):
        if link["relation"] != "embeds":
            continue
        target = by_id.get(link["target"])
        if target is None:
            continue
        embeds.append(link["target"])
        start, end = link["position"]
        if target["chunk_type"] == "table":
            inlined.append((start, end, link["target"], target["content"]))
        elif target.get("resource_path"):  # an image: its ref and description, as `read` has it
            described = Resource(
                kind="image",
                document_id=row["document_id"],
                ref=target["resource_path"],
                url="",
                description=target["content"],
            )
            images.append(Edit(start, end, resource_marker(described)))
    raw = _edited(row["content"], images)
    # The tables' spans, moved past the image markers before them.
    inlined = [
        (shift_offset(a, images), shift_offset(a, images) + (b - a), c, t) for a, b, c, t in inlined
    ]
    text = _edited(raw, [Edit(a, b, t) for a, b, _, t in inlined])
    return text, tuple(dict.fromkeys(embeds)), raw, tuple(inlined)


def piece_of(
    namespace: str,
    row: dict[str, Any],
    by_id: dict[str, dict[str, Any]],
    path: SectionPath,
    sid: Sid,
    score: float = 0.0,
    step_id: str = "",
) -> Piece:
    """A chunk row of a document as evidence (its pages include those of what it embeds)."""
    text, embeds, raw, inlined = compact_text(row, by_id)
    pages = {*(row["pages"] or [])}
    for target in embeds:
        pages.update(by_id.get(target, {}).get("pages") or [])
    ref = row.get("resource_path")
    return Piece(
        chunk_id=row["chunk_id"],
        document_id=row["document_id"],
        source_file_name=row["source_path"],
        section_id=sid,
        section_path=path,
        order=int(row["sort_order"]),
        pages=tuple(sorted(pages)),
        text=text,
        embeds=embeds,
        resource=resource_url(namespace, row["document_id"], ref)
        if ref and row["chunk_type"] != "text"
        else None,
        score=score,
        step_id=step_id,
        raw=raw,
        inlined=inlined,
    )


def cut_text(text: str, tokens: int) -> str | None:
    """The longest start of `text` within `tokens` (JSON tokens, the cut mark included) that
    ends after a sentence or at a line break (a table row), else at a word boundary, else (one
    word longer than the room) anywhere; None when the room holds not even the cut mark."""
    room = tokens - json_tokens(CUT_MARK)
    if room <= 0:
        return None
    for pattern in (_SENTENCE_OR_ROW, _WORD):
        ends = sorted({m.end() for m in pattern.finditer(text)} - {0})
        best = _longest_fitting(text, ends, room)
        if best is not None:
            return best
    return _longest_fitting(text, range(1, len(text)), room)


def _longest_fitting(text: str, ends: Sequence[int], room: int) -> str | None:
    """Binary search over the cut positions (a longer start never holds fewer tokens)."""
    low, high, best = 0, len(ends) - 1, None
    while low <= high:
        mid = (low + high) // 2
        start = text[: ends[mid]].rstrip()
        if start and json_tokens(start) <= room:
            best, low = start, mid + 1
        else:
            high = mid - 1
    return best


def _pages(pages: Sequence[int]) -> str:
    if not pages:
        return ""
    if len(pages) == 1:
        return f"p. {pages[0]}"
    if list(pages) == list(range(pages[0], pages[-1] + 1)):
        return f"pp. {pages[0]}-{pages[-1]}"
    return "pp. " + ", ".join(map(str, pages))


def heading(number: int, passage: Passage, previous: Passage | None) -> str:
    """A passage's `[n]` line: its file and section when they change, and its pages."""
    anchor = passage.anchor
    pages = _pages(sorted({page for p in passage.pieces for page in p.pages}))
    path = _relative_path(anchor, previous.anchor if previous is not None else None)
    parts = [f"[{number}]"]
    if previous is None or previous.anchor.document_id != anchor.document_id:
        parts.append(anchor.source_file_name + ("," if pages else ""))
    if pages:
        parts.append(pages)
    if previous is None or (previous.anchor.document_id, previous.anchor.section_id) != (
        anchor.document_id,
        anchor.section_id,
    ):
        parts.append(f"· {path}")
    return " ".join(parts)


def _relative_path(anchor: Piece, previous: Piece | None) -> str:
    """The section path as read after the previous passage: the headings it shares with the
    previous passage's path (same document) shown as "…" (the citation holds the whole path)."""
    path = list(anchor.section_path)
    if not path:
        return "(document start)"
    shared = 0
    if previous is not None and previous.document_id == anchor.document_id:
        for mine, theirs in zip(path[:-1], previous.section_path, strict=False):
            if mine != theirs:
                break
            shared += 1
    return " > ".join(["…"] * bool(shared) + path[shared:])


def render(passages: Sequence[Passage]) -> tuple[str, list[Citation]]:
    """The evidence text and a citation per passage (its span in the text)."""
    out: list[str] = []
    length = 0
    citations: list[Citation] = []
    previous: Passage | None = None
    for number, passage in enumerate(passages, 1):
        if out:
            out.append("\n\n")
            length += 2
        head = heading(number, passage, previous) + "\n"
        text = passage.text()
        start = length + len(head)
        out.append(head + text + (CUT_MARK if passage.cut is not None else ""))
        length += len(out[-1])
        citations.append(citation(passage, (start, start + len(text))))
        previous = passage
    return "".join(out), citations


def citation(passage: Passage, span: tuple[int, int]) -> Citation:
    anchor = passage.anchor
    return Citation(
        chunk_id=anchor.chunk_id,
        document_id=anchor.document_id,
        source_file_name=anchor.source_file_name,
        section_path=list(anchor.section_path),
        section_id=anchor.section_id or None,
        pages=sorted({page for p in passage.pieces for page in p.pages}),
        score=round(anchor.score, 4),
        span=span,
        more_chunks=[p.chunk_id for p in passage.pieces if p is not anchor],
        cut=passage.cut is not None,
        resource=anchor.resource,
    )


def passage_overhead(passage: Passage, previous: Passage | None) -> int:
    """What a passage costs beyond its text: its citation and its heading line."""
    probe = citation(passage, (99_999, 99_999))
    return (
        tokens_of(probe.model_dump_json())
        + json_tokens(heading(99, passage, previous))
        + 3  # separators: the comma between citations, the line breaks in the text
    )


def read_on_overhead(piece: Piece, first: bool) -> int:
    """A chunk a passage reads on into: its id in `more_chunks` (the key, the first time)."""
    return tokens_of(piece.chunk_id) + 3 + (6 if first else 0)


def result_piece(result: SearchResult, step_id: str = "") -> Piece:
    """A search result as evidence, as classic search cites it and with its searched content
    (no place in its document's rows: it reads on into nothing)."""
    return Piece(
        chunk_id=result.chunk_id,
        document_id=result.document_id,
        source_file_name=result.source_file_name,
        section_id=result.section_id or "",
        section_path=tuple(result.section_path),
        order=-1,
        pages=tuple(result.pages),
        text=result.content,
        resource=result.resource.url if result.resource else None,
        score=result.score,
        step_id=step_id,
    )


def classic_evidence(response: SearchResponse) -> EvidenceResponse:
    """Classic results in the lean shape agentic search answers with (MCP's `search`): each
    result's text once, in `evidence_text`, and a citation per result."""
    passages = [Passage([result_piece(r)]) for r in response.results]
    text, citations = render(passages)
    return EvidenceResponse(
        query=response.query,
        namespace=response.namespace,
        revision=response.revision,
        mode="classic",
        evidence_text=text,
        results=citations,
    )
