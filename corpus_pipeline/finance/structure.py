"""The outline of a filing or financial report: parts, items, statements, notes, exhibits.

Layout alone gets a filing's outline half right: a statement's title is set in body type and
read as a paragraph ("CASH FLOWS STATEMENTS (In millions) (Unaudited) Three Months Ended …"),
merged into the item heading above it ("Item 1. Financial Statements AMAZON.COM, INC.
CONSOLIDATED STATEMENTS OF CASH FLOWS"), or printed only in a page's footer ("Financial
Statements Consolidated Condensed Balance Sheets 5"); a statement's row labels ("Assets",
"Three Months Ended") are taken for headings; notes land under the last statement, and an
exhibit's numbered clauses and "By: /s/" lines become top-level sections. This pass, run on a
document whose cover names a registrant or that prints at least two statements, rebuilds it:

- PART headings at level 1, ITEM headings below them (an item's title with no "Item N." before
  it, as some issuers print them, counts as an item too);
- each primary statement a heading of its own under its item, titled by the statement, its
  row labels and column heads plain text;
- "Notes to … financial statements" beside the statements, each "Note N" below it, and a note's
  sub-headings below the note;
- exhibits under their item, their clauses below them; signature lines plain text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from corpus_pipeline.contracts import ParsedRow, RowType, StatementType
from corpus_pipeline.finance.statements import MAX_TITLE_WORDS, figure_share, statement_of_title
from corpus_pipeline.finance.subject import cover_texts, registrant

_PART = re.compile(r"^part\s+(?:[ivx]+|\d)\b", re.I)
_ITEM = re.compile(r"^item\s+\d{1,2}[a-c]?\b", re.I)
_ITEM_WITH_STATEMENTS = re.compile(
    r"^(item\s+\d{1,2}[a-c]?\.?\s*[—–:.-]?\s*financial\s+statements"
    r"(?:\s+and\s+supplementary\s+data)?(?:\s*\((?:unaudited|audited)\))?)\s+(\S.*)$",
    re.I,
)
# Items of Forms 10-K and 10-Q (Regulation S-K) that some issuers print without their numbers
# ("Management's Discussion and Analysis", "Controls and Procedures"); not those a note may be
# titled by too ("Legal Proceedings", "Risk Factors").
_ITEM_TITLES = re.compile(
    r"^(?:management['’]?s discussion and analysis|quantitative and qualitative disclosures|"
    r"controls and procedures|unregistered sales of equity|defaults upon senior securities|"
    r"mine safety disclosures|exhibits$|signatures?$)",
    re.I,
)
_NOTES_TO = re.compile(
    r"\bnotes\s+to\s+(?:the\s+)?(?:[\w,]+\s+){0,4}financial\s+statements\b", re.I
)
_NOTE = re.compile(r"^note\s+\d{1,2}[a-z]?\b\s*[—–:.\-]?", re.I)
_EXHIBIT = re.compile(r"^exhibit\s+\d+(?:\.\d+)*[a-z]?\b", re.I)
_ITEM_PREFIX = re.compile(r"^item\s+\d{1,2}[a-c]?\.?\s*", re.I)
_SIGNATURE_LINE = re.compile(r"^(?:by\s*:|/s/)", re.I)
_PAGE_NUMBER = re.compile(r"\s+\d{1,3}$")
_TITLE_END = re.compile(r"[(\d$]")
_CONTENTS_ENTRY = re.compile(r"^\d{1,3}\s+[^\W\d]")
MAX_NOTE_WORDS = 14
MAX_ITEM_WORDS = 12
FIGURES_WITHIN = 12  # rows after a statement's title (past its column heads) showing figures
MIN_FIGURE_SHARE = 0.25
STATEMENT_PAGES = 3
FOOTER_ROWS = 3  # a page's footer is among its last rows  # a statement's row labels are demoted on at most this many pages
_BODY = (RowType.HEADING, RowType.PARAGRAPH, RowType.CAPTION)


def _words(text: str) -> list[str]:
    return text.split()


def title_at_start(text: str) -> tuple[str, StatementType, str] | None:
    """A statement's title opening `text` and what follows it ("CASH FLOWS STATEMENTS (In
    millions) … Three Months Ended" → "CASH FLOWS STATEMENTS", the rest), or None."""
    text = " ".join(text.split())
    if len(_words(text)) <= MAX_TITLE_WORDS and not _PAGE_NUMBER.search(text):
        kind = statement_of_title(text)
        if kind is not None:
            return text, kind, ""
    cut = _TITLE_END.search(text)
    if cut is None or cut.start() == 0:
        return None
    head = text[: cut.start()].strip()
    if not 2 <= len(_words(head)) <= MAX_TITLE_WORDS:
        return None
    kind = statement_of_title(head)
    return (head, kind, text[cut.start() :].strip()) if kind is not None else None


def _footer_title(text: str) -> tuple[str, StatementType] | None:
    """A page footer naming the statement printed above it ("Financial Statements Consolidated
    Condensed Balance Sheets 5")."""
    head = _PAGE_NUMBER.sub("", " ".join(text.split()))
    head = re.sub(r"^financial statements\s+", "", head, flags=re.I)
    kind = statement_of_title(head) if len(_words(head)) <= MAX_TITLE_WORDS else None
    return (head, kind) if kind is not None else None


def _table_title(text: str) -> tuple[str, StatementType] | None:
    """A statement's title set in its table's first row ("(In millions) (Unaudited) | Item 1
    CASH FLOWS STATEMENTS"): the table finder took the title line into the table."""
    first = text.split("\n", 1)[0]
    for cell in first.split("|"):
        cell = _ITEM_PREFIX.sub("", " ".join(cell.split()))
        found = title_at_start(cell)
        if found is not None:
            return found[0], found[1]
    return None


def _shows_figures(rows: Sequence[ParsedRow], start: int, rest: str) -> bool:
    """The statement's figures follow its title (a contents entry's page number does not)."""
    if _CONTENTS_ENTRY.match(rest):
        return False
    if rest and figure_share(rest) >= MIN_FIGURE_SHARE:
        return True
    for row in rows[start + 1 : start + 1 + FIGURES_WITHIN]:
        if row.row_type is RowType.TABLE or figure_share(row.text) >= MIN_FIGURE_SHARE:
            return True
    return False


@dataclass
class _Row:
    row: ParsedRow
    statement: StatementType | None = None  # the statement this heading titles


def _heading(row: ParsedRow, text: str) -> ParsedRow:
    """`row` as a heading; a row that was not one gets its level from the outline."""
    level = row.heading_level if row.row_type is RowType.HEADING else None
    return row.model_copy(
        update={"row_type": RowType.HEADING, "text": text, "heading_level": level}
    )


def _paragraph(row: ParsedRow, text: str | None = None) -> ParsedRow:
    return row.model_copy(
        update={
            "row_type": RowType.PARAGRAPH,
            "text": row.text if text is None else text,
            "heading_level": None,
        }
    )


def is_financial_report(rows: Sequence[ParsedRow]) -> bool:
    """An SEC filing (its cover names a registrant) or a report printing two statements."""
    if registrant(cover_texts(rows)) is not None:
        return True
    kinds = {
        found[1]
        for row in rows
        if row.row_type in _BODY and (found := title_at_start(row.text)) is not None
    }
    return len(kinds) >= 2


def filing_structure(rows: list[ParsedRow]) -> list[ParsedRow]:
    """The rows of a filing with its outline rebuilt (see the module docstring); other
    documents' rows unchanged. Rows come back renumbered in reading order."""
    if not is_financial_report(rows):
        return rows
    marked = _split_titles(rows)
    return [r.model_copy(update={"order": i}) for i, r in enumerate(_outline(marked))]


def _split_titles(rows: list[ParsedRow]) -> list[_Row]:
    """Statement titles, notes and items made headings of their own; signature lines text."""
    out: list[_Row] = []
    titled: set[str] = set()  # statements already given a heading, by title
    footers = _footers(rows)
    items = _item_headings(rows)
    for i, row in enumerate(rows):
        text = " ".join(row.text.split())
        key = _item_key(text) if row.row_type is RowType.PARAGRAPH else None
        if key and key not in items and len(items) >= MIN_ITEMS:
            # An item read as body text ("ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA"
            # set in body type) in a filing whose other items are headings.
            items.add(key)
            out.append(_Row(_heading(row, text)))
            continue
        if i in footers.starts:
            title, kind = footers.starts[i]
            opening = title_at_start(text)
            if _key(title) not in titled and not (opening and opening[1] is kind):
                titled.add(_key(title))
                out.append(_Row(_heading(row, title), kind))
        if row.row_type is RowType.TABLE:
            caption = _table_title(row.text)
            if caption is not None and _key(caption[0]) not in titled:
                titled.add(_key(caption[0]))
                out.append(_Row(_heading(row, caption[0]), caption[1]))
        if row.row_type not in _BODY or not text:
            out.append(_Row(row))
            continue
        if i in footers.lines or (row.row_type is RowType.HEADING and _SIGNATURE_LINE.match(text)):
            out.append(_Row(_paragraph(row)))
            continue
        merged = _ITEM_WITH_STATEMENTS.match(text)
        if merged and title_at_start(merged.group(2)):
            out.append(_Row(_heading(row, merged.group(1))))
            text = merged.group(2)
            row = _paragraph(row, text)
        found = title_at_start(text)
        if found is not None:
            title, kind, rest = found
            if _key(title) not in titled and _shows_figures(rows, i, rest):
                titled.add(_key(title))
                out.append(_Row(_heading(row, title), kind))
                if rest:
                    out.append(_Row(_paragraph(row, rest)))
                continue
            if row.row_type is RowType.HEADING:
                # The title again on a continuation page, or a contents entry: no section.
                out.append(_Row(_paragraph(row)))
                continue
        if (
            row.row_type is not RowType.HEADING
            and _NOTE.match(text)
            and len(_words(text)) <= MAX_NOTE_WORDS
            and not _PAGE_NUMBER.search(text)
            and text[-1] not in ".;,"
        ):
            out.append(_Row(_heading(row, text)))
            continue
        out.append(_Row(row))
    return out


_ITEM_LINE = re.compile(r"^item\s+(\d{1,2}[a-c]?)\s*[.:—–-]\s*[A-Za-z][^.]{0,120}$", re.I)
MIN_ITEMS = 2  # item headings a filing has before a body-text item line is taken for one


def _item_key(text: str) -> str | None:
    """ "item 8" for an item's heading line ("Item 8. Financial Statements and Supplementary
    Data"); None for other text, a contents entry ("… Data 45") or a sentence."""
    match = _ITEM_LINE.match(text)
    if match is None or _PAGE_NUMBER.search(text):
        return None
    return f"item {match.group(1).lower()}"


def _item_headings(rows: Sequence[ParsedRow]) -> set[str]:
    return {
        key
        for row in rows
        if row.row_type is RowType.HEADING and (key := _item_key(" ".join(row.text.split())))
    }


@dataclass
class _Footers:
    starts: dict[int, tuple[str, StatementType]]  # first row of a page → the statement on it
    lines: set[int]  # the footer rows themselves


def _footers(rows: Sequence[ParsedRow]) -> _Footers:
    """Pages whose last lines name the statement printed above them: a title set below the
    page's figures is its footer, and the statement opens the page."""
    pages: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        if row.page_numbers and row.text.strip():
            pages.setdefault(row.page_numbers[0], []).append(i)
    starts: dict[int, tuple[str, StatementType]] = {}
    lines: set[int] = set()
    for members in pages.values():
        for position in range(max(1, len(members) - FOOTER_ROWS), len(members)):
            i = members[position]
            footer = _footer_title(rows[i].text) if rows[i].row_type in _BODY else None
            above = [rows[j] for j in members[:position]]
            if footer is not None and any(
                r.row_type is RowType.TABLE or figure_share(r.text) >= MIN_FIGURE_SHARE
                for r in above
            ):
                starts.setdefault(members[0], footer)
                lines.add(i)
    return _Footers(starts, lines)


def _key(title: str) -> str:
    return re.sub(r"\W+", " ", re.sub(r"\(?continued\)?", "", title, flags=re.I)).casefold().strip()


def _outline(marked: list[_Row]) -> list[ParsedRow]:
    """Levels for parts, items, statements, notes and exhibits; row labels inside a statement
    and headings a container cannot hold resolved (see the module docstring)."""
    texts = [" ".join(m.row.text.split()) for m in marked]
    heads = [m.row.row_type is RowType.HEADING for m in marked]
    has_parts = any(h and _PART.match(t) for h, t in zip(heads, texts, strict=True))
    # Items printed without "Item N." count as items only where no item is numbered.
    numbered = sum(1 for h, t in zip(heads, texts, strict=True) if h and _ITEM.match(t)) >= 3
    item_level = 2 if has_parts else 1
    out: list[ParsedRow] = []
    item_open = False
    statements_level: int | None = None
    statement_until: int | None = None  # page after which a statement's labels are headings again
    notes_level: int | None = None  # the "Notes to …" heading's level, while in the notes
    note_level: int | None = None  # the open note's level
    exhibit_level: int | None = None
    last_level = item_level
    for m, text, head in zip(marked, texts, heads, strict=True):
        row = m.row
        if not head:
            out.append(row)
            continue
        page = row.page_numbers[0] if row.page_numbers else 0
        level = row.heading_level or last_level
        if _PART.match(text):
            level = 1
            item_open, statement_until, notes_level, note_level, exhibit_level = (
                False,
                None,
                None,
                None,
                None,
            )
        elif _ITEM.match(text) or (
            not numbered and _ITEM_TITLES.match(text) and len(_words(text)) <= MAX_ITEM_WORDS
        ):
            level = item_level
            item_open = True
            statement_until, notes_level, note_level, exhibit_level = None, None, None, None
        elif m.statement is not None:
            statements_level = statements_level or (item_level + 1 if item_open else level)
            level = statements_level
            statement_until = page + STATEMENT_PAGES - 1
            notes_level = note_level = exhibit_level = None
        elif _NOTES_TO.search(text) and len(_words(text)) <= MAX_TITLE_WORDS:
            level = statements_level or (item_level + 1 if item_open else level)
            notes_level, note_level, statement_until = level, None, None
        elif _NOTE.match(text) and (notes_level is not None or statements_level is not None):
            level = (notes_level + 1) if notes_level is not None else (statements_level or level)
            note_level, statement_until = level, None
        elif _EXHIBIT.match(text):
            level = item_level + 1 if item_open else level
            exhibit_level, note_level, notes_level = level, None, None
        elif statement_until is not None and page <= statement_until:
            out.append(_paragraph(row))  # a row label or column head inside a statement
            continue
        else:
            statement_until = None
            container = note_level or exhibit_level or notes_level
            if container is None and item_open:
                container = item_level
            if container is not None:
                level = max(level, container + 1)
        last_level = min(level, 9)
        out.append(row.model_copy(update={"heading_level": last_level}))
    return out
