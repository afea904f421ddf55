"""Entity and period routing: the documents a question is about, by issuer and period.

A question about "Apple's quick ratio at the end of Q1 2023" is about one filing among many:
the issuer it names (by name, ticker, an abbreviation or a small misspelling: "Apple", "AAPL",
"Microsoft Corp", "Microsfot") picks the issuer's documents, and the period it names (a date,
a quarter, a year, "the latest") picks among those. Names are matched against the entities the
store's own documents carry (`DocumentSubject`), never a list of companies: exactly, or by edit
similarity over the question's word n-grams. Where both issuer and period pick one document per
issuer named, the routing is certain (search keeps to those documents); where only one of them
speaks, the matching documents are a ranked prior (the document channel). A store whose
documents all share one issuer is routed by period only: naming it decides nothing. A fourth
quarter's report answers for its year beside the annual report; a question about what a year
was expected to bring reaches the year before it too (where the guidance was given); a year or
quarter none of an issuer's documents reports on relaxes to its nearest documents, never to
nothing.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from rapidfuzz.distance import OSA

from corpus_pipeline.contracts import DocumentSubject
from corpus_pipeline.enrich.text import STOP_WORDS
from corpus_pipeline.finance.periods import PeriodReference, calendar_quarter, period_reference
from corpus_pipeline.finance.subject import NAME_WORD, entity_key

# A name written with a slip still names its issuer ("Microsfot", "Nvida", "Appel"): one edit
# (optimal string alignment: a transposition is one) in names of up to LONG_NAME letters, two in
# longer ones; shorter names than MIN_FUZZY_CHARS only exactly. Only words written as names
# (capitalised) are read so: "apply" is not "Apple".
MIN_FUZZY_CHARS = 5
LONG_NAME = 8
MIN_NAME_CHARS = 3  # a shorter remainder ("US" of "US Bancorp") needs its legal form
# Period scores: the document's own name for its period, its period's end date or, for a whole
# year's report, its fiscal year (3); a date within a week of its period's end (a 52/53-week
# quarter named by the month's end) (2.5); its fiscal quarter (2); the calendar quarter of its
# period (1.5); its year, for a quarter's report (1). A score of 2 or more, held by one document
# of an issuer, picks it.
CERTAIN_PERIOD = 2.0
# A question about what a year was expected to bring (guidance, an outlook).
_FORWARD = re.compile(
    r"\b(?:expect(?:s|ed|ation|ations)?|guidance|outlook|forecast(?:s|ed)?|projected|"
    r"anticipat(?:e|es|ed|ion))\b",
    re.I,
)


@dataclass(frozen=True)
class Subject:
    """One document's issuer and period, as routing reads them."""

    document_id: str
    entity: str
    tickers: tuple[str, ...]
    period_end: date | None
    fiscal_year: int | None
    fiscal_quarter: int | None
    labels: tuple[str, ...]

    @classmethod
    def of(cls, document_id: str, subject: DocumentSubject) -> Subject:
        return cls(
            document_id=document_id,
            entity=entity_key(subject.entity or ""),
            tickers=tuple(subject.tickers),
            period_end=date.fromisoformat(subject.period_end) if subject.period_end else None,
            fiscal_year=subject.fiscal_year,
            fiscal_quarter=subject.fiscal_quarter,
            labels=tuple(subject.period_labels),
        )


def _edits(name: str) -> int:
    return 1 if len(name) <= LONG_NAME else 2


def _tokens(text: str) -> list[tuple[str, str]]:
    """A question's words as written and folded, possessives dropped ("Apple's" → "apple")."""
    out = []
    for word in NAME_WORD.findall(text.replace("’", "'")):
        word = re.sub(r"'s?$", "", word)
        out.append((word, word.casefold()))
    return out


@dataclass(frozen=True)
class Routing:
    """The documents a question is about, best first, and whether search keeps to them."""

    documents: tuple[str, ...] = ()
    certain: bool = False
    entities: tuple[str, ...] = ()
    period: PeriodReference = field(default_factory=PeriodReference)

    def __bool__(self) -> bool:
        return bool(self.documents)


@dataclass
class Router:
    """The routing view of a revision's documents (built once per revision)."""

    subjects: list[Subject]

    def __post_init__(self) -> None:
        self.by_entity: dict[str, list[Subject]] = defaultdict(list)
        self.tickers: dict[str, str] = {}
        for subject in self.subjects:
            if subject.entity:
                self.by_entity[subject.entity].append(subject)
                for ticker in subject.tickers:
                    self.tickers.setdefault(ticker, subject.entity)
        firsts = [key.split()[0] for key in self.by_entity]
        self._unique_firsts = {w for w in firsts if firsts.count(w) == 1}

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]]) -> Router:
        """From the revision's documents rows (their manifests carry the subject)."""
        subjects = []
        for row in rows:
            manifest = json.loads(row["manifest"]) if row.get("manifest") else {}
            subject = DocumentSubject.model_validate(manifest.get("subject") or {})
            subjects.append(Subject.of(row["document_id"], subject))
        return cls(sorted(subjects, key=lambda s: s.document_id))

    def entities_named(self, question: str) -> list[str]:
        """The store's issuers a question names (by ticker, name, its first word when no other
        issuer shares it, or a near spelling of these), in the order first named."""
        words = _tokens(question)
        found: dict[str, int] = {}
        for index, (written, folded) in enumerate(words):
            entity = self.tickers.get(written) or self.tickers.get(folded.upper())
            if entity and (written.isupper() or (len(folded) >= 3 and folded not in STOP_WORDS)):
                found.setdefault(entity, index)
        for key in self.by_entity:
            at = self._named_at(key, words)
            if at is not None:
                found.setdefault(key, at)
        return sorted(found, key=lambda k: found[k])

    def _named_at(self, key: str, words: Sequence[tuple[str, str]]) -> int | None:
        """Where the question names an issuer: its name, or its first word where no other
        issuer's name starts with it, exactly (any case) or, written as a name (capitalised),
        within a small edit distance (a transposition counts one)."""
        parts = key.split()
        names = [key]
        if len(parts) > 1 and parts[0] in self._unique_firsts:
            names.append(parts[0])
        for name in names:
            if len(name) < MIN_NAME_CHARS or name in STOP_WORDS:
                continue
            size = len(name.split())
            edits = _edits(name) if len(name) >= MIN_FUZZY_CHARS else 0
            for start in range(len(words) - size + 1):
                if words[start][1][:1] != name[:1]:
                    continue  # a name and its slips start alike: most words are passed here
                gram = " ".join(f for _, f in words[start : start + size])
                if gram == name:
                    return start
                if (
                    edits
                    and words[start][0][:1].isupper()
                    and abs(len(gram) - len(name)) <= edits
                    and OSA.distance(gram, name, score_cutoff=edits) <= edits
                ):
                    return start
        return None

    def route(self, question: str) -> Routing:
        """Which documents a question is about (see the module docstring)."""
        period = period_reference(question)
        if period.years and _FORWARD.search(question):
            # What was expected of a year was said in the year before it (guidance given with
            # the last year's results): both years' documents may answer.
            earlier = tuple(y - 1 for y in period.years if y - 1 not in period.years)
            period = replace(period, years=period.years + earlier)
        entities = self.entities_named(question)
        if entities:
            groups = [self.by_entity[e] for e in entities]
        elif period:
            # Without an issuer, only reports that state their period are routed by it: a year
            # in a question about a survey says nothing about a report's file name.
            groups = [[s for s in self.subjects if s.period_end]]
        else:
            return Routing()
        documents: list[str] = []
        chosen: list[str] = []
        for members in groups:
            ranked = _rank(members, period)
            best = _decisive(ranked, period)
            if best is not None:
                chosen.append(best.document_id)
            matching = [s.document_id for score, s in ranked if score > 0 or not period]
            if entities and (period.years or period.quarters) and not period.dates and not matching:
                # A year or quarter none of the issuer's documents reports on: its documents
                # nearest to it, as a prior (never nothing). A date names an event as often as
                # a period (an 8-K's), which a report's period says nothing about.
                matching = [s.document_id for s in _nearest(members, period)]
            documents.extend(matching)
        if not documents:
            return Routing()
        if entities and len(chosen) == len(groups):
            return Routing(tuple(chosen), True, tuple(entities), period)
        return Routing(tuple(dict.fromkeys(documents)), False, tuple(entities), period)


def _specific(period: PeriodReference) -> bool:
    return bool(period.dates or period.quarters or period.years)


def _rank(members: Sequence[Subject], period: PeriodReference) -> list[tuple[float, Subject]]:
    """Documents by how well their period matches; the latest first on a tie (and when the
    question asks for the latest: then a newer period scores more)."""
    scored = [
        (_period_score(s, period) if _specific(period) else float(bool(period.latest)), s)
        for s in members
    ]
    return sorted(
        scored, key=lambda p: (-p[0], -(p[1].period_end or date.min).toordinal(), p[1].document_id)
    )


def _nearest(members: Sequence[Subject], period: PeriodReference) -> list[Subject]:
    """An issuer's documents by how far their period lies from the one asked about (in
    days, to its end; a document that states no period last)."""
    asked = [
        *(date(int(q[:4]), int(q[5]) * 3, 28) for q in period.quarters),
        *(date(y, 12, 31) for y in period.years),
    ]

    def distance(subject: Subject) -> int:
        end = subject.period_end or (
            date(subject.fiscal_year, 12, 31) if subject.fiscal_year else None
        )
        if end is None:
            return 1 << 30
        return min(abs((end - day).days) for day in asked)

    return sorted(members, key=lambda s: (distance(s), s.document_id))


def _decisive(ranked: list[tuple[float, Subject]], period: PeriodReference) -> Subject | None:
    """The one document the period picks among an issuer's, if it picks one."""
    if not ranked:
        return None
    if _specific(period):
        best = ranked[0][0]
        scores = [score for score, _ in ranked]
        return ranked[0][1] if best >= CERTAIN_PERIOD and scores.count(best) == 1 else None
    if period.latest:
        ends = [s.period_end for _, s in ranked]
        if ends[0] is not None and (len(ends) == 1 or ends[1] is None or ends[0] > ends[1]):
            return ranked[0][1]
    return None


def _period_score(subject: Subject, period: PeriodReference) -> float:
    best = 0.0
    end = subject.period_end
    for day in period.dates:
        if end == day:
            best = max(best, 3.0)
        elif end is not None and abs((end - day).days) <= 7:
            best = max(best, 2.5)
    fiscal = (
        f"{subject.fiscal_year}q{subject.fiscal_quarter}"
        if subject.fiscal_year and subject.fiscal_quarter
        else None
    )
    for quarter in period.quarters:
        if quarter in subject.labels:
            best = max(best, 3.0)
        elif quarter == fiscal:
            best = max(best, 2.0)
        elif end is not None and quarter == calendar_quarter(end):
            best = max(best, 1.5)
    # A fourth quarter's report closes its fiscal year and reports the whole year too.
    annual = subject.fiscal_quarter in (None, 4)
    for year in period.years:
        if str(year) in subject.labels or year == subject.fiscal_year:
            best = max(best, 3.0 if annual else 1.0)
        elif end is not None and end.year == year:
            best = max(best, 1.0)
    return best
