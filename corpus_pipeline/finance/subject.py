"""What a document reports on and for when: issuer, tickers, form and reporting period.

An SEC filing's cover names the registrant (on the line above "(Exact name of registrant as
specified in its charter)", or right after the commission file number where that caption is
missing), its trading symbols (the column under "Trading Symbol(s)"), the form ("FORM 10-Q")
and the period ("For the quarterly period ended June 25, 2022"); its statements' column heads
say how far into the fiscal year that period reaches ("Nine Months Ended": the third quarter).
An annual report that is no SEC form names its company with a legal suffix ("Unilever PLC",
"Siemens AG") on its cover, in its title or in its running headers, and its year in its title
and file name. Documents that are none of these get an empty subject.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from corpus_pipeline.contracts import DocumentSubject, ParsedRow
from corpus_pipeline.finance.periods import (
    MONTHS,
    fiscal_period,
    period_labels,
    stated_period_end,
    years_named,
)

COVER_ROWS = 80
_REGISTRANT_CAPTION = re.compile(
    r"\(?exact name of (?:the )?registrant as specified in its charter", re.I
)
_FILE_NUMBER = re.compile(r"commission file (?:number|no\.?)\s*:?\s*[\d-]+", re.I)
_SEC_FORM = re.compile(r"\bform\s+(10-q|10-k|20-f|40-f|8-k|6-k|s-1|f-1)\b", re.I)
_REPORT_FORM = re.compile(
    r"\b(annual|interim|half[- ]year(?:ly)?|quarterly|integrated|sustainability)\s+"
    r"(?:financial\s+)?report\b",
    re.I,
)
_ANNUAL_FORMS = frozenset({"10-K", "20-F", "40-F", "annual report", "integrated report"})
# A company's name ends in its legal form ("Apple Inc.", "Siemens Aktiengesellschaft").
LEGAL_FORMS = (
    r"Inc\.?|Incorporated|Corp\.?|Corporation|Company|Co\.|Ltd\.?|Limited|plc|PLC|P\.L\.C\.|"
    r"LLC|L\.L\.C\.|L\.P\.|LP|AG|SE|S\.A\.|SA|N\.V\.|NV|S\.p\.A\.|GmbH|Aktiengesellschaft|"
    r"Bancorp"
)
_COMPANY = re.compile(
    rf"\b((?:[A-Z][\w&'’.,-]*\s+){{0,5}}?(?:[A-Z0-9][\w&'’.-]*,?\s+)(?:{LEGAL_FORMS}))"
    rf"(?=$|[\s,;:)|])"
)
_TRADING_SYMBOL = re.compile(r"trading\s*\|?\s*symbols?(?:\(s\))?", re.I)
_CHECK_MARK = re.compile(r"indicate by check mark", re.I)
_TICKER = re.compile(r"(?<![\w$./-])([A-Z]{1,5}(?:\.[A-Z])?)(?![\w/-])")
_NOT_TICKERS = frozenset(
    [
        "NASDAQ",
        "NYSE",
        "LLC",
        "INC",
        "CORP",
        "PLC",
        "THE",
        "AND",
        "OF",
        "USD",
        "N",
        "A",
        "AMEX",
        "ARCA",
        "CBOE",
        "LSE",
        "TSX",
        "NOTES",
        "DUE",
        "STOCK",
        "COMMON",
        "GLOBAL",
        "SELECT",
        "MARKET",
        "EXCHANGE",
        "CLASS",
    ]
)
_MONTHS_ENDED = re.compile(
    r"\b(three|six|nine|3|6|9|thirteen|twenty[- ]six|thirty[- ]nine)\s+(?:months|weeks)\s+ended",
    re.I,
)
_SPANS = {
    "three": 3,
    "3": 3,
    "thirteen": 3,
    "six": 6,
    "6": 6,
    "twenty six": 6,
    "nine": 9,
    "9": 9,
    "thirty nine": 9,
}
MAX_NAME_CHARS = 80
WINDOW_CHARS = 120  # a column head's date follows within a row or two


_LEGAL_WORDS = re.compile(
    r"\b(?:inc|incorporated|corp|corporation|company|co|ltd|limited|plc|p\.l\.c|llc|l\.l\.c|"
    r"l\.p|lp|ag|se|s\.a|sa|n\.v|nv|s\.p\.a|gmbh|aktiengesellschaft|bancorp|pty|holdings?|"
    r"group|the|and subsidiaries|& subsidiaries|com)\b\.?",
    re.I,
)
# A word of a name: letters and digits, joined by "&", "." or an apostrophe ("AT&T", "Macy's").
NAME_WORD = re.compile(r"[^\W_]+(?:[&.'’][^\W_]+)*")


def entity_key(name: str) -> str:
    """An issuer's name without legal forms, case or punctuation ("AMAZON.COM, INC." →
    "amazon"; "NVIDIA CORPORATION AND SUBSIDIARIES" → "nvidia"): how questions and filters
    name it."""
    text = _LEGAL_WORDS.sub(" ", name.replace("’", "'").casefold())
    return " ".join(NAME_WORD.findall(text))


def _texts(rows: Sequence[ParsedRow]) -> list[str]:
    return [" ".join(r.text.split()) for r in rows if r.text.strip()]


def cover_texts(rows: Sequence[ParsedRow]) -> list[str]:
    """The text of a document's first rows, where a cover names its issuer and period."""
    return _texts(rows[:COVER_ROWS])


def sec_form(cover: Sequence[str]) -> str | None:
    """The SEC form a cover names ("FORM 10-Q" → "10-Q")."""
    for text in cover:
        match = _SEC_FORM.search(text)
        if match:
            return match.group(1).upper()
    return None


def registrant(cover: Sequence[str]) -> str | None:
    """The registrant an SEC filing's cover names, or None (not a filing's cover)."""
    for i, text in enumerate(cover):
        match = _REGISTRANT_CAPTION.search(text)
        if match:
            before = text[: match.start()].strip(" (")
            return _plausible_name(before or (cover[i - 1] if i else ""))
    for i, text in enumerate(cover):
        match = _FILE_NUMBER.search(text)
        if match:
            rest = text[match.end() :].strip()
            return _plausible_name(rest or (cover[i + 1] if i + 1 < len(cover) else ""))
    return None


def _plausible_name(text: str) -> str | None:
    name = " ".join(text.split()).strip(" ,;:")
    letters = sum(c.isalpha() for c in name)
    if not name or len(name) > MAX_NAME_CHARS or letters < 2 or name[0] == "(":
        return None
    return name


def company_named(texts: Sequence[str]) -> str | None:
    """The first company name with a legal form in `texts` ("Unilever PLC", "Apple Inc.")."""
    for text in texts:
        match = _COMPANY.search(text)
        if match:
            return _plausible_name(match.group(1))
    return None


def tickers(cover: Sequence[str]) -> list[str]:
    """The trading symbols listed under a cover's "Trading Symbol(s)" head."""
    joined = "\n".join(cover)
    head = _TRADING_SYMBOL.search(joined)
    if head is None:
        return []
    end = _CHECK_MARK.search(joined, head.end())
    window = joined[head.end() : end.start() if end else head.end() + 600]
    found = [t for t in _TICKER.findall(window) if t not in _NOT_TICKERS]
    return list(dict.fromkeys(found))


def form_type(cover: Sequence[str], title: str) -> str | None:
    """The SEC form ("10-Q") or the kind of report ("annual report") a document is."""
    form = sec_form([title, *cover])
    if form:
        return form
    for text in [title, *cover[:10]]:
        match = _REPORT_FORM.search(text)
        if match:
            kind = match.group(1).lower().replace(" ", "-").replace("half-yearly", "half-year")
            return "interim report" if kind == "half-year" else f"{kind} report"
    return None


def months_reported(texts: Sequence[str], end: date) -> int | None:
    """How far into the fiscal year a quarterly report reaches: the longest of its statements'
    "Three/Six/Nine Months Ended" column heads over the period's own end ("Nine Months Ended
    December 31" in a March quarter's lease schedule counts a remainder, not the report)."""
    joined = "\n".join(texts)
    month = re.compile(rf"\b(?:{'|'.join(m for m, n in MONTHS.items() if n == end.month)})\b", re.I)
    seen = [
        _SPANS[match.group(1).lower().replace("-", " ")]
        for match in _MONTHS_ENDED.finditer(joined)
        if month.search(joined, match.end(), match.end() + WINDOW_CHARS)
    ]
    return max(seen) if seen else None


def document_subject(
    rows: Sequence[ParsedRow],
    source_file_name: str,
    title: str,
    running_text: Sequence[str] = (),
) -> DocumentSubject:
    """Issuer, tickers, form and period of a document (see the module docstring)."""
    texts = _texts(rows)
    cover = texts[:COVER_ROWS]
    form = form_type(cover, title)
    entity = registrant(cover) if form else None
    entity = entity or company_named([title, *running_text, *cover[:30]])
    end: date | None = stated_period_end("\n".join(cover))
    labels = period_labels(source_file_name, title, *running_text)
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    if end is not None:
        months = 12 if form in _ANNUAL_FORMS else months_reported(texts, end)
        if months is not None:
            fiscal_year, fiscal_quarter = fiscal_period(end, months)
    elif form in _ANNUAL_FORMS:
        years = [int(y) for y in labels if y.isdigit()] or years_named(title)
        fiscal_year = years[0] if len(set(years)) == 1 else None
    return DocumentSubject(
        entity=entity,
        tickers=tickers(cover) if form else [],
        form_type=form,
        period_end=end.isoformat() if end else None,
        fiscal_year=fiscal_year,
        fiscal_quarter=fiscal_quarter,
        period_labels=labels,
    )
