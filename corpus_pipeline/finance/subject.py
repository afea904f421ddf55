"""What a document reports on and for when: issuer, tickers, form and reporting period.

An SEC filing's cover names the registrant (on the line above "(Exact name of registrant as
specified in its charter)", or right after the commission file number where that caption is
missing), its trading symbols (the column under "Trading Symbol(s)"), the form ("FORM 10-Q")
and the period ("For the quarterly period ended June 25, 2022"); its statements' column heads
say how far into the fiscal year that period reaches ("Nine Months Ended": the third quarter).
An earnings release names its issuer, listing and period in its dateline ("– Johnson & Johnson
(NYSE: JNJ) today announced results for fourth-quarter and full year 2022"): its fiscal year and
quarter are the ones it names, as the company names them. An annual report that is no SEC form
names its company with a legal suffix ("Unilever PLC", "Siemens AG") on its cover, in its title
or in its running headers, and its year in its title and file name. Documents that are none of
these get an empty subject.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from corpus_pipeline.contracts import DocumentSubject, ParsedRow
from corpus_pipeline.finance.periods import (
    MONTHS,
    dates_in,
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
    rf"\b((?:(?:[A-Z][\w&'’.,-]*|&)\s+){{0,5}}?(?:(?:[A-Z0-9][\w&'’.-]*,?|&)\s+)"
    rf"(?:{LEGAL_FORMS}))(?=$|[\s,;:)|])"
)
# A statement's or a page's head: "THE COCA-COLA COMPANY AND SUBSIDIARIES".
_GROUP_HEAD = re.compile(r"^(.{2,80}?),?\s+(?:and|&)\s+(?:its\s+)?subsidiaries$", re.I)
# Cover text that is not a name: a line holding it holds more than the registrant.
_COVER_WORDS = re.compile(
    r"commission file|file number|period ended|transition period|fiscal year ended|"
    r"\bI\.R\.S\.|\b\d{2}-\d{7}\b",
    re.I,
)
# A press release's dateline names the issuer and its listing, then what it announces:
# "– Johnson & Johnson (NYSE: JNJ) today announced results for fourth-quarter and full year 2022"
_RELEASE = re.compile(
    r"(?P<issuer>[^()]{2,120}?)\s*\((?:NYSE|NASDAQ|Nasdaq|NYSE American|NYSE Arca|TSX|LSE)"
    r"\s*:\s*(?P<ticker>[A-Z][A-Z.]{0,5})\)\s*,?\s*(?:today\s+)?(?:announced|reported|"
    r"posted|released)\s+(?:its\s+|their\s+)?(?:financial\s+|operating\s+)?results\s+for"
    r"(?P<period>[^.]{0,240})"
)
_HEADLINE = re.compile(
    r"\b(?:reports?|announces?|posts?|delivers?)\b(?P<period>[^.;]{0,80}?)\bresults\b", re.I
)
_QUARTER_NAMED = re.compile(
    r"\b(?:(first|second|third|fourth)[\s-]+quarter|q([1-4]))\b|\b(full[\s-]+year|annual)\b",
    re.I,
)
_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
RELEASE_ROWS = 40  # a release's headline and dateline open it
_TRADING_SYMBOL = re.compile(r"trading\s*\|?\s*symbols?(?:\(s\))?", re.I)
_CHECK_MARK = re.compile(r"indicate by check mark", re.I)
_REGISTERED = re.compile(r"registered pursuant to section 12\(b\)", re.I)
# A symbol (with a preferred series, a note's year and letter, or a class) and its exchange.
_LISTED = re.compile(
    r"(?<![\w$.%/-])([A-Z]{1,5}(?:\s+PR\s+[A-Z]{1,2}|\s?\d{2}[A-Z]{0,2}[a-z]?|/\d{2}|\.[A-Z])?)"
    r"[\s|]+(?:The\s+)?(?:New[\s|]+York[\s|]+Stock|NASDAQ|Nasdaq|NYSE|"
    r"Chicago[\s|]+Stock[\s|]+Exchange)"
)
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
            return _registrant_name(before or (cover[i - 1] if i else ""))
    for i, text in enumerate(cover):
        match = _FILE_NUMBER.search(text)
        if match:
            rest = text[match.end() :].strip()
            return _registrant_name(rest or (cover[i + 1] if i + 1 < len(cover) else ""))
    return None


def _registrant_name(text: str) -> str | None:
    """The name in a cover line that should hold only it: where the line also carries the
    file number, the period or other cover text (a cover laid out in columns, read across),
    the company name with its legal form inside it, else nothing."""
    if _COVER_WORDS.search(text):
        return company_named([text])
    return _plausible_name(text)


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


def group_named(texts: Sequence[str]) -> str | None:
    """The company a "<name> and subsidiaries" head names (where the cover prints the name as
    a logo, the statements and running heads still name the group)."""
    for text in texts:
        match = _GROUP_HEAD.match(text)
        if match:
            return _plausible_name(match.group(1))
    return None


def tickers(cover: Sequence[str]) -> list[str]:
    """The trading symbols of a cover's table of registered securities: each the symbol right
    before the exchange it trades on ("Common Stock … JNJ New York Stock Exchange", "JPM PR D",
    "MMM26"), whatever the table's heads; else the words under a "Trading Symbol(s)" head."""
    joined = "\n".join(cover)
    head = _REGISTERED.search(joined) or _TRADING_SYMBOL.search(joined)
    window = _up_to_check_marks(joined, head, 2000)
    listed = [m.group(1) for m in _LISTED.finditer(window) if m.group(1) not in _NOT_TICKERS]
    if listed:
        return list(dict.fromkeys(listed))
    window = _up_to_check_marks(joined, _TRADING_SYMBOL.search(joined), 600)
    found = [t for t in _TICKER.findall(window) if t not in _NOT_TICKERS]
    return list(dict.fromkeys(found))


def _up_to_check_marks(joined: str, head: re.Match[str] | None, width: int) -> str:
    """The cover text after `head` up to the check-box questions (or `width` characters)."""
    if head is None:
        return ""
    end = _CHECK_MARK.search(joined, head.end())
    return joined[head.end() : end.start() if end else head.end() + width]


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
    month = re.compile(rf"\b(?:{'|'.join(m for m, n in MONTHS.items() if n == end.month)})\b", re.I)
    rows: dict[int, int] = {}  # span -> rows that head a column with it
    for i, text in enumerate(texts):
        ahead = text + "\n" + (texts[i + 1] if i + 1 < len(texts) else "")  # a head's next line
        spans = {
            _SPANS[match.group(1).lower().replace("-", " ")]
            for match in _MONTHS_ENDED.finditer(text)
            if month.search(ahead, match.end(), match.end() + WINDOW_CHARS)
        }
        for span in spans:
            rows[span] = rows.get(span, 0) + 1
    # A span that heads one row only may be a slip (an exhibit list's "three and nine months
    # ended March 31"); the statements repeat theirs.
    repeated = [span for span, count in rows.items() if count > 1]
    return max(repeated or rows) if rows else None


@dataclass(frozen=True)
class Release:
    """What an earnings release's dateline (and headline) say it reports."""

    row: int  # the line of `head` the dateline starts on
    issuer: str | None
    ticker: str
    fiscal_year: int | None
    fiscal_quarter: int | None
    period_end: date | None


def earnings_release(head: Sequence[str]) -> Release | None:
    """The release an opening (title, then the first rows) announces, or None. The fiscal year
    and quarter are the ones the release names, as the company names them ("Fourth Quarter
    Fiscal 2022" for a year ended January 2023), not computed from a date."""
    starts: list[int] = []
    parts: list[str] = []
    length = 0
    for text in head:
        starts.append(length)
        parts.append(text + ("" if text.endswith("-") else " "))  # "second-" / "quarter"
        length += len(parts[-1])
    joined = "".join(parts)
    match = _RELEASE.search(joined)
    if match is None:
        return None
    row = bisect_right(starts, match.start()) - 1
    period = match.group("period")
    headline = _HEADLINE.search(" ".join(head[: row + 1]))
    said = [period, headline.group("period") if headline else ""]
    quarter = next((q for q in map(_quarter_named, said) if q != 0), 0)
    ended = re.search(r"\bended\b", period)
    dates = dates_in(period[ended.end() :]) if ended else []
    end = dates[0] if dates else stated_period_end(" ".join(head))
    year = next((y for y in map(_year_named, said) if y is not None), None)
    if year is None and end is not None:
        year = fiscal_period(end, 3 * quarter if quarter else 12)[0]
    return Release(
        row=row,
        issuer=_release_issuer(match.group("issuer")),
        ticker=match.group("ticker"),
        fiscal_year=year,
        fiscal_quarter=quarter or None,
        period_end=end,
    )


def _release_issuer(text: str) -> str | None:
    """The issuer before a dateline's listing: the last piece after the place and date
    ("PURCHASE, N.Y. - April 25, 2023 - PepsiCo, Inc.")."""
    name = re.split(r"\s+[–—-]+\s+|--|\s[|•]\s", text)[-1]
    return _plausible_name(name) if len(name.split()) <= 8 else None


def _quarter_named(text: str) -> int:
    """1–4 for the quarter a text names first; 0 for none (or a full year named before it)."""
    match = _QUARTER_NAMED.search(text)
    if match is None or match.group(3):
        return 0
    word, digit = match.group(1), match.group(2)
    return _QUARTER_WORDS[word.lower()] if word else int(digit)


def _year_named(text: str) -> int | None:
    """The year a text names on its own, "fiscal 2022" before any other."""
    fiscal = re.search(r"\bfiscal(?:\s+year)?\s+(20\d\d)\b", text, re.I)
    if fiscal:
        return int(fiscal.group(1))
    years = years_named(text)
    return years[0] if years else None


def _quarter_end(texts: Sequence[str], quarter: int | None) -> date | None:
    """The date under a release's column head for its quarter ("Second Quarter July 2, 2023",
    "Fourth Quarter … Twelve Months Ended Jan 1, 2023"): the first head followed by a date."""
    if not quarter:
        return None
    ordinal = next(word for word, n in _QUARTER_WORDS.items() if n == quarter)
    joined = re.sub(r"\s*\|\s*", " ", "\n".join(texts))  # table cells, read across
    for match in re.finditer(rf"\b{ordinal}[\s-]+quarter\b", joined, re.I):
        dates = dates_in(joined[match.end() : match.end() + WINDOW_CHARS])
        if dates:
            return dates[0]
    return None


def _form_row(head: Sequence[str]) -> int | None:
    return next((i for i, text in enumerate(head) if _SEC_FORM.search(text)), None)


def _release_subject(
    release: Release, texts: Sequence[str], named: Sequence[str], labels: list[str]
) -> DocumentSubject:
    quarter_end = release.period_end or _quarter_end(texts, release.fiscal_quarter)
    return DocumentSubject(
        entity=release.issuer or company_named(named),
        tickers=[release.ticker],
        form_type="earnings release",
        period_end=quarter_end.isoformat() if quarter_end else None,
        fiscal_year=release.fiscal_year,
        fiscal_quarter=release.fiscal_quarter,
        period_labels=labels,
    )


def document_subject(
    rows: Sequence[ParsedRow],
    source_file_name: str,
    title: str,
    running_text: Sequence[str] = (),
) -> DocumentSubject:
    """Issuer, tickers, form and period of a document (see the module docstring)."""
    texts = _texts(rows)
    cover = texts[:COVER_ROWS]
    labels = period_labels(source_file_name, title, *running_text)
    release = earnings_release([title, *cover[:RELEASE_ROWS]])
    form_row = _form_row([title, *cover])
    if release is not None and (form_row is None or release.row < form_row):
        # A press release (one that cites a Form 10-Q further down is still a release).
        return _release_subject(release, texts, [title, *running_text, *cover[:30]], labels)
    form = form_type(cover, title)
    entity = registrant(cover) if form else None
    entity = entity or company_named([title, *running_text, *cover[:30]]) or group_named(cover)
    end: date | None = stated_period_end("\n".join(cover))
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
