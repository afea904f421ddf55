"""Document prior: documents ranked by their cards (file name, title, opening page), and the
document channel that brings the best chunks of the named documents into the fusion."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.search import SearchRequest, SearchResult
from query_service.retrieval.classic import classic_search
from query_service.retrieval.queries import shape_query
from query_service.snapshot.documents import (
    Card,
    DocumentCards,
    card_for,
    name_words,
    named_documents,
    opening_text,
)
from query_service.snapshot.revision import Revision, open_revision

from .support import build_documents, publish_namespaces


def cards(*pairs: tuple[str, str]) -> DocumentCards:
    return DocumentCards.build(Card(d, text) for d, text in pairs)


def test_the_document_whose_card_names_the_query_ranks_first():
    ranked = cards(
        ("msft", "Form 10-Q for Microsoft Corp MICROSOFT CORPORATION quarterly report"),
        ("aapl", "Apple Inc. FORM 10-Q quarterly report"),
        ("nvda", "NVIDIA CORPORATION FORM 10-Q quarterly report"),
    ).rank(shape_query("path", "What was Microsoft's gross margin in the quarterly report?"), 3)
    assert [d for d, _ in ranked] == ["msft"]  # 'quarterly report' is on every card


def test_a_term_on_more_than_the_name_share_of_cards_does_not_rank():
    deck = cards(("a", "annual report fish"), ("b", "annual report birds"), ("c", "ducks"))
    assert deck.rank(["annual", "report"], 3, max_share=0.5) == []
    assert [d for d, _ in deck.rank(["fish"], 3, max_share=0.5)] == ["a"]


def test_ties_are_broken_by_document_id_and_the_limit_holds():
    deck = cards(("b", "geese"), ("a", "geese"), ("c", "swans"))
    assert [d for d, _ in deck.rank(shape_query("path", "geese"), 1)] == ["a"]


def test_a_query_names_documents_by_capitalised_words_and_words_with_digits():
    query = "What did Microsoft's Q1 2023 10-Q report about inventory and the Azure cloud?"
    assert name_words(query) == "Microsoft's Q1 2023 10-Q Azure 2023q1"
    assert name_words("How do tufted ducks feed?") == ""  # topic words name no document
    assert name_words("NVIDIA reported what?") == ""  # the first word is every sentence's capital
    assert (
        name_words("How much did Intel spend in the first quarter of 2023?") == "Intel 2023 2023q1"
    )


def test_a_quarter_and_its_year_name_one_filing_of_a_series():
    deck = cards(
        ("q3-2022", "2022_Q3_AAPL.pdf Apple Inc. Form 10-Q"),
        ("q3-2023", "2023_Q3_AAPL.pdf Apple Inc. Form 10-Q"),
        ("q1-2023", "2023_Q1_AAPL.pdf Apple Inc. Form 10-Q"),
        *((f"other-{i}", f"unrelated report {i}") for i in range(20)),
    )
    names = shape_query("path", name_words("What did Apple report in the third quarter of 2022?"))
    assert deck.rank(names, 3, max_share=0.1)[0][0] == "q3-2022"


def test_a_topic_word_on_few_cards_does_not_name_a_document(tmp_path):
    settings = load_settings(home=tmp_path)
    build_documents(
        settings,
        {
            "ducks.md": "# Ducks\n\nTufted ducks dive for mussels.\n",
            "geese.md": "# Geese\n\nGeese graze on grass; mussels are for ducks.\n",
            "swans.md": "# Swans\n\nSwans upend in shallow water.\n",
        },
    )
    publish_namespaces(settings)
    revision = open_revision(settings.published_dir, "default")
    request = SearchRequest(
        query="which birds graze?", top_k=3, weights={"content": 1.0, "document": 1.0}
    )
    assert all("document" not in r.channels for r in classic_search(revision, request).results)


def test_the_opening_is_the_first_page_or_without_pages_the_first_chunks():
    paged = [
        {"content": "body", "pages": [2], "sort_order": 2},
        {"content": "Cover title", "pages": [1], "sort_order": 0},
        {"content": "Registrant name", "pages": [1], "sort_order": 1},
    ]
    assert opening_text(paged) == "Cover title\nRegistrant name"
    flow = [{"content": f"c{i}", "pages": [], "sort_order": i} for i in range(5)]
    assert opening_text(flow) == "c0\nc1\nc2"
    card = card_for({"document_id": "d", "source_file_name": "q3.pdf", "title": "T"}, paged)
    assert card.text.split("\n")[:3] == ["q3.pdf", "T", "Cover title"]


def _quarterlies(tmp_path: Path) -> Revision:
    """Three companies' quarterly reports that say the same, among notes that name nobody
    (each company's name is on a few of the cards)."""
    settings = load_settings(home=tmp_path)
    body = "# Quarterly report\n\nRevenue grew and gross margin widened in the quarter.\n"
    reports = {
        "acme_2023_Q3.md": (body, date(2023, 10, 1)),
        "globex_2023_Q2.md": (body.replace("grew", "rose"), date(2023, 7, 1)),
        "globex_2023_Q3.md": (body.replace("grew", "climbed"), date(2023, 10, 1)),
        "initech_2023_Q3.md": (body.replace("grew", "soared"), date(2023, 10, 1)),
    }
    for name, (text, day) in reports.items():
        build_documents(settings, {name: text}, document_date=day)
    notes = {
        f"note-{i}.md": f"# Note {i}\n\nTufted ducks dive for mussels {i}.\n" for i in range(17)
    }
    build_documents(settings, notes)
    publish_namespaces(settings)
    return open_revision(settings.published_dir, "default")


def _top(revision: Revision, query: str, weights: dict[str, float]) -> SearchResult:
    return classic_search(revision, SearchRequest(query=query, top_k=1, weights=weights)).results[0]


def test_the_document_channel_brings_the_chunks_of_the_named_quarter_first(tmp_path):
    revision = _quarterlies(tmp_path)
    query = "How did gross margin develop at Globex in the second quarter of 2023?"
    named = _top(revision, query, {"content": 1.0, "document": 1.0})
    assert named.source_file_name == "globex_2023_Q2.md"
    assert named.channels == {"content": named.channels["content"], "document": 0}
    unnamed = _top(revision, query, {"content": 1.0})
    assert unnamed.source_file_name != "globex_2023_Q2.md", "the content alone cannot tell"


def test_a_name_without_a_quarter_or_latest_does_not_name_a_document(tmp_path):
    revision = _quarterlies(tmp_path)
    result = _top(
        revision, "How did gross margin develop at Globex?", {"content": 1, "document": 1}
    )
    assert "document" not in result.channels


def test_the_latest_of_a_named_series_comes_first(tmp_path):
    revision = _quarterlies(tmp_path)
    query = "How did gross margin develop in Globex's latest report?"
    result = _top(revision, query, {"content": 1.0, "document": 1.0})
    assert result.source_file_name == "globex_2023_Q3.md"
    assert result.channels["document"] == 0


def test_a_question_for_the_latest_ranks_only_the_current_member_of_a_series():
    deck = cards(
        *(
            (f"globex-{y}", f"globex_{y}.pdf Globex Corp quarterly report")
            for y in range(2015, 2023)
        ),
        ("acme", "acme.pdf Acme Corp quarterly report"),
    )
    names = shape_query("path", name_words("What did Globex say in its latest report?"))
    older = frozenset(f"globex-{y}" for y in range(2015, 2022))
    assert deck.rank(names, 5, 0.9)[0][0] == "globex-2015", "eight cards tie on the name"
    named = named_documents(deck, names, 5, 0.9, latest=True, superseded=older)
    assert named == ["globex-2022"]


def test_in_an_archive_of_few_companies_a_company_still_names_its_latest_filing(tmp_path):
    """Six quarters of one company among twelve filings: its name is on half of the cards."""
    settings = load_settings(home=tmp_path)
    body = "# Quarterly report\n\nRevenue grew and gross margin widened in the quarter.\n"
    verbs = iter(["rose", "climbed", "soared", "jumped", "edged up", "recovered", "held", "grew"])
    for company, quarters in (("globex", 6), ("acme", 3), ("initech", 3)):
        for i in range(quarters):
            year, quarter = 2021 + i // 4, i % 4 + 1
            text = body.replace("grew", f"{next(verbs, 'grew')} ({company} {i})")
            day = date(year, 3 * quarter, 28)
            build_documents(settings, {f"{company}_{year}_Q{quarter}.md": text}, document_date=day)
    publish_namespaces(settings)
    revision = open_revision(settings.published_dir, "default")
    query = "How did gross margin develop in Globex's latest report?"
    result = _top(revision, query, {"content": 1.0, "document": 1.0})
    assert result.source_file_name == "globex_2022_Q2.md"
    assert result.channels["document"] == 0


def test_a_passage_two_filings_share_is_cited_in_the_filing_the_query_names(tmp_path):
    settings = load_settings(home=tmp_path)
    shared = "Inventories are stated at average cost, subject to the lower of cost or value.\n"
    for name, day in (("globex_2023_Q2.md", date(2023, 7, 1)), ("globex_2023_Q3.md", None)):
        build_documents(settings, {name: f"# Inventories\n\n{shared}"}, document_date=day)
    notes = {f"note-{i}.md": f"# Note {i}\n\nDucks dive for mussels {i}.\n" for i in range(19)}
    build_documents(settings, notes)
    publish_namespaces(settings)
    revision = open_revision(settings.published_dir, "default")
    weights = {"content": 1.0, "document": 1.0}
    for quarter, expected in (("second", "globex_2023_Q2.md"), ("third", "globex_2023_Q3.md")):
        query = f"How are inventories stated at Globex in the {quarter} quarter of 2023?"
        top = _top(revision, query, weights)
        assert len(top.occurrences) == 2, "one chunk, printed in both filings"
        assert top.source_file_name == expected
        assert top.occurrences[0].source_file_name == expected
