"""Tantivy schema and analyzers of the three search channels.

- content: content + summary (unless the content already holds it), simple tokenizer, lower-cased, English stemming (no stop words
  are removed: BM25's IDF already discounts them, and removing them breaks queries like 'The Who').
- path: file name + section paths of every occurrence, same analyzer as content.
- term: raw content (with a table's or image's lead-in text) + paths, tokens are whole identifiers (`ISO-9001:2015`, `v1.2.3`, `R&D`,
  `foo_bar`), lower-cased, never stemmed: exact matches of codes and numbers.

Numbers and identifiers are written many ways ("8,362" / "8362", "10-Q" / "10Q", "FY2023" /
"FY 2023"): `with_variants` appends the other spellings to a text before it is analysed, on the
indexed side and on the query side alike, so each way a user types them matches each way a
document prints them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import tantivy

from corpus_pipeline.finance.periods import quarters_named
from corpus_pipeline.finance.subject import entity_key

STEM_ANALYZER = "corpus_stem"
TERM_ANALYZER = "corpus_term"
TERM_PATTERN = r"[\p{L}\p{N}]+(?:[-_.:/#+@&][\p{L}\p{N}]+)*"

F_CHUNK_ID = "chunk_id"
F_CHUNK_TYPE = "chunk_type"
F_DOCUMENT_IDS = "document_ids"
F_CONTENT = "content"
F_PATH = "path"
F_TERM = "term"
F_STORED = "stored"
# Filter fields (multi-valued: a deduplicated chunk carries the values of every place it occurs;
# results are then checked per place, so OR/AND semantics hold per document).
F_DOCUMENT_TYPE = "f_document_type"
F_SOURCE = "f_source"
F_ORG_UNIT = "f_org_unit"
F_DATE = "f_date"
F_SOURCE_PATH = "f_source_path"
# Where a chunk is printed: physical pages, pages counted from the document's end (1 = the last
# page) and the labels printed on its pages, for questions that name a page ("on page 28").
F_PAGE = "f_page"
F_PAGE_FROM_END = "f_page_from_end"
F_PAGE_LABEL = "f_page_label"
# The numbered parts a chunk belongs to or is ("appendix e" for every chunk under a heading
# "Appendix E – Resources", "figure 1" for the image captioned "Figure 1: …"), for questions that
# name a part: the part itself answers them, not every passage that refers to it.
F_PART = "f_part"
# What a chunk's documents report on (issuer names and tickers, lower-cased), their form and
# fiscal periods ("2023", "2023q1"), and the primary financial statement the chunk is part of
# ("balance_sheet"): filters, and the statement channel's candidates.
F_ENTITY = "f_entity"
F_FORM_TYPE = "f_form_type"
F_FISCAL_PERIOD = "f_fiscal_period"
F_STATEMENT = "f_statement"

CHANNEL_FIELDS = {"content": F_CONTENT, "path": F_PATH, "term": F_TERM}
CHANNEL_ANALYZERS = {"content": STEM_ANALYZER, "path": STEM_ANALYZER, "term": TERM_ANALYZER}


# A run of letters/digits joined by the separators identifiers and numbers use.
_IDENTIFIER = re.compile(r"[^\W_]+(?:[,.\-/'’][^\W_]+)*")
_GROUPED_NUMBER = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_LETTER_DIGIT = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
_LIST_COMMA = re.compile(r",(?!\d{3}\b)")  # "a,b" (a list) is two tokens; "8,362" is one
_JOINER = re.compile(r"[-/]")
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")


def variants(token: str) -> list[str]:
    """Other spellings of one identifier-like token: a grouped number without its thousands
    separators ("8,362" → "8362"), a hyphenated or slashed code joined ("10-Q" → "10Q",
    "COVID-19" → "COVID19"), and a code split where letters meet digits ("FY2023" → "FY 2023")."""
    out: list[str] = []
    if _GROUPED_NUMBER.match(token):
        out.append(token.replace(",", ""))
    else:
        for part in _LIST_COMMA.split(token):
            if _JOINER.search(part) and _DIGIT.search(part) and _LETTER.search(part):
                out.append(_JOINER.sub("", part))
    if token.isalnum() and not token.isdigit() and not token.isalpha():
        pieces = _LETTER_DIGIT.split(token)
        if len(pieces) > 1 and all(len(p) >= 2 for p in pieces):
            out.append(" ".join(pieces))
    return out


def with_variants(text: str) -> str:
    """`text` followed by the other spellings of its numbers and identifiers (see `variants`)
    and of the quarters it names (see `finance.periods.quarters_named`); unchanged when it has none. Deterministic:
    variants in order of first occurrence."""
    if not _DIGIT.search(text):
        return text  # every variant and every period has a digit
    extra: dict[str, None] = {}
    for token in _IDENTIFIER.findall(text):
        if _DIGIT.search(token):  # the only tokens with variants (a chunk has ~300 tokens)
            for variant in variants(token):
                extra.setdefault(variant, None)
    for period in quarters_named(text):
        extra.setdefault(period, None)
    return f"{text}\n{' '.join(extra)}" if extra else text


def bm25_idf(total: int, df: int) -> float:
    """BM25's inverse document frequency of a term in `df` of `total` documents, as tantivy
    computes it (so scores computed beside the index compare with its own)."""
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


MIN_INFLECTED = 4  # "bus", "gas", "its": too short to tell a plural from a word ending in s


def _singular(word: str) -> str:
    """Harman's S-stemmer (1991): "-ies" → "-y", "-es" → "-e", "-s" → "", with its exceptions
    ("aies", "eies", "aes", "ees", "oes", "us", "ss" stay)."""
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def inflections(token: str) -> list[str]:
    """The other forms of a word in number ("inventory" → "inventories", "levels" → "level"),
    sorted: the term channel keeps words as written (an identifier matches whole), so without
    them a question's "inventory" misses the balance sheet's "Inventories". Only plain words of
    MIN_INFLECTED letters or more; a form that is no word simply matches nothing."""
    if len(token) < MIN_INFLECTED or not token.isalpha():
        return []
    singular = _singular(token)
    return sorted({singular, _plural(singular)} - {token})


@cache
def analyzers() -> dict[str, tantivy.TextAnalyzer]:
    stem = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(60))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )
    term = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(TERM_PATTERN))
        .filter(tantivy.Filter.remove_long(80))
        .filter(tantivy.Filter.lowercase())
        .build()
    )
    return {STEM_ANALYZER: stem, TERM_ANALYZER: term}


@cache
def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field(F_CHUNK_ID, stored=False, tokenizer_name="raw")
    builder.add_text_field(F_CHUNK_TYPE, stored=False, tokenizer_name="raw")
    builder.add_text_field(F_DOCUMENT_IDS, stored=False, tokenizer_name="raw")
    builder.add_text_field(
        F_CONTENT, stored=False, tokenizer_name=STEM_ANALYZER, index_option="position"
    )
    builder.add_text_field(F_PATH, stored=False, tokenizer_name=STEM_ANALYZER, index_option="freq")
    builder.add_text_field(
        F_TERM, stored=False, tokenizer_name=TERM_ANALYZER, index_option="position"
    )
    builder.add_bytes_field(F_STORED, stored=True, indexed=False)
    for name in (F_DOCUMENT_TYPE, F_SOURCE, F_ORG_UNIT, F_SOURCE_PATH):
        builder.add_text_field(name, stored=False, tokenizer_name="raw")
    builder.add_integer_field(F_DATE, stored=False, indexed=True, fast=True)
    # Appended after the fields of earlier indexes, so their field ids stay what they were.
    builder.add_integer_field(F_PAGE, stored=False, indexed=True)
    builder.add_integer_field(F_PAGE_FROM_END, stored=False, indexed=True)
    builder.add_text_field(F_PAGE_LABEL, stored=False, tokenizer_name="raw")
    builder.add_text_field(F_PART, stored=False, tokenizer_name="raw")
    for name in (F_ENTITY, F_FORM_TYPE, F_FISCAL_PERIOD, F_STATEMENT):
        builder.add_text_field(name, stored=False, tokenizer_name="raw")
    return builder.build()


INDEX_FIELDS = (
    F_CHUNK_ID,
    F_CHUNK_TYPE,
    F_DOCUMENT_IDS,
    F_CONTENT,
    F_PATH,
    F_TERM,
    F_STORED,
    F_DOCUMENT_TYPE,
    F_SOURCE,
    F_ORG_UNIT,
    F_SOURCE_PATH,
    F_DATE,
    F_PAGE,
    F_PAGE_FROM_END,
    F_PAGE_LABEL,
    F_PART,
    F_ENTITY,
    F_FORM_TYPE,
    F_FISCAL_PERIOD,
    F_STATEMENT,
)


# A numbered part ("Appendix C", "Table II", "Figure 3", "Fig. 3", "Unit 8", "Note 7.2", "Item 1A",
# also typed with a hyphen: "unit-8"): the part word, then its number or letter.
_PART_WORD = (
    "appendix|annex|table|figure|chart|chapter|section|note|part|item|exhibit|schedule|unit|"
    "step|lesson|module|goal|objective|priority|article"
)
_PART_NUMBER = r"\b(?:\d+(?:\.\d+)*[A-Za-z]?|[IVXLC]+|[A-Z])\b"
PART_LABEL = re.compile(
    rf"\b({_PART_WORD}|fig\.?)(?:\s+|-)({_PART_NUMBER})",
    re.IGNORECASE,
)


def part_key(match: re.Match[str]) -> str:
    """A part's name as indexed and asked: "Fig. 3" → "figure 3", "ITEM 1A" → "item 1a"."""
    return f"{_part_word(match.group(1))} {match.group(2).lower()}"


# Parts named together: "Figures 2 and 3", "units 4, 5, and 6", "Tables 1-3", "Appendix A to C".
_PART_JOIN = r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|to|through)\s+|\s*[-–]\s*"
PART_LIST = re.compile(
    rf"\b((?:{_PART_WORD})(?:e?s)?|appendices|priorities|figs?\.?)(?:\s+|-)"
    rf"({_PART_NUMBER}(?:(?:{_PART_JOIN}){_PART_NUMBER})*)",
    re.IGNORECASE,
)
_NUMBER = re.compile(_PART_NUMBER, re.IGNORECASE)
_RANGE = re.compile(r"\s*[-–]\s*|\s+(?:to|through)\s+", re.IGNORECASE)
MAX_RANGE = 20  # "Tables 1-3" is three tables; "items 1-1000" names no parts


def _part_word(word: str) -> str:
    """The part word, singular and spelled out: "Figs." → "figure", "Appendices" → "appendix"."""
    word = word.lower().rstrip(".")
    if word in ("fig", "figs"):
        return "figure"
    if word.endswith("ices"):  # appendices
        return word[:-4] + "ix"
    if word.endswith("ies"):  # priorities
        return word[:-3] + "y"
    if word.endswith("xes"):  # annexes
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def parts_named(text: str) -> list[str]:
    """Every numbered part `text` names, in order, once each; a list or a range names each of
    its parts ("Figures 2 and 3" → figure 2, figure 3; "units 4-6" → unit 4, unit 5, unit 6)."""
    found: list[str] = []
    for match in PART_LIST.finditer(text):
        word = _part_word(match.group(1))
        listed = list(_NUMBER.finditer(match.group(2)))
        numbers = [m.group() for m in listed]
        joins = [match.group(2)[a.end() : b.start()] for a, b in pairwise(listed)]
        keys = [numbers[0]]
        for join, number in zip(joins, numbers[1:], strict=True):
            if len(number) == 1 and number.islower():
                break  # "Part I and a summary": an article, not Part A
            low = keys[-1]
            if _RANGE.fullmatch(join) and (
                (low.isdigit() and number.isdigit())
                or (len(low) == len(number) == 1 and low.isalpha() and number.isalpha())
            ):
                start, stop = (int(low), int(number)) if low.isdigit() else (ord(low), ord(number))
                span = range(start + 1, stop + 1)
                if 0 < len(span) <= MAX_RANGE:
                    keys.extend(str(n) if low.isdigit() else chr(n) for n in span)
                    continue
            keys.append(number)
        found.extend(f"{word} {key.lower()}" for key in keys)
    return list(dict.fromkeys(found))


def part_phrases(text: str) -> list[str]:
    """The words by which `text` names its parts ("Figures 2 and 3"), as written."""
    return [m.group(0) for m in PART_LIST.finditer(text)]


def chunk_parts(section_titles: Sequence[str], caption: str | None) -> list[str]:
    """The parts a chunk belongs to (those its section titles name: "Appendix E", "SEMESTER 2:
    QUARTER 4 UNIT 13 …") and the part it is (a table's or image's caption that starts with a
    label: "Figure 1: An illustration …"; a caption that only refers to one names nothing)."""
    found = [key for title in section_titles for key in parts_named(title)]
    if caption:
        lead = PART_LABEL.match(caption.strip())
        if lead:
            found.append(part_key(lead))
    return list(dict.fromkeys(found))


def field_names(path: Path) -> list[str]:
    """The fields of the index at `path`, as written in its meta.json (an index written by an
    earlier schema lacks the newer ones)."""
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    return [f["name"] for f in meta.get("schema", [])]


def filter_value(value: str) -> str:
    """Filter values are matched case-insensitively, whitespace-normalised."""
    return " ".join(value.split()).casefold()


def entity_names(location: dict[str, Any]) -> list[str]:
    """The names a place's document answers to as an entity filter: its issuer (as written and
    without its legal form: "Apple Inc.", "apple") and its tickers."""
    entity = location.get("entity") or ""
    return [n for n in (entity, entity_key(entity), *location.get("tickers", ())) if n]


def fiscal_periods(location: dict[str, Any]) -> list[str]:
    """A place's fiscal year and quarter as filter values ("2023", "2023q1")."""
    year, quarter = location.get("fiscal_year"), location.get("fiscal_quarter")
    if not year:
        return []
    return [str(year)] + ([f"{year}q{quarter}"] if quarter else [])


def _register(index: tantivy.Index) -> tantivy.Index:
    for name, analyzer in analyzers().items():
        index.register_tokenizer(name, analyzer)
    return index


# What a text indexes as (the analyzers, `with_variants`): bumped with every change, so that an
# index written under another version is rebuilt from the artifacts at the next publish instead
# of answering queries that are analysed differently from its documents.
# 2: quarters ("Q3 2023", "third quarter of 2023" → "2023q3"); 3: "&" joins a term ("R&D");
# 4: a table is indexed with the title of its section as well as its caption.
ANALYSIS_VERSION = 4
ANALYSIS_FILE = "corpus_analysis.json"


def create_index(path: Path) -> tantivy.Index:
    path.mkdir(parents=True, exist_ok=True)
    index = _register(tantivy.Index(schema(), path=str(path)))
    (path / ANALYSIS_FILE).write_text(json.dumps({"version": ANALYSIS_VERSION}), encoding="utf-8")
    return index


def analysis_version(path: Path) -> int:
    """The analysis version an index was written under (1: before it was recorded)."""
    marker = path / ANALYSIS_FILE
    if not marker.is_file():
        return 1
    return int(json.loads(marker.read_text(encoding="utf-8"))["version"])


def index_is_current(path: Path) -> bool:
    """Whether the index at `path` has this code's fields and analysis (else it is rebuilt)."""
    return field_names(path) == list(INDEX_FIELDS) and analysis_version(path) == ANALYSIS_VERSION


def open_index(path: Path) -> tantivy.Index:
    """Open an existing index with our analyzers (they are not persisted by tantivy)."""
    return _register(tantivy.Index.open(str(path)))


def analyze(channel: str, text: str) -> list[str]:
    """Tokens of `text` exactly as the channel indexes them."""
    tokens: list[str] = analyzers()[CHANNEL_ANALYZERS[channel]].analyze(text)
    return tokens


def encode_stored(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def decode_stored(data: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(data)
    return value
