"""Classic search: channels, exclusions, type filters, the small-corpus path, citations."""

from __future__ import annotations

import pytest

from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.search import SearchRequest
from query_service.retrieval.classic import classic_search
from query_service.retrieval.queries import shape_query
from query_service.snapshot.revision import NamespaceNotFound, open_revision

from .support import DOCS, build_documents, publish_namespaces

FILES: dict[str, bytes | str] = {
    "standards.md": "# Quality\n\n## Certification\n\nThe plant is certified to ISO-9001:2015 since March.\n",
    "iso-notes.md": "# ISO notes\n\n## Overview\n\nISO standards: ISO 9001 was revised in 2015; ISO 14001 covers environment. ISO 9001 audits happen yearly since 2015.\n",
    "ducks.md": "# Ducks\n\n## Diving ducks\n\nTufted ducks dive for mussels.\n\n## Dabbling ducks\n\nMallards dabble for plants.\n\n## Dabbling ducks in winter\n\nMallards gather on open water.\n",
    "word_tables.docx": (DOCS / "word_tables.docx").read_bytes(),
}


@pytest.fixture(scope="module")
def revision(tmp_path_factory):
    from corpus_pipeline.common.settings import load_settings

    settings = load_settings(home=tmp_path_factory.mktemp("search"))
    records = build_documents(settings, FILES)
    publish_namespaces(settings)
    return open_revision(settings.published_dir, "default"), records


def run(revision, query: str, **kw):
    return classic_search(revision[0], SearchRequest(query=query, **kw))


def test_results_carry_content_and_the_citation_fields(revision):
    response = run(revision, "tufted ducks dive", top_k=3)
    top = response.results[0]
    assert top.content == "Ducks\n\nDiving ducks\n\nTufted ducks dive for mussels."
    assert top.source_file_name == "ducks.md"
    assert top.document_id == revision[1]["ducks.md"].document_id
    assert top.section_path == ["Ducks", "Diving ducks"]
    assert top.chunk_id.startswith("c") and top.pages == [] and top.score > 0
    assert response.revision == revision[0].number and not response.small_corpus


def test_query_shaping_matches_indexing_stemming_and_identifiers():
    assert shape_query("content", "Diving Ducks") == ["dive", "duck"]
    assert shape_query("term", "Certified to ISO-9001:2015.") == [
        "certified",
        "iso-9001:2015",
        "iso9001",  # the code as written without its hyphen (channels.with_variants)
    ]
    assert shape_query("content", "the The THE") == ["the"], "content keeps every word"
    # An ampersand abbreviation is one term, as filings write it (not "r" and "d").
    assert shape_query("term", "R&D and SG&A expenses") == ["r&d", "sg&a", "expenses"]


def test_path_and_term_channels_ignore_function_words_unless_that_is_all_there_is():
    assert shape_query("path", "swimming in the lake") == ["swim", "lake"]
    assert shape_query("path", "The Who") == ["the", "who"]
    assert shape_query("content", "swimming in the lake") == ["swim", "in", "the", "lake"]


def test_an_exact_identifier_is_found_by_the_term_channel(revision):
    response = run(revision, "ISO-9001:2015", top_k=2)
    top = response.results[0]
    assert top.source_file_name == "standards.md"
    assert top.channels.get("term") == 0


def test_the_term_channel_alone_finds_the_identifier_and_nothing_looser(revision):
    response = run(
        revision, "ISO-9001:2015", top_k=5, weights={"path": 0, "content": 0, "term": 1.5}
    )
    assert [r.source_file_name for r in response.results] == ["standards.md"]
    assert set(response.results[0].channels) == {"term"}


def test_excluded_documents_never_appear(revision):
    excluded = revision[1]["ducks.md"].document_id
    response = run(
        revision, "ducks mallards dabble ISO standards", top_k=5, exclude_document_ids=[excluded]
    )
    assert response.results and all(r.document_id != excluded for r in response.results)


def test_an_excluded_section_removes_its_subtree_only(revision):
    response = run(
        revision,
        "mallards dabble plants open water",
        top_k=5,
        exclude_section_paths=[["Ducks", "Dabbling ducks"]],
    )
    paths = [r.section_path for r in response.results if r.source_file_name == "ducks.md"]
    assert ["Ducks", "Dabbling ducks"] not in paths
    assert ["Ducks", "Dabbling ducks in winter"] in paths, (
        "a sibling with a longer title is not a descendant"
    )


def test_type_filter_returns_only_allowed_types_and_tables_carry_html(revision):
    response = run(revision, "merged cell header", top_k=3, chunk_types=[ChunkType.TABLE])
    assert response.results and all(r.chunk_type is ChunkType.TABLE for r in response.results)
    resource = response.results[0].resource
    assert resource is not None and resource.kind == "table"
    assert (
        resource.html
        and resource.html.startswith("<table>")
        and "colspan" in resource.html + "rowspan"
    )


def test_a_small_namespace_returns_every_chunk_without_ranking(revision):
    total = revision[0].pointer.chunks
    response = run(revision, "anything at all", top_k=total)
    assert response.small_corpus
    assert len(response.results) == total
    assert all(r.score == 0.0 for r in response.results)


def test_the_small_corpus_path_still_applies_type_filters(revision):
    total = revision[0].pointer.chunks
    response = run(revision, "x", top_k=total, chunk_types=[ChunkType.TABLE])
    assert response.small_corpus and len(response.results) == 7


def test_an_unpublished_namespace_is_reported_by_name(tmp_path):
    with pytest.raises(NamespaceNotFound, match="namespace 'nope'"):
        open_revision(tmp_path, "nope")


def test_request_validation_names_the_field():
    with pytest.raises(ValueError, match="chunk_types"):
        SearchRequest(query="x", chunk_types=[])
    with pytest.raises(ValueError, match="query"):
        SearchRequest(query="   ")
    with pytest.raises(ValueError, match="unknown channels"):
        SearchRequest(query="x", weights={"vector": 1.0})


def test_a_table_is_found_by_the_words_leading_up_to_it_in_the_term_channel(revision):
    response = run(
        revision, "vertical spans", top_k=2, weights={"term": 1.0}, chunk_types=["table"]
    )
    assert [r.channels for r in response.results] == [{"term": 0}, {"term": 1}]
    found = " ".join(r.content for r in response.results)
    # The two tables introduced as having a vertical span: "… with vertical spans" and "… with
    # a vertical span over a row starting late" (the word in either number).
    assert "Merged Cell 3.1 4.1" in found and "Merged Cell 0.2 1.2" in found


def test_label_phrases_are_the_numbered_parts_a_query_names():
    from query_service.retrieval.queries import label_phrases

    query = "According to Table II and appendix C, what does Unit 8 (see Note 7.2) say?"
    assert label_phrases(query) == [
        ["table", "ii"],
        ["appendix", "c"],
        ["unit", "8"],
        ["note", "7.2"],
    ]
    assert label_phrases("How do tufted ducks feed?") == []


def test_a_label_typed_with_a_hyphen_is_the_same_numbered_part():
    from query_service.retrieval.queries import label_phrases

    query = "What is the case study under unit-8, and what does Figure-3b show?"
    assert label_phrases(query) == [["unit", "8"], ["figure", "3b"]]
    assert label_phrases("a well-known co-op") == []


def _published_with(tmp_path, files: dict[str, str]):
    """A revision of `files` beside two unrelated documents (enough chunks to be ranked)."""
    from corpus_pipeline.common.settings import load_settings

    settings = load_settings(home=tmp_path)
    build_documents(
        settings,
        {**files, "ducks.md": FILES["ducks.md"], "iso-notes.md": FILES["iso-notes.md"]},
    )
    publish_namespaces(settings)
    return open_revision(settings.published_dir, "default")


@pytest.mark.parametrize(
    ("word", "forms"),
    [
        ("inventory", ["inventories"]),
        ("inventories", ["inventory"]),
        ("levels", ["level"]),
        ("process", ["processes"]),
        ("status", ["statuses"]),
        ("its", []),  # too short to tell
        ("10-q", []),  # an identifier is matched as written
    ],
)
def test_a_term_channel_word_is_also_asked_in_its_other_number(word, forms):
    from corpus_pipeline.index.channels import inflections

    assert inflections(word) == forms


def test_the_term_channel_finds_a_statement_row_written_in_the_plural(tmp_path):
    revision = _published_with(
        tmp_path,
        {
            "balance.md": (
                "# Balance sheet\n\n| Assets | 2023 | 2022 |\n| --- | --- | --- |\n"
                "| Cash | 28,408 | 23,646 |\n| Inventories | 7,351 | 4,946 |\n"
            ),
            "review.md": "# Review\n\nThe supply chain review lists the levels of service.\n",
        },
    )
    request = SearchRequest(query="inventory level", top_k=2, weights={"term": 1.0})
    found = {r.source_file_name: r.content for r in classic_search(revision, request).results}
    assert "Inventories" in found["balance.md"]  # the row, written in the plural
    assert "levels" in found["review.md"]


def test_the_parts_a_text_names_are_keyed_as_asked():
    from corpus_pipeline.index.channels import parts_named

    assert parts_named("See Fig. 3, Table II and unit-8; then Figure 3 again, ITEM 1A.") == [
        "figure 3",
        "table ii",
        "unit 8",
        "item 1a",
    ]
    assert parts_named("Table of contents, a well-known figure") == []


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("How many quizzes are in units 4, 5, and 6?", ["unit 4", "unit 5", "unit 6"]),
        ("Among figure 1-4, how many", ["figure 1", "figure 2", "figure 3", "figure 4"]),
        ("Figures 2 and 3", ["figure 2", "figure 3"]),
        ("Appendices A to C", ["appendix a", "appendix b", "appendix c"]),
        ("Annexes B and D", ["annex b", "annex d"]),
        ("Part I and a summary", ["part i"]),  # "a" is an article here, not Part A
        ("items 1-1000", ["item 1", "item 1000"]),  # too wide to be a list of parts
    ],
)
def test_parts_named_together_are_each_named(text, parts):
    from corpus_pipeline.index.channels import parts_named

    assert parts_named(text) == parts


def test_the_words_naming_parts_are_read_as_written():
    from corpus_pipeline.index.channels import part_phrases

    assert part_phrases("Among figures 1-4, which one, and what does Appendix E list?") == [
        "figures 1-4",
        "Appendix E",
    ]
    assert part_phrases("a table of contents") == []


def test_a_chunk_belongs_to_the_parts_its_titles_name_and_is_the_part_its_caption_starts_with():
    from corpus_pipeline.index.channels import chunk_parts

    titles = ["Course", "SEMESTER 2: QUARTER 4 UNIT 13 Using Technology"]
    assert chunk_parts(titles, None) == ["unit 13"]
    assert chunk_parts(["Introduction"], "Figure 1: An illustration of our method.") == ["figure 1"]
    assert chunk_parts(["Introduction"], "As Figure 1 shows, weak models supervise.") == []
    assert chunk_parts(["Appendix E – Resources"], "Table 2. Sources") == [
        "appendix e",
        "table 2",
    ]


def test_a_question_naming_a_part_is_answered_by_that_part_not_by_passages_citing_it(tmp_path):
    revision = _published_with(
        tmp_path,
        {
            "plan.md": (
                "# Plan\n\n## Review\n\nStrengths and weaknesses are listed in Appendix E: "
                "see Appendix E for the strengths, Appendix E for the weaknesses.\n\n"
                "## Appendix E – Environmental scan\n\nFunding is stable; staffing is thin.\n\n"
                "## Appendix F – Budget\n\nStrengths and weaknesses of the budget.\n"
            ),
        },
    )
    request = SearchRequest(query="How many strengths and weaknesses are in Appendix E?", top_k=1)
    (top,) = classic_search(revision, request).results
    assert top.section_path == ["Plan", "Appendix E – Environmental scan"]
    assert "part" in top.channels


PLAN = (
    "# Plan\n\n## Appendix C\n\nStrengths: reliable funding.\n\n## Appendix D\n\nStrengths and "
    "weaknesses review: many strengths and many weaknesses, strengths listed first, weaknesses "
    "second.\n"
)
COURSE = (
    "# Course\n\n## Unit 7\n\nCase study: Workplace case study of a hiring panel, a case study "
    "in fairness.\n\n## Unit 8\n\nCase study: Discrimination in the Workplace Continues.\n\n"
    "## Unit 9\n\nCase study: a workplace case study of pay, another case study.\n"
)


@pytest.mark.parametrize(
    ("name", "text", "query", "section"),
    [
        ("plan.md", PLAN, "How many strengths and weaknesses are in Appendix C?", "Appendix C"),
        # Typed with a hyphen, printed with a space.
        ("course.md", COURSE, "What is the title of the case study under unit-8?", "Unit 8"),
    ],
)
def test_the_term_channel_ranks_the_part_a_query_names_by_its_label_first(
    tmp_path, name, text, query, section
):
    revision = _published_with(tmp_path, {name: text})
    request = SearchRequest(query=query, top_k=1, weights={"term": 1.0})
    assert classic_search(revision, request).results[0].section_path[-1] == section


def test_an_answer_format_instruction_does_not_pull_in_pages_that_say_format(tmp_path):
    revision = _published_with(
        tmp_path,
        {
            "grille.md": (
                "# Service manual\n\n## Replacing the grille\n\nUnclip the grille, lift it off and "
                "press the new grille into place: three steps.\n"
            ),
            "export.md": (
                "# Export\n\n## Answer file format\n\nWrite the answer file in integer format "
                "or string format; the format of every answer is written down as a list.\n"
            ),
        },
    )
    response = classic_search(
        revision,
        SearchRequest(
            query="How do I replace the grille? Please write down the answer in integer format.",
            top_k=2,
            weights={"path": 1.0, "term": 1.0},  # the channels without function words
        ),
    )
    assert [r.source_file_name for r in response.results] == ["grille.md"]


def _png() -> str:
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_an_image_without_text_of_its_own_never_outranks_a_text_or_table_chunk(tmp_path):
    from corpus_pipeline.contracts.artifacts import is_textless_image

    revision = _published_with(
        tmp_path,
        {
            "pump.md": (
                "# Pump\n\n## Valve\n\nThe pressure relief valve opens at six bar.\n\n"
                f"![](data:image/png;base64,{_png()})\n\n## Seals\n\nSeals are replaced yearly.\n"
            ),
            "valves.md": "# Valves\n\nA relief valve protects the pump from pressure.\n",
        },
    )
    results = classic_search(
        revision, SearchRequest(query="pressure relief valve", top_k=5)
    ).results
    textless = [is_textless_image(r.chunk_type.value, r.content) for r in results]
    assert True in textless, "the image is found by the words leading up to it"
    assert textless == sorted(textless), "and ranked after every chunk with text"


def test_a_table_is_searched_by_the_title_of_its_section_as_well_as_its_caption(tmp_path):
    revision = _published_with(
        tmp_path,
        {
            "report.html": (
                "<html><body><h1>Annual report</h1><h2>Quarterly shipments by harbour</h2>"
                "<table><caption>Table 3</caption><tr><th>Port</th><th>Tons</th></tr>"
                "<tr><td>Rotterdam</td><td>120</td></tr><tr><td>Hamburg</td><td>80</td></tr>"
                "</table></body></html>"
            ),
        },
    )
    request = SearchRequest(
        query="shipments by harbour", top_k=3, chunk_types=["table"], weights={"content": 1.0}
    )
    results = classic_search(revision, request).results
    assert results and results[0].content.startswith("Table 3")
