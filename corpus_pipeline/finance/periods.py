"""Reporting periods, as documents state them and as questions name them.

A report states its period on its cover ("For the quarterly period ended June 25, 2022", "for
the year ended 31 December 2022") and how far into its fiscal year that period reaches in its
statements' column heads ("Nine Months Ended"). A question names a period by a date ("the
quarter ended June 25, 2022"), a quarter ("Q3 2022", "the third quarter of fiscal 2023": the
spellings of `channels.periods`) or a year ("fiscal 2022", "FY22", "the 2021 annual report").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

_YEAR = r"(?:19|20)\d{2}"
_ORDINAL_QUARTER = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
}
_PERIODS = (
    # "Q3 2023", "Q3-2023", "Q3 FY2023", "Q3 fiscal 2023"
    re.compile(
        rf"(?<![^\W_])Q([1-4])[\s_\-]*(?:of\s+)?(?:FY|fiscal(?:\s+year)?)?\s*'?({_YEAR})(?![^\W_])",
        re.I,
    ),
    # "2023 Q3", "2023_Q3", "FY2023 Q3"
    re.compile(rf"(?<![^\W_])(?:FY)?({_YEAR})[\s_\-]*Q([1-4])(?![^\W_])", re.I),
    # "third quarter of 2023", "the second fiscal quarter of fiscal 2023", "3rd quarter 2023"
    re.compile(
        rf"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter"
        rf"(?:\s+(?:of|in|ended))?(?:\s+(?:fiscal(?:\s+year)?|FY))?\s*({_YEAR})\b",
        re.I,
    ),
)

# What each of `_PERIODS` cannot match without.
_QUARTER_CODE = re.compile(r"q[1-4]", re.I)
_PERIOD_HINTS = (_QUARTER_CODE, _QUARTER_CODE, re.compile("quarter", re.I))


def quarters_named(text: str) -> list[str]:
    """One spelling for every quarter a text names ("Q3 2023", "2023_Q3", "third quarter of
    2023" → "2023q3"): a quarter and its year are one name, written many ways; a query about
    "Q3 2022" must not match a filing of Q3 2023 as well as its own."""
    out: dict[str, None] = {}
    for number, pattern in enumerate(_PERIODS):
        if not _PERIOD_HINTS[number].search(text):
            continue  # a plain scan first: the patterns are slow on long texts without one
        for match in pattern.finditer(text):
            a, b = match.group(1), match.group(2)
            if number == 0:
                quarter, year = a, b
            elif number == 1:
                year, quarter = a, b
            else:
                quarter, year = str(_ORDINAL_QUARTER[a.lower()]), b
            out.setdefault(f"{year}q{quarter}", None)
    return list(out)


MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
# "June 25, 2022", "Jun. 25 2022", "25 June 2022", "25th of June, 2022", "2022-06-25".
_DATE = re.compile(
    rf"\b(?:(?P<m1>{_MONTH})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y1>{_YEAR})"
    rf"|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m2>{_MONTH})\.?,?\s+(?P<y2>{_YEAR})"
    rf"|(?P<y3>{_YEAR})-(?P<m3>\d{{2}})-(?P<d3>\d{{2}}))\b",
    re.IGNORECASE,
)
# The period a report covers, as its cover states it.
_PERIOD_END = re.compile(
    r"\b(?:quarterly\s+period|fiscal\s+(?:year|quarter|period)|financial\s+year|"
    r"(?:half|half-|six-month\s+)?(?:year|period|quarter)|(?:three|six|nine|twelve)\s+months|"
    r"(?:12|13|16|24|26|36|39|40|52|53)\s+weeks)\s+ended\s*:?\s*",
    re.IGNORECASE,
)
# A year named alone: "fiscal 2022", "FY2022", "FY 22", "fiscal year 2023", "2021 annual report".
_FISCAL_YEAR = re.compile(
    rf"\b(?:fiscal(?:\s+year)?|FY|financial\s+year)\s*'?(?P<y>{_YEAR}|\d{{2}})\b", re.IGNORECASE
)
_BARE_YEAR = re.compile(rf"(?<![\w.,/-])(?P<y>{_YEAR})(?![\w/-])")
_GLUED = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
_LATEST = re.compile(r"\b(?:latest|most\s+recent|newest|most\s+current|last\s+reported)\b", re.I)


def dates_in(text: str) -> list[date]:
    """Every calendar date written out in `text`, in order (invalid days are skipped)."""
    found: list[date] = []
    for match in _DATE.finditer(text):
        g = match.groupdict()
        year, month, day = (
            (g["y1"], g["m1"], g["d1"])
            if g["y1"]
            else (g["y2"], g["m2"], g["d2"])
            if g["y2"]
            else (g["y3"], g["m3"], g["d3"])
        )
        number = int(month) if month.isdigit() else MONTHS[month.lower().rstrip(".")]
        try:
            found.append(date(int(year), number, int(day)))
        except ValueError:
            continue
    return found


def stated_period_end(text: str) -> date | None:
    """The end of the period a cover states ("For the quarterly period ended October 1, 2022"):
    the first date right after an "… ended" phrase."""
    for match in _PERIOD_END.finditer(text):
        dates = dates_in(text[match.end() : match.end() + 40])
        if dates:
            return dates[0]
    return None


def fiscal_period(period_end: date, months: int) -> tuple[int, int | None]:
    """Fiscal year and quarter of a period ending `period_end` `months` into its fiscal year:
    the year in which that fiscal year ends (a quarter ended 2022-12-31 six months into the year
    is Q2 of fiscal 2023); the quarter None for a whole year."""
    closing = _closing_month(period_end)
    month = closing.month + 12 - months
    year = closing.year + (month - 1) // 12
    return year, (months // 3 if months in (3, 6, 9) else None)


def _closing_month(day: date) -> date:
    """The month a period ending `day` closes: a 52/53-week period ends within a week of a
    month's end, so "October 1, 2022" closes September."""
    if day.day > 7:
        return day.replace(day=1)
    return date(day.year - 1, 12, 1) if day.month == 1 else date(day.year, day.month - 1, 1)


def calendar_quarter(day: date) -> str:
    """The calendar quarter holding the middle month of a quarter ending `day` ("2023-04-30":
    February to April, mostly the first quarter → "2023q1")."""
    middle = _closing_month(_closing_month(day))
    return f"{middle.year}q{(middle.month - 1) // 3 + 1}"


def years_named(text: str) -> list[int]:
    """The years a text names on their own (not inside a date or a quarter it names)."""
    blanked = _DATE.sub(" ", text)
    for pattern in _PERIODS:  # a quarter's year is not a year named alone
        blanked = pattern.sub(" ", blanked)
    found: dict[int, None] = {}
    for match in _FISCAL_YEAR.finditer(blanked):
        value = match.group("y")
        found.setdefault(int(value) if len(value) == 4 else 2000 + int(value), None)
    for match in _BARE_YEAR.finditer(_FISCAL_YEAR.sub(" ", blanked)):
        found.setdefault(int(match.group("y")), None)
    return list(found)


@dataclass(frozen=True)
class PeriodReference:
    """The periods a question names: dates, quarters ("2022q3") and years, and whether it asks
    for the latest report."""

    dates: tuple[date, ...] = ()
    quarters: tuple[str, ...] = ()
    years: tuple[int, ...] = ()
    latest: bool = False

    def __bool__(self) -> bool:
        return bool(self.dates or self.quarters or self.years or self.latest)


def period_reference(text: str) -> PeriodReference:
    """What periods a question names (see the module docstring)."""
    return PeriodReference(
        dates=tuple(dict.fromkeys(dates_in(text))),
        quarters=tuple(quarters_named(text)),
        years=tuple(years_named(text)),
        latest=_LATEST.search(text) is not None,
    )


def period_labels(*texts: str) -> list[str]:
    """How a document names its own period in its file name, title and running headers:
    its quarters ("2022_Q3_AAPL.pdf", "Q3 2022 Form 10-Q" → "2022q3") and, when it names no
    quarter, its years ("2019-annual-performance-report.pdf" → "2019")."""
    quarters: dict[str, None] = {}
    years: dict[str, None] = {}
    for text in texts:
        for code in quarters_named(text.replace("_", " ")):
            quarters.setdefault(code, None)
        # File names join words with separators and glue years to words ("NARA2022.pdf").
        spaced = _GLUED.sub(" ", re.sub(r"[_\-.]+", " ", text))
        for year in years_named(spaced):
            years.setdefault(str(year), None)
    return list(quarters) or list(years)
