"""Rows → typed segments: bounded, deterministic ids, embeds and links at the right offsets."""

from __future__ import annotations

import hashlib

from corpus_pipeline.common.ids import chunk_id_for
from corpus_pipeline.contracts import ChunkType, LinkSpan, ParsedRow, Relation, RowType
from corpus_pipeline.enrich.text import extractive_summary
from corpus_pipeline.quality.artifacts import hash_text_of
from corpus_pipeline.structure.chunking import (
    RESOURCE_MAX_TOKENS,
    ChunkingOptions,
    ChunkingResult,
    build_chunks,
    marker_for,
)
from corpus_pipeline.structure.hierarchy import assign_hierarchy

OPTIONS = ChunkingOptions(max_tokens=60, keywords_per_chunk=5, summarize=extractive_summary)


class Rows:
    def __init__(self) -> None:
        self.rows: list[ParsedRow] = []

    def add(self, row_type: RowType, text: str, **kw) -> Rows:
        self.rows.append(
            ParsedRow(
                order=len(self.rows),
                row_type=row_type,
                text=text,
                source_location=f"row {len(self.rows)}",
                **kw,
            )
        )
        return self

    def build(self, options: ChunkingOptions = OPTIONS) -> ChunkingResult:
        return build_chunks(assign_hierarchy(self.rows), options)


SENTENCE = "Ducks are waterfowl that live on lakes and rivers across the world."


def test_only_three_segment_types_exist_and_every_chunk_has_the_metadata_keys():
    result = (
        Rows()
        .add(RowType.HEADING, "Ducks", heading_level=1)
        .add(RowType.PARAGRAPH, SENTENCE)
        .add(RowType.TABLE, "Name | Size\nMallard | 58 cm", resource_path="tables/table-0001.html")
        .add(RowType.IMAGE, "A mallard", resource_path="images/abc.png")
        .build()
    )
    assert {c.chunk_type for c in result.chunks} == {
        ChunkType.TEXT,
        ChunkType.TABLE,
        ChunkType.IMAGE,
    }
    for chunk in result.chunks:
        meta = chunk.metadata.model_dump()
        assert {
            "length",
            "summary",
            "page_nums",
            "tokens",
            "keywords",
            "file_path",
            "order",
            "connect_to",
        } <= set(meta)
        assert meta["length"] == len(chunk.content)
        assert meta["tokens"] > 0


def test_a_long_section_is_split_at_paragraphs_and_each_part_stays_under_the_limit():
    rows = Rows().add(RowType.HEADING, "Ducks", heading_level=1)
    for i in range(6):
        rows.add(RowType.PARAGRAPH, f"Paragraph {i}. " + SENTENCE * 2)
    chunks = rows.build().chunks
    assert len(chunks) > 1
    assert all(c.metadata.tokens <= OPTIONS.max_tokens for c in chunks)
    assert chunks[0].content.startswith("Ducks\n\nParagraph 0."), "the heading leads part one"
    assert all(c.content.startswith("Paragraph") for c in chunks[1:]), (
        "splits fall on paragraph boundaries"
    )


def test_an_overlong_paragraph_is_split_at_sentence_boundaries():
    text = " ".join(
        f"Sentence number {i} talks about ducks and their habits on the lake." for i in range(20)
    )
    chunks = Rows().add(RowType.PARAGRAPH, text).build().chunks
    assert len(chunks) > 2
    assert all(c.content.endswith(".") for c in chunks)
    assert all(c.metadata.tokens <= OPTIONS.max_tokens for c in chunks)


def test_a_table_is_never_split_even_above_the_limit():
    big = "\n".join(f"row {i} | value {i} | more words here" for i in range(100))
    result = Rows().add(RowType.TABLE, big, resource_path="tables/table-0001.html").build()
    tables = [c for c in result.chunks if c.chunk_type is ChunkType.TABLE]
    assert len(tables) == 1
    assert tables[0].content == big
    assert tables[0].metadata.tokens > OPTIONS.max_tokens


def test_embedded_table_is_referenced_at_its_marker_and_excluded_from_the_text_id():
    result = (
        Rows()
        .add(RowType.PARAGRAPH, "Before the table.")
        .add(RowType.TABLE, "a | b", resource_path="tables/table-0001.html")
        .add(RowType.PARAGRAPH, "After the table.")
        .build()
    )
    text = next(c for c in result.chunks if c.chunk_type is ChunkType.TEXT)
    table = next(c for c in result.chunks if c.chunk_type is ChunkType.TABLE)
    (embed,) = [c for c in text.metadata.connect_to if c.relation is Relation.EMBEDS]
    start, end = embed.position
    assert text.content[start:end] == marker_for("table", "tables/table-0001.html")
    assert embed.target == table.chunk_id
    assert text.chunk_id == chunk_id_for("Before the table.\n\nAfter the table.")
    assert hash_text_of(text).split() == ["Before", "the", "table.", "After", "the", "table."]


def test_same_text_with_a_different_resource_reference_keeps_its_id():
    def text_id(resource: str) -> str:
        result = (
            Rows()
            .add(RowType.PARAGRAPH, "Shared paragraph.")
            .add(RowType.IMAGE, "logo", resource_path=resource)
            .build()
        )
        return next(c.chunk_id for c in result.chunks if c.chunk_type is ChunkType.TEXT)

    assert text_id("images/aaaa.png") == text_id("images/bbbb.png")


def test_identical_text_twice_keeps_one_id_and_records_both_places():
    result = (
        Rows()
        .add(RowType.HEADING, "A", heading_level=1)
        .add(RowType.PARAGRAPH, "About A.")
        .add(RowType.HEADING, "Disclaimer", heading_level=2)
        .add(RowType.PARAGRAPH, "Repeated disclaimer text.")
        .add(RowType.HEADING, "B", heading_level=1)
        .add(RowType.PARAGRAPH, "About B.")
        .add(RowType.HEADING, "Disclaimer", heading_level=2)
        .add(RowType.PARAGRAPH, "Repeated disclaimer text.")
        .build()
    )
    (chunk,) = [c for c in result.chunks if len(c.occurrences) > 1]
    assert chunk.content == "Disclaimer\n\nRepeated disclaimer text."
    assert [o.hierarchy_path for o in chunk.occurrences] == [
        ["A", "Disclaimer"],
        ["B", "Disclaimer"],
    ]
    assert len(result.chunks) == 3


def test_a_heading_line_leads_the_first_chunk_of_its_section():
    result = (
        Rows()
        .add(RowType.HEADING, "3.1 Payment Schedule", heading_level=2, page_numbers=[2])
        .add(RowType.PARAGRAPH, "Invoices are due in 30 days.", page_numbers=[2])
        .build()
    )
    (chunk,) = result.chunks
    assert chunk.content == "3.1 Payment Schedule\n\nInvoices are due in 30 days."
    assert chunk.hierarchy_path == ["3.1 Payment Schedule"]
    assert chunk.metadata.page_nums == [2]


def test_the_same_paragraph_under_two_headings_starts_two_distinct_chunks():
    result = (
        Rows()
        .add(RowType.HEADING, "1 Definitions", heading_level=1)
        .add(RowType.PARAGRAPH, "This clause is for demonstration only.")
        .add(RowType.HEADING, "2 Payment", heading_level=1)
        .add(RowType.PARAGRAPH, "This clause is for demonstration only.")
        .build()
    )
    assert [c.content.split("\n\n")[0] for c in result.chunks] == ["1 Definitions", "2 Payment"]
    assert len({c.chunk_id for c in result.chunks}) == 2


def test_a_section_holding_only_its_heading_opens_into_its_subsection():
    result = (
        Rows()
        .add(RowType.HEADING, "3 Payment", heading_level=1)
        .add(RowType.HEADING, "3.1 Schedule", heading_level=2)
        .add(RowType.PARAGRAPH, "Invoices are due in 30 days.")
        .add(RowType.HEADING, "4 Term", heading_level=1)
        .add(RowType.HEADING, "5 Law", heading_level=1)
        .add(RowType.PARAGRAPH, "Swiss law applies.")
        .build()
    )
    assert [(c.content, c.hierarchy_path) for c in result.chunks] == [
        (
            "3 Payment\n\n3.1 Schedule\n\nInvoices are due in 30 days.",
            ["3 Payment", "3.1 Schedule"],
        ),
        # A bare heading is never a chunk of its own: it leads the next section's text.
        ("4 Term\n\n5 Law\n\nSwiss law applies.", ["5 Law"]),
    ]


def test_a_link_becomes_a_related_connection_spanning_its_text():
    result = (
        Rows()
        .add(RowType.TABLE, "x | y", resource_path="tables/table-0001.html")
        .add(
            RowType.PARAGRAPH,
            "Read the field guide now.",
            links=[LinkSpan(start=9, end=20, target="https://example.org/guide")],
        )
        .build()
    )
    text = next(c for c in result.chunks if c.chunk_type is ChunkType.TEXT)
    (link,) = [c for c in text.metadata.connect_to if c.relation is Relation.RELATED]
    assert link.target == "https://example.org/guide"
    assert text.content[link.position[0] : link.position[1]] == "field guide"
    assert link.ref == "field guide"


def test_caption_next_to_a_table_becomes_its_caption_not_body_text():
    result = (
        Rows()
        .add(RowType.CAPTION, "Table 1: Duck sizes")
        .add(RowType.TABLE, "Name | Size", resource_path="tables/table-0001.html")
        .add(RowType.PARAGRAPH, "Body.")
        .build()
    )
    table = next(c for c in result.chunks if c.chunk_type is ChunkType.TABLE)
    text = next(c for c in result.chunks if c.chunk_type is ChunkType.TEXT)
    assert table.content.startswith("Table 1: Duck sizes")
    assert "Duck sizes" not in text.content
    assert result.resources[0].caption == "Table 1: Duck sizes"


def test_repeated_images_get_unique_resource_ids_but_share_a_file():
    result = (
        Rows()
        .add(RowType.IMAGE, "logo", resource_path="images/f00d.png")
        .add(RowType.PARAGRAPH, "Between.")
        .add(RowType.IMAGE, "logo", resource_path="images/f00d.png")
        .build()
    )
    ids = [r.resource_id for r in result.resources]
    assert ids == ["image-0001", "image-0002"]
    assert {r.file_path for r in result.resources} == {"images/f00d.png"}


def test_list_items_keep_a_bullet_and_pages_are_carried():
    result = (
        Rows()
        .add(RowType.LIST_ITEM, "first", page_numbers=[3])
        .add(RowType.LIST_ITEM, "second", page_numbers=[4])
        .build()
    )
    (chunk,) = result.chunks
    assert chunk.content == "- first\n\n- second"
    assert chunk.metadata.page_nums == [3, 4]


def test_chunking_is_deterministic():
    def run() -> list[str]:
        return [
            c.model_dump_json() for c in Rows().add(RowType.PARAGRAPH, SENTENCE * 8).build().chunks
        ]

    assert run() == run()


def test_splitting_keeps_the_text_as_written_between_sentences():
    text = "  ".join(f"Sentence {i} about ducks.\n  It has a second line." for i in range(30))
    chunks = Rows().add(RowType.PARAGRAPH, text).build().chunks
    assert len(chunks) > 1
    assert all(c.content in text for c in chunks)
    assert all(c.metadata.tokens <= OPTIONS.max_tokens for c in chunks)


def test_an_overlong_sentence_is_cut_into_word_windows():
    sentence = " ".join(f"word{i}" for i in range(400)) + "."
    chunks = Rows().add(RowType.PARAGRAPH, sentence).build().chunks
    assert len(chunks) > 2
    assert " ".join(c.content for c in chunks).split() == sentence.split()


def test_an_uncaptioned_table_is_summarised_by_the_text_leading_up_to_it():
    question = "28. Are specialized legal aid services provided to disadvantaged groups?"
    result = (
        Rows()
        .add(RowType.HEADING, "Survey", heading_level=1)
        .add(RowType.PARAGRAPH, question)
        .add(RowType.PARAGRAPH, "25. Does the provider have specialised units?")
        .add(RowType.TABLE, "Persons with disabilities | *", resource_path="tables/t.html")
        .add(RowType.TABLE, "Migrants | *", resource_path="tables/u.html")
        .build()
    )
    first, second = [c for c in result.chunks if c.chunk_type is ChunkType.TABLE]
    assert first.metadata.summary == question + " 25. Does the provider have specialised units?"
    # A lead-in introduces one resource only; the next one is summarised by its name.
    assert second.metadata.summary == "Survey"
    assert second.content == "Survey\nMigrants | *"


def test_a_table_lead_in_keeps_only_the_last_words_before_the_table():
    long_text = " ".join(f"w{i}" for i in range(200))
    result = (
        Rows()
        .add(RowType.PARAGRAPH, long_text)
        .add(RowType.TABLE, "a | b", resource_path="tables/t.html")
        .build()
    )
    table = next(c for c in result.chunks if c.chunk_type is ChunkType.TABLE)
    assert table.metadata.summary.split() == [f"w{i}" for i in range(120, 200)]


def test_an_uncaptioned_table_opens_with_the_title_of_its_section():
    result = (
        Rows()
        .add(RowType.HEADING, "Gross Margin", heading_level=1)
        .add(RowType.PARAGRAPH, "The following table shows gross margin by segment.")
        .add(RowType.TABLE, "Products | 35.4%", resource_path="tables/t.html")
        .build()
    )
    table = next(c for c in result.chunks if c.chunk_type is ChunkType.TABLE)
    assert table.content == "Gross Margin\nProducts | 35.4%"
    assert table.metadata.summary == "The following table shows gross margin by segment."


def test_a_captioned_table_opens_with_its_caption_not_the_section_title():
    result = (
        Rows()
        .add(RowType.HEADING, "Results", heading_level=1)
        .add(RowType.CAPTION, "Table 2: Accuracy per dataset")
        .add(RowType.TABLE, "SQuAD | 91.2", resource_path="tables/t.html")
        .build()
    )
    table = next(c for c in result.chunks if c.chunk_type is ChunkType.TABLE)
    assert table.content == "Table 2: Accuracy per dataset\nSQuAD | 91.2"


def test_a_heading_that_only_introduces_tables_is_carried_by_the_tables():
    result = (
        Rows()
        .add(RowType.HEADING, "Inventories", heading_level=1)
        .add(RowType.TABLE, "Components | $3,788", resource_path="tables/t.html")
        .add(RowType.HEADING, "Property, Plant and Equipment", heading_level=1)
        .add(RowType.TABLE, "Land and buildings | $23,446", resource_path="tables/u.html")
        .build()
    )
    assert [c.chunk_type for c in result.chunks] == [ChunkType.TABLE, ChunkType.TABLE]
    assert [c.content.split("\n")[0] for c in result.chunks] == [
        "Inventories",
        "Property, Plant and Equipment",
    ]


def test_a_heading_before_an_image_stays_text_the_image_does_not_carry_it():
    result = (
        Rows()
        .add(RowType.HEADING, "Network overview", heading_level=1)
        .add(RowType.IMAGE, "", resource_path="images/a.png")
        .build()
    )
    text = next(c for c in result.chunks if c.chunk_type is ChunkType.TEXT)
    assert text.content.startswith("Network overview")


def test_a_tiny_tail_joins_the_chunk_before_it_in_its_section():
    # 3 sentences = 48 tokens: two paragraphs never share a chunk (limit 60), so without the
    # merge the closing line would be a 5-token chunk of its own.
    long_paragraphs = [f"{SENTENCE} {SENTENCE} {SENTENCE}" for _ in range(3)]
    rows = Rows().add(RowType.HEADING, "Habitat", heading_level=1)
    for paragraph in long_paragraphs:
        rows.add(RowType.PARAGRAPH, paragraph)
    rows.add(
        RowType.PARAGRAPH,
        "See also the geese and the swans that share these lakes and rivers in the long northern winter months.",
    )
    chunks = [c for c in rows.build().chunks if c.chunk_type is ChunkType.TEXT]
    assert len(chunks) > 1
    assert all(c.metadata.tokens >= 25 for c in chunks)
    assert chunks[-1].content.endswith(
        f"{SENTENCE}\n\nSee also the geese and the swans that share these lakes and rivers in the long northern winter months."
    )


def test_text_without_spaces_is_cut_into_windows_within_the_limit():
    # base64-like, no space anywhere (and no repeats: identical windows would be one chunk)
    blob = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(300))
    chunks = Rows().add(RowType.PARAGRAPH, f"Attachment data: {blob} end.").build().chunks
    assert len(chunks) > 10
    assert all(c.metadata.tokens <= OPTIONS.max_tokens for c in chunks)
    assert "".join("".join(c.content.split()) for c in chunks) == f"Attachmentdata:{blob}end."


def test_a_resource_text_no_parser_could_part_is_bounded_and_marked():
    alt = " ".join(f"label{i}" for i in range(5000))  # an image's alt text of ~10k tokens
    result = Rows().add(RowType.IMAGE, alt, resource_path="images/abc.png").build()
    [image] = [c for c in result.chunks if c.chunk_type is ChunkType.IMAGE]
    assert image.metadata.tokens <= RESOURCE_MAX_TOKENS
    assert image.content.startswith("label0 label1") and image.content.endswith(" […]")


def test_rows_of_only_punctuation_or_invisible_characters_make_no_chunk():
    rows = (
        Rows()
        .add(RowType.HEADING, "\u200b\u200d", heading_level=1)
        .add(RowType.PARAGRAPH, ",,,, ,,,,")
        .add(RowType.PARAGRAPH, "\u200b\u200c\u200d\ufeff")
        .add(RowType.PARAGRAPH, "Price: 5 € → 6 €")
    )
    chunks = rows.build().chunks
    assert [c.content for c in chunks] == ["Price: 5 € → 6 €"]
