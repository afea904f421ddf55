"""The primary financial statements: found by their titles and by their line items.

A statement is named by its title (US GAAP and IFRS wording: "Condensed Consolidated Balance
Sheets", "Consolidated statement of financial position", "Statements of Operations and
Comprehensive Income (Loss)") and recognised by its lines: a balance sheet totals its assets
and liabilities, a cash-flow statement walks through operating, investing and financing
activities. Either names the statement a chunk belongs to; where a layout lost the title (a
statement set as loose lines under a row label taken for a heading) the lines still tell.
A title that only mentions a statement ("Gross amounts not offset in the balance sheet", "Notes
to consolidated financial statements") names none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from corpus_pipeline.contracts import ChunkType, StatementType

_ST = r"statements?"
# Title phrases, tried in this order (an equity or cash-flow title may also say "income").
_TITLES: tuple[tuple[StatementType, re.Pattern[str]], ...] = (
    (
        StatementType.CASH_FLOW,
        re.compile(rf"\b(?:{_ST} of (?:consolidated )?cash flows?|cash flows? {_ST})\b"),
    ),
    (
        StatementType.EQUITY,
        re.compile(
            rf"\b(?:{_ST} of (?:changes in )?(?:(?:stockholders|shareholders|share ?owners|"
            rf"owners|members|partners)'?s?'? )?(?:equity|deficit|net assets)"
            rf"|(?:stockholders|shareholders)'? equity {_ST})\b"
        ),
    ),
    (
        StatementType.BALANCE_SHEET,
        re.compile(
            rf"\b(?:balance sheets?|{_ST} of (?:consolidated )?financial (?:position|condition)"
            rf"|{_ST} of condition)\b"
        ),
    ),
    (
        StatementType.INCOME,
        re.compile(
            rf"\b(?:{_ST} of (?:consolidated )?(?:operations|income|earnings|profit or loss|"
            rf"profit and loss|comprehensive (?:income|loss|earnings))"
            rf"(?: and (?:other )?comprehensive (?:income|loss)| and retained earnings)?"
            rf"|(?:comprehensive )?income {_ST}|profit and loss (?:accounts?|{_ST}))\b"
        ),
    ),
)
# Words that make a title about something else that mentions a statement.
_ABOUT = frozenset(
    [
        "in",
        "on",
        "to",
        "into",
        "from",
        "within",
        "per",
        "by",
        "with",
        "at",
        "not",
        "notes",
        "note",
        "see",
        "accompanying",
        "recognized",
        "recognised",
        "offset",
        "amounts",
        "gains",
        "losses",
        "derivatives",
        "hedging",
        "supplemental",
        "details",
        "reconciliation",
        "information",
        "effect",
        "impact",
    ]
)
# What may follow the statement's name: qualifiers, never another subject.
_TRAILING = frozenset(["unaudited", "audited", "continued", "cont", "condensed", "consolidated"])
MAX_TITLE_WORDS = 16
MAX_LINE = 300  # a first line longer than this is no title
_PARENTHESES = re.compile(r"\([^)]*\)")
_PERIOD_TAIL = re.compile(r"\b(?:for the|as of|as at|at)\b.*$")
APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})


def _normal(title: str) -> str:
    text = _PARENTHESES.sub(" ", title.translate(APOSTROPHES).casefold())
    text = _PERIOD_TAIL.sub(" ", text)
    text = re.sub(r"[—–\-:|]+", " ", text)
    return " ".join(re.sub(r"[^a-z&' ]+", " ", text).split())


# A word's last letter set apart by letter-spacing in the PDF ("Balance Shee t", "Cash Flow s").
_SPLIT_TAIL = re.compile(r"\b([a-z]{2,}) ([a-z])\b")


@lru_cache(maxsize=8192)
def statement_of_title(title: str) -> StatementType | None:
    """The statement a title names, or None: the statement's name may follow qualifiers and an
    issuer's name ("NVIDIA CORPORATION AND SUBSIDIARIES CONDENSED CONSOLIDATED STATEMENTS OF
    CASH FLOWS (In millions)"), never a preposition or a note's words. A title whose words the
    PDF split ("Consolidated Balance Shee t") is read with them joined."""
    text = _normal(title)
    if not text or len(text.split()) > MAX_TITLE_WORDS:
        return None
    found = _statement_named(text)
    joined = _SPLIT_TAIL.sub(r"\1\2", text)
    return found if found is not None or joined == text else _statement_named(joined)


def _statement_named(text: str) -> StatementType | None:
    for kind, pattern in _TITLES:
        match = pattern.search(text)
        if match is None:
            continue
        before = set(text[: match.start()].split())
        after = set(text[match.end() :].split())
        if before & _ABOUT or not after <= _TRAILING:
            return None
        phrase = match.group(0)
        if (
            kind is StatementType.INCOME
            and "comprehensive" in phrase
            and not re.search(r"operations|earnings|profit|income and", phrase)
        ):
            return StatementType.COMPREHENSIVE_INCOME
        return kind
    return None


# Line items that each statement prints and others rarely do (a chunk is read as a whole: a
# statement set as loose lines has no row structure left).
_LINES: dict[StatementType, tuple[str, ...]] = {
    StatementType.BALANCE_SHEET: (
        r"total assets",
        r"total current assets",
        r"total current liabilities",
        r"total liabilities\b",
        r"total liabilities and (?:\w+'? )?(?:equity|deficit)",
        r"current assets",
        r"current liabilities",
        r"(?:non-?current|long-term) (?:assets|liabilities)",
        r"accounts payable",
        r"(?:property|premises)(?:, plant)? and equipment, net",
        r"retained earnings|accumulated deficit",
        r"total (?:\w+'? )?equity\b",
    ),
    StatementType.INCOME: (
        r"net sales|total (?:net )?revenues?|net revenues?|revenues?:|^revenues?\b",
        r"cost of (?:sales|revenues?|goods sold)",
        r"gross (?:margin|profit)",
        r"operating income|income from operations|operating (?:profit|loss)|operating expenses",
        r"research and development",
        r"(?:selling, )?general and administrative",
        r"income before (?:provision for )?(?:income )?taxes|(?:profit|loss) before tax",
        r"provision for (?:\(benefit from\) )?(?:income )?taxes|income tax (?:expense|provision)",
        r"net income per share|earnings per share|per share",
        r"\bdiluted\b",
        r"weighted[- ]average",
    ),
    StatementType.CASH_FLOW: (
        r"operating activities|cash (?:from|provided by|used in|generated by) operations",
        r"\binvesting\b",
        r"\bfinancing\b",
        r"net cash (?:provided|used|generated|from|inflow|outflow)",
        r"depreciation",
        r"(?:purchases|additions|acquisition)s? (?:of|to) property|capital expenditures?",
        r"beginning (?:of (?:the )?(?:period|year)|balances?)",
        r"end of (?:the )?(?:period|year)|ending balances?",
        r"supplemental",
    ),
    StatementType.EQUITY: (
        r"balances?,? (?:as of|at|beginning)|balance at",
        r"dividends",
        r"common stock",
        r"additional paid-in capital|capital in excess of par",
        r"retained earnings|accumulated deficit",
        r"repurchases? of (?:common )?(?:stock|shares)|treasury",
        r"(?:stock|share)-based compensation",
        r"total (?:\w+'? )?equity\b",
    ),
    StatementType.COMPREHENSIVE_INCOME: (
        r"other comprehensive (?:income|loss)",
        r"comprehensive income",
        r"(?:foreign )?currency translation",
        r"unrealized (?:gains|losses|holding)",
        r"net of (?:tax|taxes|income taxes)",
        r"reclassification",
    ),
}
_COMPILED = {
    kind: [re.compile(p, re.IGNORECASE | re.MULTILINE) for p in lines]
    for kind, lines in _LINES.items()
}
# Distinct line items a chunk needs before its lines alone name its statement: a note's table
# or an MD&A summary of cash flows prints a few of them, a statement most.
MIN_LINES = {
    StatementType.BALANCE_SHEET: 5,
    StatementType.INCOME: 5,
    StatementType.CASH_FLOW: 5,
    StatementType.EQUITY: 5,
    StatementType.COMPREHENSIVE_INCOME: 4,
}
# A statement is mostly figures: prose that names the same items is discussion, not the table.
MIN_FIGURE_SHARE = 0.2
_TOKEN = re.compile(r"[^\s|$]+")
_FIGURE = re.compile(r"(?<![^\s|$])(?:\(?[\d,.]+\)?%?|—|-)(?![^\s|$])")


def line_counts(text: str) -> dict[StatementType, int]:
    """How many distinct line items of each statement a text prints."""
    return {
        kind: sum(1 for pattern in patterns if pattern.search(text))
        for kind, patterns in _COMPILED.items()
    }


def figure_share(text: str) -> float:
    tokens = len(_TOKEN.findall(text))
    return len(_FIGURE.findall(text)) / tokens if tokens else 0.0


def statement_of_lines(text: str) -> StatementType | None:
    """The statement a chunk's figures and line items are, when they say so clearly: enough of
    one statement's lines, at least two more than any other's, in a text mostly of figures."""
    if figure_share(text) < MIN_FIGURE_SHARE:
        return None
    counts = sorted(line_counts(text).items(), key=lambda kv: -kv[1])
    (best, top), (_, second) = counts[0], counts[1]
    if top >= MIN_LINES[best] and top >= second + 2:
        return best
    return None


def statement_of_chunk(
    section_path: Sequence[str], content: str, chunk_type: ChunkType
) -> StatementType | None:
    """The statement a chunk belongs to: what its lines clearly are; else the statement its own
    section (or its first line: a table opens with its caption or section title) is titled by,
    for a table, or a text holding a table or some of that statement's lines (a page of notes
    filed under a statement's heading by a lost heading is not the statement)."""
    by_lines = statement_of_lines(content)
    if by_lines is not None or chunk_type is ChunkType.IMAGE:
        return by_lines
    titles = [section_path[-1]] if section_path else []
    titles += [line[:MAX_LINE] for line in content.splitlines()[:3] if line.strip()]
    for title in titles:
        kind = statement_of_title(title)
        if kind is None:
            continue
        if chunk_type is ChunkType.TABLE or "[table:" in content:
            return kind
        if line_counts(content)[kind] >= 1 and figure_share(content) >= MIN_FIGURE_SHARE:
            return kind
        return None
    return None


# A question names a statement more loosely than a title does ("the cash flow statement", "the
# P&L", "on its balance sheet").
_NAMED: tuple[tuple[StatementType, re.Pattern[str]], ...] = (
    *_TITLES,
    (StatementType.CASH_FLOW, re.compile(r"\bcash[- ]flow statements?\b")),
    (StatementType.INCOME, re.compile(r"\b(?:p&l|profit and loss|income statements?)\b")),
)


def statements_named(text: str) -> list[StatementType]:
    """The statements a question names, in order of first mention."""
    normal = " ".join(text.translate(APOSTROPHES).casefold().split())
    found = sorted(
        (match.start(), kind) for kind, pattern in _NAMED for match in pattern.finditer(normal)
    )
    return list(dict.fromkeys(kind for _, kind in found))
