"""CSV and TSV strategy: one delimited table, sniffed for its encoding, dialect and header, and
stored as HTML tables of at most BLOCK_ROWS rows, each led by the header row.

Encoding: a BOM, then strict UTF-8, then `charset-normalizer` on the first 256 KiB (exports
from spreadsheet applications are often cp1252 or latin-1). Dialect: `csv.Sniffer` proposes a
delimiter among `, ; TAB |`, and the delimiter whose rows have the most consistent column
count wins (the sniffer alone is easily fooled by quoted text). Header: a first row of
distinct, non-empty, non-numeric cells above a column of numbers, or one `csv.Sniffer` judges
a header. The table is read up to the cell budget (`parse_max_cells`); a longer file is cut
with a `parse.budget_exceeded` diagnostic, as the PDF parse budget does.

The same dialect test decides at sniffing time whether a text file is CSV at all (strictly
for a name that is not `.csv`/`.tsv`: prose with commas is not a table).
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import RowType
from corpus_pipeline.parsing.base import MAX_TABLE_TOKENS, DiagnosticSink, ParseContext
from corpus_pipeline.parsing.tables import TableCell, TableGrid

# Body rows per stored table at most (the spreadsheets' MAX_TABLE_ROWS), fewer when wide rows
# would pass the chunker's table limit (MAX_TABLE_TOKENS, at 2 characters a token as figures
# and short codes tokenise, so a block is seldom cut again into parts): each block is a chunk
# that reads and cites on its own, its caption naming its rows.
BLOCK_ROWS = 50
_BLOCK_CHARS = 2 * MAX_TABLE_TOKENS
DELIMITERS = (",", ";", "\t", "|")
_SAMPLE_CHARS = 64 * 1024
_SNIFFER_CHARS = 16 * 1024
_ENCODING_SAMPLE = 256 * 1024
_NUMBER = re.compile(r"^[-+(]?[$€£¥]?\s*\d[\d,.\s']*\)?\s*%?$")
_DATE = re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?$")


@dataclass(frozen=True)
class _Fit:
    """How well one delimiter splits a sample: the share of rows with the usual column
    count, that count, and the number of rows."""

    share: float
    columns: int
    rows: int


def sniff_delimiter(text: str, *, strict: bool) -> str | None:
    """The delimiter that splits `text` into consistent rows of two or more columns, or None
    when it is no table. `strict` (a name that does not say CSV): at least 5 rows of 3 or more
    columns, 95 % of them alike; otherwise 2 rows, 80 % alike."""
    sample = _sample(text)
    min_rows, min_columns, min_share = (5, 3, 0.95) if strict else (2, 2, 0.8)
    guesses = []
    with contextlib.suppress(csv.Error):  # the sniffer found no delimiter: try each
        guesses.append(csv.Sniffer().sniff(sample[:_SNIFFER_CHARS], "".join(DELIMITERS)).delimiter)
    best: tuple[float, int, str] | None = None
    for delimiter in dict.fromkeys([*guesses, *DELIMITERS]):
        fit = _fit(sample, delimiter)
        if fit is None or fit.rows < min_rows or fit.columns < min_columns or fit.share < min_share:
            continue
        key = (fit.share, fit.columns, delimiter)
        if best is None or key[:2] > best[:2]:
            best = key
    return best[2] if best is not None else None


def _sample(text: str) -> str:
    """The first 64 KiB, cut after its last complete line."""
    if len(text) <= _SAMPLE_CHARS:
        return text
    head = text[:_SAMPLE_CHARS]
    cut = head.rfind("\n")
    return head[: cut + 1] if cut > 0 else head


def _fit(sample: str, delimiter: str) -> _Fit | None:
    try:
        counts = [
            len(row) for row in csv.reader(io.StringIO(sample), delimiter=delimiter) if _filled(row)
        ]
    except csv.Error:
        return None
    if not counts:
        return None
    columns, usual = Counter(counts).most_common(1)[0]
    return _Fit(usual / len(counts), columns, len(counts))


def _filled(row: list[str]) -> bool:
    return any(cell.strip() for cell in row)


def decode_delimited(data: bytes, diagnostics: DiagnosticSink) -> str:
    """The file's text: BOM, strict UTF-8, else the encoding charset-normalizer finds."""
    for bom, encoding in (
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    import charset_normalizer

    match = charset_normalizer.from_bytes(data[:_ENCODING_SAMPLE]).best()
    encoding = match.encoding if match is not None else "cp1252"
    diagnostics.add("parse", "encoding.detected", f"not UTF-8; decoded as {encoding}", level="info")
    return data.decode(encoding, errors="replace")


def has_header(rows: list[list[str]], sample: str) -> bool:
    """The first row names the columns: distinct, non-empty, non-numeric cells above a column
    that is mostly numbers (or dates), or a table csv.Sniffer judges to have a header."""
    if len(rows) < 2:
        return False
    first = [cell.strip() for cell in rows[0]]
    if not all(first) or any(_numeric(cell) for cell in first):
        return False
    if len({cell.casefold() for cell in first}) < len(first):
        return False
    body = rows[1:201]
    for column in range(len(first)):
        values = [row[column] for row in body if column < len(row) and row[column].strip()]
        if values and sum(_numeric(v) for v in values) >= 0.8 * len(values):
            return True
    try:
        return csv.Sniffer().has_header(sample[:_SNIFFER_CHARS])
    except csv.Error:
        return False


def _numeric(text: str) -> bool:
    value = text.strip()
    return bool(_NUMBER.match(value) or _DATE.match(value))


def delimited_facts(text: str) -> dict[str, object]:
    """Profile evidence of a delimited file: one table, its size and a sample of its text."""
    return {"table_count": 1, "char_count": len(text), "text_sample": text[:8000]}


def parse_csv(ctx: ParseContext) -> None:
    """Emit the file's name as its heading, a line naming its size and columns, and its rows
    as tables of BLOCK_ROWS rows, each led by the header row."""
    text = decode_delimited(ctx.source_path.read_bytes(), ctx.diagnostics)
    extension = PurePosixPath(ctx.source_file_name).suffix.lower()
    default = "\t" if extension in (".tsv", ".tab") else ","
    delimiter = sniff_delimiter(text, strict=False) or default
    budget = _budget(ctx)
    rows: list[list[str]] = []
    cells = total = 0
    for row in _records(text, delimiter):
        total += 1
        if cells + len(row) > budget:
            continue  # counted, not kept: the diagnostic says how much is missing
        cells += len(row)
        rows.append(row)
    if not rows:
        ctx.diagnostics.add(
            "parse", "document.empty", "no rows in the delimited file", level="error"
        )
        return
    if total > len(rows):
        ctx.diagnostics.add(
            "parse",
            "parse.budget_exceeded",
            f"cell budget reached: read {len(rows):,} of {total:,} rows (limit: {budget:,} "
            "cells); the rest of the file is missing",
        )
    _emit_table(ctx, rows, has_header(rows, _sample(text)), total)


def _budget(ctx: ParseContext) -> int:
    if ctx.settings is not None:
        return ctx.settings.parse_max_cells
    return int(CorpusSettings.model_fields["parse_max_cells"].default)


def _records(text: str, delimiter: str) -> Iterator[list[str]]:
    """The non-empty records; a field over the csv module's size limit ends the reading."""
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        for row in reader:
            if _filled(row):
                yield [cell.strip() for cell in row]
    except csv.Error:
        return


def _emit_table(ctx: ParseContext, rows: list[list[str]], header: bool, total: int) -> None:
    title = PurePosixPath(ctx.source_file_name).stem or "table"
    width = max(len(row) for row in rows)
    ctx.emit(RowType.HEADING, title, "file", heading_level=1)
    shape = f"{total - int(header):,} rows, {width} columns"
    if header:
        shape += ": " + ", ".join(cell for cell in rows[0] if cell)
    ctx.emit(RowType.PARAGRAPH, shape, "file")
    head = rows[:1] if header else []
    body = rows[1:] if header else rows
    first = 2 if header else 1
    blocks = _blocks(body, sum(len(cell) + 3 for row in head for cell in row))
    for start, end in blocks:
        span = f"rows {first + start}–{first + end - 1}"
        caption = f"{title} ({span})" if len(blocks) > 1 else None
        ctx.emit_table(_grid([*head, *body[start:end]], width, len(head), caption), span)


def _blocks(body: list[list[str]], head_chars: int) -> list[tuple[int, int]]:
    """[start, end) of each block: up to BLOCK_ROWS rows whose text, with the header's, stays
    within _BLOCK_CHARS (a longer single row is a block of its own)."""
    blocks: list[tuple[int, int]] = []
    start, used = 0, head_chars
    for index, row in enumerate(body):
        chars = sum(len(cell) + 3 for cell in row)  # as the text reads: cells joined by " | "
        if index > start and (index - start >= BLOCK_ROWS or used + chars > _BLOCK_CHARS):
            blocks.append((start, index))
            start, used = index, head_chars
        used += chars
    if start < len(body):
        blocks.append((start, len(body)))
    return blocks


def _grid(rows: list[list[str]], width: int, header_rows: int, caption: str | None) -> TableGrid:
    cells = [
        TableCell(r, c, row[c] if c < len(row) else "", header=r < header_rows)
        for r, row in enumerate(rows)
        for c in range(width)
    ]
    return TableGrid(cells=cells, caption=caption, header_rows=header_rows)
