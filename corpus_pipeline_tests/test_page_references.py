"""Questions that name a page ("the table on page 28", "slide 14", "the last page") are answered
from that page: pages are read as printed (a cover or front matter shifts the printed numbers
away from the file's page positions), indexed per chunk, and searched by their own channel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.index import channels as ch
from corpus_pipeline.parsing.pdf.page_labels import printed_labels
from query_service.retrieval.classic import classic_search
from query_service.retrieval.pages import PageReference, page_phrases, page_references
from query_service.retrieval.queries import place_terms, shape_query
from query_service.snapshot.revision import open_revision, read_current_pointer

from .support import build_documents, pdf_data, publish_namespaces, published_home

# -- reading page references from a question ---------------------------------------------------


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("In the table at page 28, which signal is rarest?", PageReference((), (), ("28",))),
        ("How many colors are in the slide 14?", PageReference((), (), ("14",))),
        ("What date is at the beginning of page(1)?", PageReference((), (), ("1",))),
        ("Summarise pages 3-5.", PageReference((), (), ("3", "4", "5"))),
        ("Compare pages 3 and 7", PageReference((), (), ("3", "7"))),
        ("What is the yellow text on p. 9?", PageReference((), (), ("9",))),
        ("What does page iv of the preface say?", PageReference((), (), ("iv",))),
        ("Who is named on the first page?", PageReference((1,), (), ())),
        ("What is in the first rectangle on page two?", PageReference((2,), (), ())),
        ("Is there a signature on the last page?", PageReference((), (1,), ())),
        ("What is on the second to last slide?", PageReference((), (2,), ())),
        ("How many pages contain tables?", PageReference()),
        ("What changed in Q3 2023 on the web page?", PageReference()),
    ],
)
def test_a_question_names_pages_by_number_label_position_or_from_the_end(question, expected):
    assert page_references(question) == expected


def test_the_words_naming_a_page_do_not_rank_chunks_on_that_page():
    question = "In the table at page 28, which signal has the least frequency?"
    assert page_phrases(question) == ["page 28"]
    terms = place_terms(shape_query("content", question), page_phrases(question))
    assert "signal" in terms and "frequenc" in terms
    assert "page" not in terms and "28" not in terms
    # A question of nothing but its page keeps its words (there is nothing else to rank by).
    assert place_terms(["page", "28"], ["page 28"]) == ["page", "28"]


def test_a_long_page_range_names_a_part_not_pages():
    assert page_references("What do pages 1-500 cover?").labels == ("1",)


# -- printed page labels -----------------------------------------------------------------------


def test_declared_page_labels_win_over_printed_numbers():
    labels = printed_labels(4, {2: ["7"], 3: ["8"], 4: ["9"]}, ["i", "ii", "1", "2"])
    assert labels == ["i", "ii", "1", "2"]


def test_printed_numbers_that_share_one_offset_label_their_pages_and_the_gaps_between():
    # A cover and a contents page come first; page 5 is a full-page figure without a footer.
    marks = {3: ["1"], 4: ["2"], 6: ["4"], 7: ["5"], 8: ["2023"]}
    labels = printed_labels(8, marks)
    assert labels == ["", "", "1", "2", "3", "4", "5", ""]


def test_numbers_that_agree_on_no_offset_label_nothing():
    # Figures in the footer band ("12", "40", "7") are counts, not a numbering.
    assert printed_labels(5, {1: ["12"], 2: ["40"], 3: ["7"]}) == [""] * 5


def test_roman_front_matter_keeps_its_printed_labels():
    marks = {2: ["ii"], 3: ["iii"], 4: ["1"], 5: ["2"], 6: ["3"]}
    assert printed_labels(6, marks) == ["", "ii", "iii", "1", "2", "3"]


# -- through ingest, publish and search --------------------------------------------------------

PARAGRAPH = (
    "The heron survey counted {bird} along the {place} transect this season. Observers walked "
    "the reed beds at dawn and noted every nest, every fledgling and every adult seen feeding. "
    "Water levels were recorded twice a week and the counts were compared with the previous "
    "year. The results for this transect are summarised in the paragraphs that follow, with "
    "the methods kept the same as in earlier seasons so that the {bird} can be compared."
)
PLACES = ["northern", "eastern", "southern", "western", "central", "coastal"]
BIRDS = ["grey herons", "egrets", "bitterns", "night herons", "spoonbills", "storks"]


def numbered_report(labels: list[str], declared: bool) -> bytes:
    """A cover and then one section per page; each page prints `labels[i]` in its footer, or
    declares it in /PageLabels when `declared`."""
    doc: Any = pymupdf.open()  # type: ignore[no-untyped-call]
    cover = doc.new_page()
    cover.insert_text((72, 300), "Wetland Heron Survey", fontsize=28)
    for i, label in enumerate(labels):
        page = doc.new_page()
        page.insert_text((72, 80), f"Transect {PLACES[i].title()}", fontsize=18)
        box = (72, 110, 540, 700)
        page.insert_textbox(box, PARAGRAPH.format(bird=BIRDS[i], place=PLACES[i]), fontsize=11)
        if not declared:
            page.insert_text((300, 780), label, fontsize=10)
    if declared:
        doc.set_page_labels(
            [
                {"startpage": 0, "prefix": "", "style": "", "firstpagenum": 1},
                {"startpage": 1, "prefix": "", "style": "r", "firstpagenum": 1},
                {"startpage": 3, "prefix": "", "style": "D", "firstpagenum": 1},
            ]
        )
    return pdf_data(doc)


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    files = {
        "printed.pdf": numbered_report(["1", "2", "3", "4", "5"], declared=False),
        "declared.pdf": numbered_report(["", "", "", "", "", ""], declared=True),
    }
    return published_home(tmp_path_factory.mktemp("pages"), files)


def manifest(settings: Any, record: Any) -> dict[str, Any]:
    path = settings.artifacts_dir / record.document_id / "manifest.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_the_manifest_records_the_label_printed_on_each_page(survey):
    settings, records = survey
    assert manifest(settings, records["printed.pdf"])["page_labels"] == [
        "",
        "1",
        "2",
        "3",
        "4",
        "5",
    ]


def test_the_manifest_records_the_labels_a_pdf_declares(survey):
    settings, records = survey
    labels = manifest(settings, records["declared.pdf"])["page_labels"]
    assert labels == ["", "i", "ii", "1", "2", "3", "4"]


def search(settings: Any, query: str, **weights: float) -> list[tuple[str, list[int]]]:
    revision = open_revision(settings.published_dir, "default")
    request = SearchRequest(query=query, top_k=3, **({"weights": weights} if weights else {}))
    return [(r.source_file_name, r.pages) for r in classic_search(revision, request).results]


def test_a_question_naming_a_printed_page_finds_that_page_first(survey):
    settings, _ = survey
    hits = search(settings, "Which birds did the heron survey count on page 4 of printed.pdf?")
    assert hits[0] == ("printed.pdf", [5])


def test_a_question_naming_a_roman_page_finds_the_front_matter_page(survey):
    settings, _ = survey
    assert search(settings, "What did the heron survey count on page ii?")[0] == (
        "declared.pdf",
        [3],
    )


def test_the_last_page_is_counted_from_each_documents_end(survey):
    settings, _ = survey
    hits = search(settings, "What did the heron survey count on the last page?")
    assert sorted(hits[:2]) == [("declared.pdf", [7]), ("printed.pdf", [6])]


def test_the_named_page_comes_first_through_the_page_channel(survey):
    settings, _ = survey
    revision = open_revision(settings.published_dir, "default")
    request = SearchRequest(query="What did the heron survey count on page 3?", top_k=3)
    top = classic_search(revision, request).results[0]
    assert top.channels["page"] == 0
    assert (top.source_file_name, top.pages) in [("printed.pdf", [4]), ("declared.pdf", [6])]


def pages_of(sections: list[tuple[str, str]]) -> bytes:
    """One titled section per page."""
    doc: Any = pymupdf.open()  # type: ignore[no-untyped-call]
    for title, text in sections:
        page = doc.new_page()
        page.insert_text((72, 80), title, fontsize=18)
        page.insert_textbox((72, 110, 540, 700), text, fontsize=11)
    return pdf_data(doc)


def test_on_a_named_page_the_question_s_other_words_rank_not_the_page_number(tmp_path):
    """Every chunk on "page 2" has met the page the question names; the one that also says
    "page 2" (a running footer, a cross-reference) is no better an answer for it."""
    files = {
        "contents.pdf": pages_of(
            [
                (
                    "Contents",
                    "How to read this guide: " + PARAGRAPH.format(bird="ducks", place="lake"),
                ),
                ("Overview", "Page 2 of the contents: at page 2, which is page 2 of 3."),
                ("Warranty", "Warranty terms and the service addresses, " * 8),
            ]
        ),
        "display.pdf": pages_of(
            [
                ("Setup", "Setting up the display stand and the cables. " * 8),
                ("Signals", "VGA: the signal of least frequency, 30 Hz."),
                ("Cleaning", "Cleaning the screen with a dry cloth. " * 8),
            ]
        ),
    }
    settings, _ = published_home(tmp_path, files)
    hits = search(settings, "In the table at page 2, which signal has the least frequency?", page=1)
    assert hits[0] == ("display.pdf", [2])


def test_an_index_holds_exactly_the_fields_the_publisher_checks(tmp_path):
    ch.create_index(tmp_path / "index")
    assert ch.field_names(tmp_path / "index") == list(ch.INDEX_FIELDS)


def test_a_revision_indexed_before_the_page_fields_is_rebuilt_by_the_next_publish(tmp_path):
    settings = load_settings(home=tmp_path)
    report = numbered_report(["1", "2", "3", "4", "5"], declared=False)
    build_documents(settings, {"printed.pdf": report})
    publish_namespaces(settings)
    ns_dir = settings.published_dir / "default"
    old = read_current_pointer(settings.published_dir, "default")
    meta_path = Path(ns_dir / old.tantivy_dir / "meta.json")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    page_fields = {ch.F_PAGE, ch.F_PAGE_FROM_END, ch.F_PAGE_LABEL}
    meta["schema"] = [f for f in meta["schema"] if f["name"] not in page_fields]
    meta_path.write_text(json.dumps(meta), encoding="utf-8")  # as an earlier publisher wrote it
    assert ch.F_PAGE not in open_revision(settings.published_dir, "default").fields
    publish_namespaces(settings)
    new = read_current_pointer(settings.published_dir, "default")
    assert new.revision == old.revision + 1
    assert ch.F_PAGE in open_revision(settings.published_dir, "default").fields
    assert search(settings, "Which birds did the heron survey count on page 2?")[0] == (
        "printed.pdf",
        [3],
    )
