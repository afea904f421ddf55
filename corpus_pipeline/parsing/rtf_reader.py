"""An RTF file as blocks: paragraphs with their style, outline level and list flag, tables with
merged cells, footnotes, embedded PNG/JPEG pictures and the info group's title and dates.

`striprtf` turns RTF into text only (paragraph styles, table rows and footnotes are lost), so
this reader walks the control words itself and borrows striprtf's knowledge of RTF: the
destinations a reader skips, the font charsets and the special characters. Text is decoded as
RTF says: `\\'xx` bytes in the font's charset, else the document's code page (`\\ansicpg`),
`\\uN` as Unicode followed by `\\ucN` fallback characters that are skipped.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field, replace
from datetime import date

from striprtf.striprtf import (  # type: ignore[import-untyped]
    charset_map,
    destinations,
    specialchars,
)

from corpus_pipeline.common.errors import NestingTooDeepError
from corpus_pipeline.parsing.dates import plausible

_TOKEN = re.compile(
    r"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'([0-9a-fA-F]{2})|\\([^a-zA-Z])|([{}])|[\r\n]+"
    r"|([^\\{}\r\n]+)"
)
# Destinations read here (the rest of striprtf's list is skipped).
_INFO = frozenset({"title", "author", "subject", "creatim", "revtim"})
_KEPT = frozenset({"footnote", "pict", "fonttbl", "stylesheet", "info", "shppict", *_INFO})
_SKIP = (frozenset(destinations) | {"nonshppict", "listtext", "pntext", "pntxta", "pntxtb"}) - _KEPT
_BREAKS = {"par", "sect", "page"}
# Groups nest this deep at most (real documents: a few dozen levels): deeper is refused whole
# rather than read with its innermost text dropped.
MAX_GROUP_DEPTH = 1024
_BLIPS = {"pngblip": "png", "jpegblip": "jpeg"}


@dataclass(frozen=True)
class StyleDef:
    name: str
    outline: int | None  # 0-based, as \outlinelevel writes it


@dataclass
class Paragraph:
    text: str
    style: int = 0
    outline: int | None = None
    listed: bool = False
    notes: list[tuple[int, str]] = field(default_factory=list)  # (number, text)
    images: list[bytes] = field(default_factory=list)


@dataclass(frozen=True)
class Cell:
    text: str
    hmerge: str = ""  # "first" / "next": \clmgf / \clmrg
    vmerge: str = ""  # "first" / "next": \clvmgf / \clvmrg
    right: int | None = None  # the right edge (\cellx, in twips)


@dataclass
class Table:
    rows: list[list[Cell]] = field(default_factory=list)
    header_rows: int = 0


@dataclass
class RtfDocument:
    blocks: list[Paragraph | Table] = field(default_factory=list)
    styles: dict[int, StyleDef] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)
    dates: dict[str, date] = field(default_factory=dict)


@dataclass
class _Group:
    dest: str | None = None  # None: the body text
    skip: bool = False
    uc: int = 1
    font: str | None = None
    sink: list[str] = field(default_factory=list)
    owner: bool = False  # this group opened `dest` (its end closes it)
    blip: str | None = None
    stamp: dict[str, int] = field(default_factory=dict)


class RtfReader:
    """One pass over the tokens; `read` returns the document."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.doc = RtfDocument()
        self.codepage = "cp1252"
        self.fonts: dict[str, str] = {}
        self.stack: list[_Group] = [_Group()]  # the level outside the document group
        self.pending = bytearray()
        self.skip_chars = 0
        self.star = False
        self.line: list[str] = []
        self.para = Paragraph("")
        self.in_table = False
        self.cell_lines: list[str] = []
        self.row: list[str] = []
        self.defs: list[Cell] = []
        self.def_flags: dict[str, str] = {}
        self.header_row = False
        self.table: Table | None = None
        self.footnotes = 0
        self.style_def: tuple[int, str | None] = (0, None)

    @property
    def g(self) -> _Group:
        return self.stack[-1]

    def read(self) -> RtfDocument:
        pos = 0
        while pos < len(self.text):
            match = _TOKEN.match(self.text, pos)
            if match is None:  # a lone backslash at the end
                break
            pos = match.end()
            word, arg, hexbyte, symbol, brace, run = match.groups()
            if hexbyte is None:
                self._flush_bytes()
            if word is not None:
                pos = self._word(word, int(arg) if arg is not None else None, pos)
            elif hexbyte is not None:
                self._hex(hexbyte)
            elif symbol is not None:
                self._symbol(symbol)
            elif brace == "{":
                self._open_group()
            elif brace == "}":
                if len(self.stack) > 1:
                    self._close_group()
                if len(self.stack) == 1:
                    break  # the document group is closed: what follows is not read
            elif run is not None:
                self._run(run)
        self._flush_bytes()
        self._end_paragraph(final=True)
        self._flush_table()
        return self.doc

    # -- tokens ------------------------------------------------------------------------------

    def _word(self, word: str, arg: int | None, pos: int) -> int:
        star, self.star = self.star, False
        self.skip_chars = 0
        group = self.g
        if word == "bin":  # raw bytes follow: never text
            return pos + max(arg or 0, 0)
        if group.skip:
            return pos
        if word in ("listtext", "pntext") and group.dest is None:
            self.para.listed = True  # the bullet or number a list paragraph prints
        if word in _KEPT and not (word in _INFO and group.dest != "info"):
            self._open(word)
        elif word in _SKIP or star:
            group.skip = True
        elif group.dest == "fonttbl":
            self._font_word(word, arg)
        elif group.dest == "stylesheet":
            self._style_word(word, arg)
        elif group.dest in ("creatim", "revtim"):
            group.stamp[word] = arg or 0
        elif group.dest == "pict" and word in _BLIPS:
            group.blip = _BLIPS[word]
        else:
            self._text_word(word, arg)
        return pos

    def _open(self, word: str) -> None:
        group = self.g
        group.dest, group.owner, group.sink = word, True, []
        if word == "footnote":
            self.footnotes += 1
            group.stamp = {"note": self.footnotes}

    def _text_word(self, word: str, arg: int | None) -> None:
        group = self.g
        if word == "ansicpg" and arg is not None:
            self.codepage = _codec(f"cp{arg}") or self.codepage
        elif word in ("mac", "pc", "pca"):
            self.codepage = {"mac": "mac_roman", "pc": "cp437", "pca": "cp850"}[word]
        elif word == "uc":
            group.uc = max(arg or 0, 0)
        elif word == "u" and arg is not None:
            code = arg + 0x10000 if arg < 0 else arg
            if 0 < code <= 0x10FFFF:
                self._out(chr(code))
            self.skip_chars = group.uc
        elif word == "f":
            group.font = str(arg)
        elif word == "chftn" and group.dest is None:
            self._out(f"[{self.footnotes + 1}]")
        elif word in _BREAKS:
            if group.dest is None:
                self._end_paragraph()
            else:
                self._out("\n")
        elif group.dest is None:
            self._body_word(word, arg)
        elif word in specialchars:
            self._out(specialchars[word])

    def _body_word(self, word: str, arg: int | None) -> None:
        para = self.para
        if word == "pard":
            para.style, para.outline, para.listed = 0, None, False
            self.in_table = False
        elif word == "s":
            para.style = arg or 0
        elif word == "outlinelevel":
            para.outline = arg
        elif word == "ls":
            para.listed = True
        elif word == "intbl":
            self.in_table = True
        elif word == "cell":
            self._end_cell()
        elif word == "row":
            self._end_row()
        elif word == "trowd":
            self.defs, self.def_flags, self.header_row = [], {}, False
        elif word == "trhdr":
            self.header_row = True
        elif word in ("clmgf", "clmrg"):
            self.def_flags["h"] = "first" if word == "clmgf" else "next"
        elif word in ("clvmgf", "clvmrg"):
            self.def_flags["v"] = "first" if word == "clvmgf" else "next"
        elif word == "cellx":
            flags = self.def_flags
            self.defs.append(Cell("", flags.get("h", ""), flags.get("v", ""), arg))
            self.def_flags = {}
        elif word in ("nestcell", "nestrow"):
            self._out(" | " if word == "nestcell" else "\n")
        elif word in specialchars and word not in ("row", "cell"):
            self._out(specialchars[word])

    def _font_word(self, word: str, arg: int | None) -> None:
        if word == "f":
            self.g.font = str(arg)
        elif word == "fcharset" and arg not in (None, 0, 1) and self.g.font is not None:
            codec = _codec(charset_map.get(arg, ""))
            if codec:
                self.fonts[self.g.font] = codec

    def _style_word(self, word: str, arg: int | None) -> None:
        if word == "s":
            self.style_def = (arg or 0, self.style_def[1])
        elif word == "outlinelevel":
            self.style_def = (self.style_def[0], str(arg))
        elif word in ("cs", "ds", "ts"):
            self.style_def = (-1, None)  # character, section, table styles: not paragraphs

    def _symbol(self, symbol: str) -> None:
        if symbol == "*":
            self.star = True
        elif symbol in "\r\n":  # a backslash before a line break is a paragraph mark
            self._text_word("par", None)
        elif not self.g.skip and symbol in specialchars:
            self._out(specialchars[symbol].replace("\xad", ""))

    def _hex(self, hexbyte: str) -> None:
        if self.skip_chars:
            self.skip_chars -= 1
        elif not self.g.skip:
            self.pending.append(int(hexbyte, 16))

    def _run(self, run: str) -> None:
        if self.skip_chars:
            taken = min(self.skip_chars, len(run))
            self.skip_chars -= taken
            run = run[taken:]
        if not run or self.g.skip:
            return
        if run.isascii():
            self._out(run)
        else:  # 8-bit bytes written raw: in the code page too
            self.pending.extend(run.encode("latin-1"))
            self._flush_bytes()

    def _flush_bytes(self) -> None:
        if self.pending:
            codec = self.fonts.get(self.g.font or "", self.codepage)
            data, self.pending = bytes(self.pending), bytearray()
            self._out(data.decode(codec, errors="replace"))

    def _out(self, text: str) -> None:
        group = self.g
        if group.skip:
            return
        if group.dest is None:
            self.line.append(text)
        elif group.dest != "fonttbl":
            group.sink.append(text)

    # -- groups and blocks -------------------------------------------------------------------

    def _open_group(self) -> None:
        if len(self.stack) > MAX_GROUP_DEPTH:
            raise NestingTooDeepError("rtf", "groups", MAX_GROUP_DEPTH)
        group = self.g
        sink = group.sink
        if group.dest == "stylesheet":  # one style definition per group
            sink, self.style_def = [], (0, None)
        self.stack.append(replace(group, owner=False, blip=None, sink=sink))

    def _close_group(self) -> None:
        self._flush_bytes()
        closed = self.stack.pop()
        if closed.dest == "stylesheet" and not closed.owner and not closed.skip:
            self._end_style_def(_joined(closed.sink))
            return
        if not closed.owner or closed.skip:
            return
        value = _joined(closed.sink)
        if closed.dest == "footnote":
            if value:
                self.para.notes.append((closed.stamp.get("note", 0), value))
        elif closed.dest == "pict" and closed.blip:
            hexdigits = re.sub(r"[^0-9a-fA-F]", "", "".join(closed.sink))
            self.para.images.append(bytes.fromhex(hexdigits[: len(hexdigits) // 2 * 2]))
        elif closed.dest in ("title", "author", "subject") and value:
            self.doc.info[closed.dest] = value
        elif closed.dest in ("creatim", "revtim"):
            day = _stamp(closed.stamp)
            if day is not None:
                self.doc.dates[closed.dest] = day

    def _end_style_def(self, name: str) -> None:
        number, outline = self.style_def
        name = name.rstrip(";").strip().lower()
        if number >= 0 and name:
            level = int(outline) if outline and outline.lstrip("-").isdigit() else None
            self.doc.styles[number] = StyleDef(name, level)
        self.style_def = (0, None)

    def _take_line(self) -> str:
        text, self.line = _joined(self.line), []
        return text

    def _end_paragraph(self, final: bool = False) -> None:
        text = self._take_line()
        if self.in_table and not final:
            self.cell_lines.append(text)
            return
        self._flush_table()
        para = self.para
        if text or para.notes or para.images:
            self.doc.blocks.append(replace(para, text=text))
        self.para = Paragraph("", para.style, para.outline, para.listed)

    def _end_cell(self) -> None:
        self.cell_lines.append(self._take_line())
        self.row.append("\n".join(line for line in self.cell_lines if line))
        self.cell_lines = []

    def _end_row(self) -> None:
        table = self.table or Table()
        self.table = table
        cells = [
            replace(self.defs[i], text=text) if i < len(self.defs) else Cell(text)
            for i, text in enumerate(self.row)
        ]
        table.rows.append(cells)
        if self.header_row and table.header_rows == len(table.rows) - 1:
            table.header_rows += 1
        self.row = []
        # the images and notes of the row's cells follow the table
        self.para = Paragraph("", notes=self.para.notes, images=self.para.images)

    def _flush_table(self) -> None:
        if self.table is not None:
            self.doc.blocks.append(self.table)
            self.table = None
            if self.para.notes or self.para.images:
                self.doc.blocks.append(self.para)
                self.para = Paragraph("")


def _joined(parts: list[str]) -> str:
    """Parts as one string with \\u surrogate pairs made whole."""
    text = "".join(parts)
    if any("\ud800" <= c <= "\udfff" for c in text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", errors="replace")
    return text.strip()


def _codec(name: str) -> str | None:
    try:
        return codecs.lookup(name).name if name else None
    except LookupError:
        return None


def _stamp(parts: dict[str, int]) -> date | None:
    try:
        return plausible(date(parts.get("yr", 0), parts.get("mo", 1), parts.get("dy", 1)))
    except ValueError:
        return None


def read_rtf(data: bytes) -> RtfDocument:
    """The blocks of an RTF file (its 7-bit text; 8-bit bytes are read in its code page)."""
    return RtfReader(data.decode("latin-1")).read()
