"""Misspelt query words are searched as the store's own word one edit away, and only those."""

from __future__ import annotations

import pytest

from corpus_pipeline.contracts.search import SearchRequest
from query_service.retrieval.classic import classic_search
from query_service.retrieval.spelling import single_edits, spelled
from query_service.snapshot.revision import open_revision

from .support import build_documents, publish_namespaces

FILES = {
    "programme.md": (
        "# Programme\n\n## Course requirements\n\nThe course requirements cover four areas: "
        "methods, ethics, statistics and a thesis. Every requirement is assessed.\n\n"
        "## Housing\n\nStudents live on campus in the first year. Boarding is optional.\n"
    ),
    "handbook.md": (
        "# Handbook\n\n## Library\n\nThe library opens at eight. The requirement for borrowing "
        "is a student card. Requirements for a guest card are posted.\n\n## Sports\n\nThe sports hall is open on weekends.\n"
    ),
    "ducks.md": (
        "# Ducks\n\n## Diving ducks\n\nTufted ducks dive for mussels, bonding in pairs.\n\n"
        "## Boarding\n\nDucks are not allowed on boarding ramps.\n"
    ),
    "covid.md": (
        "# Health\n\n## Vaccination\n\nCOVID-19 vaccination is offered to staff.\n\n"
        "## Travel\n\nProof of vaccination is needed for field trips.\n"
    ),
}


@pytest.fixture(scope="module")
def revision(tmp_path_factory):
    from corpus_pipeline.common.settings import load_settings

    settings = load_settings(home=tmp_path_factory.mktemp("spelling"))
    build_documents(settings, FILES)
    publish_namespaces(settings)
    return open_revision(settings.published_dir, "default")


def test_single_edits_are_deletions_swaps_replacements_and_insertions_after_the_first_letter():
    edits = single_edits("abcd")
    assert {"acd", "acbd", "abxd", "abxcd", "abcdx"} <= edits
    assert "abcd" not in edits and "adcb" not in edits, "two edits away"
    assert not {"bcd", "xbcd", "bacd"} & edits, "the first letter is taken as typed"


def test_a_word_no_chunk_holds_becomes_the_stores_word_one_edit_away(revision):
    text, fixes = spelled(revision.searcher, "How many areas do the course requiremnt have?")
    assert fixes == {"requiremnt": "requirement"}
    assert text == "How many areas do the course requirement have?"


def test_the_correction_is_the_neighbour_most_chunks_use(revision):
    # "bording" is one edit from "boarding" (three chunks) and from "bonding" (two).
    assert spelled(revision.searcher, "bording")[1] == {"bording": "boarding"}


def test_another_form_of_a_word_the_store_has_is_no_typo(revision):
    # "requirments" shares its stem with "requirements": the content channel finds it as typed.
    assert spelled(revision.searcher, "requirments") == ("requirments", {})


def test_words_the_store_has_short_words_and_codes_are_never_changed(revision):
    query = "Tufted ducks dive: COVID-19 vaccinatoin for the campus"
    text, fixes = spelled(revision.searcher, query)
    assert fixes == {"vaccinatoin": "vaccination"}
    assert text == "Tufted ducks dive: COVID-19 vaccination for the campus"
    assert spelled(revision.searcher, "a tufed dcuk")[1] == {}, "shorter than five letters"


def test_a_word_with_no_neighbour_in_the_store_is_left_as_typed(revision):
    assert spelled(revision.searcher, "zeppelin timetable") == ("zeppelin timetable", {})


def test_classic_search_finds_the_page_despite_the_typo_and_says_what_it_searched(revision):
    response = classic_search(
        revision, SearchRequest(query="How many areas do the course requiremnt have?", top_k=3)
    )
    assert response.corrections == {"requiremnt": "requirement"}
    assert response.results[0].section_path == ["Programme", "Course requirements"]
    assert response.query == "How many areas do the course requiremnt have?", "echoed as asked"
