"""Plain-text strategy, plus the byte decoding every text-like format (HTML, Markdown) shares.

Plain text has no markup, so structure is guessed conservatively: a heading must stand alone
and look like one (numbered, ALL CAPS or setext-underlined); anything doubtful stays a
paragraph, because a false heading corrupts every later hierarchy path.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from corpus_pipeline.contracts import LinkSpan, RowType
from corpus_pipeline.parsing.base import DiagnosticSink, ParseContext

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# WHATWG: these labels really mean windows-1252 on the web.
_CP1252_ALIASES = frozenset({"ascii", "latin-1", "latin1", "iso-8859-1", "iso8859-1", "us-ascii"})


def decode_bytes(
    data: bytes, diagnostics: DiagnosticSink, *, declared: str | None = None
) -> str | None:
    """Bytes → text: BOM, then strict UTF-8, then a declared charset, then cp1252 (with a warning).

    Returns None (with an error diagnostic) for binary data instead of producing mojibake.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    utf16 = _bomless_utf16(data)
    if utf16 is not None:
        diagnostics.add("parse", "encoding.guessed", f"no BOM; decoded as {utf16}", level="info")
        return data.decode(utf16, errors="replace")
    if b"\x00" in data[:8192]:
        diagnostics.add(
            "parse", "encoding.undecodable", "NUL bytes: not a text file", level="error"
        )
        return None
    try:
        # Valid UTF-8 is almost never anything else, even when a stale meta tag says so.
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    codec = _usable_codec(declared)
    if codec is not None:
        try:
            return data.decode(codec)
        except UnicodeDecodeError:
            diagnostics.add(
                "parse", "encoding.mismatch", f"declared charset {declared!r} does not fit"
            )
    sample = data[:8192]
    controls = sum(1 for b in sample if b < 9 or 13 < b < 32)
    if controls > len(sample) * 0.01:
        diagnostics.add(
            "parse", "encoding.undecodable", "control bytes: not a text file", level="error"
        )
        return None
    diagnostics.add("parse", "encoding.fallback", "not valid UTF-8; decoded as cp1252")
    return data.decode("cp1252", errors="replace")


def _bomless_utf16(data: bytes) -> str | None:
    """UTF-16 without BOM shows as NUL in every other byte of ASCII-heavy text."""
    sample = data[:1024]
    if len(sample) < 8:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "utf-16-be"
    return None


def _usable_codec(label: str | None) -> str | None:
    if not label:
        return None
    name = label.strip().lower()
    if name in _CP1252_ALIASES:
        return "cp1252"
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    # A declared UTF-16/32 without BOM is a lie in practice (WHATWG treats it as UTF-8).
    return None if codec.startswith(("utf-16", "utf-32")) else codec


def line_range(first: int, last: int) -> str:
    """The shared 1-based source location format of line-oriented formats."""
    return f"lines {first}-{last}"


_URL = re.compile(r"https?://[^\s<>\"']+")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S")
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*)(\.?)\s+(\S.*)$")
_UNDERLINE = re.compile(r"^\s*(={3,}|-{3,})\s*$")
_RULE = re.compile(r"^\s*([-=*_~#]\s*){3,}$")
_MAX_HEADING_CHARS = 80


@dataclass(frozen=True)
class _Line:
    number: int  # 1-based
    text: str


def read_source_text(ctx: ParseContext, what: str) -> str | None:
    """The decoded source, or None with a diagnostic when it is unreadable, binary or empty."""
    try:
        data = ctx.source_path.read_bytes()
    except OSError as exc:
        ctx.diagnostics.add("parse", "document.unreadable", type(exc).__name__, level="error")
        return None
    text = decode_bytes(data, ctx.diagnostics)
    if text is not None and not text.strip():
        ctx.diagnostics.add("parse", "document.empty", f"no {what} to parse", level="error")
        return None
    return text


def parse_text(ctx: ParseContext) -> None:
    """Emit headings, paragraphs and list items of a plain-text file in reading order."""
    text = read_source_text(ctx, "text")
    if text is None:
        return
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for block in _blocks([_Line(i + 1, line.rstrip()) for i, line in enumerate(lines)]):
        _emit_block(ctx, block)
    _nest_under_title(ctx)


def _nest_under_title(ctx: ParseContext) -> None:
    """An unnumbered heading that opens the file is the document title: numbered sections
    (`1.`, `2.1`) below it become its children instead of its siblings."""
    headings = [i for i, row in enumerate(ctx.rows) if row.row_type is RowType.HEADING]
    if len(headings) < 2 or headings[0] != 0 or _NUMBERED.match(ctx.rows[0].text.strip()):
        return
    if not any(_NUMBERED.match(ctx.rows[i].text.strip()) for i in headings[1:]):
        return
    for i in headings[1:]:
        level = ctx.rows[i].heading_level or 1
        ctx.rows[i] = ctx.rows[i].model_copy(update={"heading_level": min(level + 1, 9)})


def _blocks(lines: list[_Line]) -> list[list[_Line]]:
    """Blank-line separated runs of lines."""
    blocks: list[list[_Line]] = []
    current: list[_Line] = []
    for line in lines:
        if line.text.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _emit_block(ctx: ParseContext, block: list[_Line]) -> None:
    # Setext underlines may sit inside a block: split around each underlined title.
    pending: list[_Line] = []
    i = 0
    while i < len(block):
        line = block[i]
        underline = _UNDERLINE.match(block[i + 1].text) if i + 1 < len(block) else None
        if underline and not pending and _heading_shaped(line.text):
            _emit_lines(ctx, pending)
            pending = []
            level = 1 if underline.group(1).startswith("=") else 2
            ctx.emit(
                RowType.HEADING,
                line.text.strip(),
                line_range(line.number, block[i + 1].number),
                heading_level=level,
            )
            i += 2
            continue
        pending.append(line)
        i += 1
    _emit_lines(ctx, pending)


def _emit_lines(ctx: ParseContext, lines: list[_Line]) -> None:
    if not lines:
        return
    location = line_range(lines[0].number, lines[-1].number)
    if all(_RULE.match(line.text) for line in lines):
        return  # horizontal rules carry no text
    if len(lines) == 1:
        level = heading_level_of(lines[0].text)
        if level is not None:
            ctx.emit(RowType.HEADING, lines[0].text.strip(), location, heading_level=level)
            return
    if _BULLET.match(lines[0].text):
        _emit_list(ctx, lines)
        return
    if all(line.text.startswith(("    ", "\t")) for line in lines):
        # Indented block (code, ASCII art): line breaks carry meaning.
        body = "\n".join(line.text for line in lines)
        _emit_with_urls(ctx, RowType.PARAGRAPH, _dedent(body), location)
        return
    joined = " ".join(line.text.strip() for line in lines)
    _emit_with_urls(ctx, RowType.PARAGRAPH, joined, location)


def _emit_list(ctx: ParseContext, lines: list[_Line]) -> None:
    """Each bullet/number line starts an item; other lines continue the previous item."""
    items: list[list[_Line]] = []
    for line in lines:
        if _BULLET.match(line.text) or not items:
            items.append([line])
        else:
            items[-1].append(line)
    for item in items:
        first = re.sub(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+", "", item[0].text)
        text = " ".join([first.strip(), *(line.text.strip() for line in item[1:])])
        location = line_range(item[0].number, item[-1].number)
        _emit_with_urls(ctx, RowType.LIST_ITEM, text, location)


def heading_level_of(line: str) -> int | None:
    """Level of a standalone line that looks like a heading, else None (conservative)."""
    text = line.strip()
    if not _heading_shaped(text):
        return None
    numbered = _NUMBERED.match(text)
    if numbered:
        number, dot, title = numbered.groups()
        depth = number.count(".") + 1
        # "1 Intro" / "1. Intro" / "2.3 Scope"; a bare "2024 was" or "1.5 million" is not.
        if title[0].isupper() and (depth > 1 or dot or len(number) <= 2):
            return min(depth, 9)
        return None
    letters = [c for c in text if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return 1
    return None


def _heading_shaped(text: str) -> bool:
    text = text.strip()
    return 0 < len(text) <= _MAX_HEADING_CHARS and not text.endswith((".", ",", ";", ":"))


def _dedent(text: str) -> str:
    lines = text.split("\n")
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines)


def _emit_with_urls(ctx: ParseContext, row_type: RowType, text: str, location: str) -> None:
    """Bare URLs become links so they turn into `related` connections like marked-up links."""
    links = []
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?)]}'\"")
        if url:
            links.append(LinkSpan(start=match.start(), end=match.start() + len(url), target=url))
    ctx.emit(row_type, text, location, links=links)
