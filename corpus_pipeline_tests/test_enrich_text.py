"""Sentence boundaries and chunk keywords: what the chunker and the document graph rely on."""

from __future__ import annotations

import re

import pytest

from corpus_pipeline.enrich.text import (
    analyse,
    chunk_keywords,
    extractive_summary,
    sentence_spans,
    split_sentences,
    words,
)

FILING = (
    "Apple Inc. reported diluted earnings of $1.26 per share, up 5.0% from the U.S. figure of "
    "Q3 2022. Net sales were $81.8 billion.  See Note 7 – Debt for the 4.421% Notes due 2026. "
    "Item 1A. Risk Factors\nThe Company’s business can be affected by e.g. supply disruptions."
)


def test_abbreviations_amounts_and_percentages_do_not_end_a_sentence():
    assert split_sentences(FILING)[:2] == [
        "Apple Inc. reported diluted earnings of $1.26 per share, up 5.0% from the U.S. figure "
        "of Q3 2022.",
        "Net sales were $81.8 billion.",
    ]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (FILING, "en"),
        (FILING, None),
        ("Die Firma wächst z.B. in Europa. Das ist gut!  Oder?\n\nJa.", "de"),
        ("这是第一句。这是第二句！第三句", "zh"),
    ],
)
def test_sentence_spans_are_tight_in_order_and_lose_no_character(text, language):
    spans = sentence_spans(text, language)
    assert spans == sorted(spans) and all(s < e for s, e in spans)
    assert all(text[s:e] == text[s:e].strip() for s, e in spans)
    covered = "".join(text[s:e] for s, e in spans)
    assert re.sub(r"\s", "", covered) == re.sub(r"\s", "", text)


def test_a_german_text_keeps_its_abbreviations_inside_the_sentence():
    assert split_sentences("Die Firma wächst z.B. in Europa. Das ist gut.", "de") == [
        "Die Firma wächst z.B. in Europa.",
        "Das ist gut.",
    ]


def test_a_word_specific_to_a_chunk_ranks_above_one_the_whole_document_repeats():
    texts = [
        "Heron nests line the river. Heron colonies return each spring to the river.",
        "Heron feeding: herons wade the river shallows for fish.",
        "Heron counts fell along the river in the dry year.",
    ]
    keywords = chunk_keywords(texts, top=8)
    # Said once each: the words only this chunk has come before those every chunk has.
    assert keywords[2] == ["along", "counts", "dry", "fell", "year", "heron", "river"]
    # Said twice in one chunk, a document-wide word ranks with that chunk's own words.
    assert keywords[0][:2] == ["colonies", "heron"]


def test_a_repeated_two_word_phrase_is_one_keyword_and_its_words_are_not_repeated():
    texts = ["Gross margin rose. Gross margin was 44.5%, and services gross margin grew.", "Other."]
    keywords = chunk_keywords(texts, top=4)[0]
    assert keywords[0] == "gross margin"
    assert "gross" not in keywords and "margin" not in keywords


def test_keywords_are_deterministic_and_skip_texts_too_short_to_name_anything():
    texts = ["alpha beta gamma delta", "ok then", "delta gamma beta alpha"]
    assert chunk_keywords(texts, top=2) == chunk_keywords(list(texts), top=2)
    assert chunk_keywords(texts, top=2)[0] == ["alpha", "beta"]  # equal scores: alphabetical
    assert chunk_keywords(texts, top=2)[1] == []
    assert chunk_keywords(texts, top=0) == [[], [], []]


@pytest.mark.parametrize(
    "text",
    [
        FILING,
        "Line one\nwraps   here.\tTabs, and re-\nbreaks: it’s fine.",
        "İstanbul’s office opened. Sales in İzmir grew 12%. Costs fell. Staff rose again.",
    ],
)
def test_one_tokenisation_has_the_words_of_the_text(text):
    analysis = analyse(text)
    assert analysis.words == words(text)
    assert analysis.flat == " ".join(text.split())
    if analysis.starts is not None:
        assert [
            analysis.flat[s : s + len(w)].lower()
            for s, w in zip(analysis.starts, analysis.words, strict=True)
        ] == analysis.words


def test_a_summary_from_the_shared_tokenisation_is_the_summary_of_the_text():
    text = (
        "Revenue grew in every segment. Services revenue grew fastest, and services margin held. "
        "The weather was mild. Services revenue now leads the segments, ahead of products."
    )
    summary = (
        "Revenue grew in every segment. Services revenue grew fastest, and services margin held."
    )
    assert extractive_summary(text, 2) == summary  # the lead, then the most central sentence
    assert extractive_summary(analyse(text), 2) == summary
    turkish = "İzmir’s office opened. Sales in İzmir grew. Costs fell. İzmir’s staff grew again."
    assert analyse(turkish).starts is None  # "İ" lower-cases to two characters
    assert extractive_summary(analyse(turkish), 2) == extractive_summary(turkish, 2)


def test_keywords_from_the_shared_tokenisation_are_the_keywords_of_the_texts():
    texts = ["Gross margin rose. Gross margin was 44.5%, and services gross margin grew.", "Other."]
    assert chunk_keywords([analyse(t) for t in texts], top=4) == chunk_keywords(texts, top=4)
