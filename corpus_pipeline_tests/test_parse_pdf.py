"""PDF strategy: headings from TOC / numbering / font geometry, page furniture, columns, OCR,
passwords, refusals and the parse budget. PDFs are generated with PyMuPDF where possible."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from corpus_pipeline.common.errors import (
    CorruptDocumentError,
    PasswordRequiredError,
    WrongPasswordError,
)
from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts import FileFormat, ParsedRow, RowType
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.pdf import parse_pdf
from corpus_pipeline.profiling import profile_source
from corpus_pipeline_tests.support import DOCS, bare_profile, needs_tesseract

mu: Any = pymupdf  # PyMuPDF is only partly annotated

BODY = (
    "This paragraph is ordinary body text that continues for a while so the page has "
    "enough running text to tell the body size from headings."
)

# (text, fontsize, fontname) lines; y advances by 1.8 x size.
Spec = list[tuple[str, float, str]]


def make_pdf(path: Path, pages: list[Spec], size: tuple[float, float] = (595, 842)) -> Path:
    doc: Any = mu.open()
    for lines in pages:
        page = doc.new_page(width=size[0], height=size[1])
        y = 90.0
        for text, fontsize, font in lines:
            y += fontsize * 1.8
            page.insert_text((72, y), text, fontsize=fontsize, fontname=font)
    doc.save(path)
    doc.close()
    return path


def parse(
    path: Path, tmp_path: Path, settings: CorpusSettings | None = None, password: str | None = None
) -> ParseContext:
    profile = profile_source(path, password=password).profile
    ctx = ParseContext(
        source_path=path,
        source_file_name=path.name,
        profile=profile,
        workdir=tmp_path / "work",
        settings=settings,
        password=password,
    )
    parse_pdf(ctx)
    return ctx


def headings(ctx: ParseContext) -> list[tuple[str, int | None, list[int]]]:
    return headings_of(ctx.rows)


def headings_of(rows: list[ParsedRow]) -> list[tuple[str, int | None, list[int]]]:
    return [
        (r.text, r.heading_level, r.page_numbers) for r in rows if r.row_type is RowType.HEADING
    ]


def body(n: int = 3) -> Spec:
    return [(BODY[:90], 10, "helv")] * n


def test_embedded_toc_drives_the_hierarchy(tmp_path):
    path = tmp_path / "toc.pdf"
    make_pdf(
        path,
        [
            [("Part One", 14, "helv"), *body(), ("Scope of work", 11, "helv"), *body()],
            [("Terms", 11, "helv"), *body()],
        ],
    )
    doc: Any = mu.open(path)
    doc.set_toc(
        [[1, "Part One", 1], [2, "Scope of Work", 1], [2, "Terms", 2], [2, "Ghost entry", 2]]
    )
    doc.saveIncr()
    doc.close()
    ctx = parse(path, tmp_path)
    assert headings(ctx) == [
        ("Part One", 1, [1]),
        ("Scope of work", 2, [1]),
        ("Ghost entry", 2, [2]),  # unmatched: at the start of its page
        ("Terms", 2, [2]),
    ]


def test_numbering_gives_levels_without_a_toc(tmp_path):
    path = make_pdf(
        tmp_path / "numbered.pdf",
        [
            [
                ("1 Introduction", 10, "hebo"),
                *body(),
                ("1.1 Scope", 10, "hebo"),
                *body(),
                ("1.1.1 Details", 10, "hebo"),
                *body(),
                ("2 Method", 10, "hebo"),
                *body(4),
            ]
        ],
    )
    assert [(t, lvl) for t, lvl, _ in headings(parse(path, tmp_path))] == [
        ("1 Introduction", 1),
        ("1.1 Scope", 2),
        ("1.1.1 Details", 3),
        ("2 Method", 1),
    ]


def test_font_sizes_cluster_into_levels(tmp_path):
    path = make_pdf(
        tmp_path / "fonts.pdf",
        [
            [
                ("Annual Overview", 22, "helv"),
                *body(),
                ("Regional results", 16, "helv"),
                *body(),
                ("Northern markets", 13, "hebo"),
                *body(),
                ("Southern markets", 13, "hebo"),
                *body(),
            ]
        ],
    )
    assert [(t, lvl) for t, lvl, _ in headings(parse(path, tmp_path))] == [
        ("Annual Overview", 1),
        ("Regional results", 2),
        ("Northern markets", 3),
        ("Southern markets", 3),
    ]


def test_a_title_set_a_size_smaller_on_its_second_line_is_one_heading(tmp_path):
    path = make_pdf(
        tmp_path / "wrapped.pdf",
        [
            [
                ("Row and Column Access Control", 33, "hebo"),
                ("Support in IBM DB2 for i", 30, "hebo"),
                *body(),
                ("Security fundamentals", 16, "hebo"),
                *body(),
            ]
        ],
    )
    assert [t for t, _, _ in headings(parse(path, tmp_path))] == [
        "Row and Column Access Control Support in IBM DB2 for i",
        "Security fundamentals",
    ]


def test_a_much_smaller_subtitle_below_a_title_stays_apart(tmp_path):
    path = make_pdf(
        tmp_path / "subtitle.pdf",
        [
            [
                ("Annual Overview", 30, "hebo"),
                ("Regional results", 20, "hebo"),
                *body(),
                ("Northern markets", 14, "hebo"),
                *body(),
            ]
        ],
    )
    titles = [t for t, _, _ in headings(parse(path, tmp_path))]
    assert titles[:2] == ["Annual Overview", "Regional results"]


def test_running_headers_footers_and_page_numbers_are_removed(tmp_path):
    path = tmp_path / "furniture.pdf"
    doc: Any = mu.open()
    for n in range(1, 5):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 40), "ACME Corp quarterly report", fontsize=9)
        page.insert_text((72, 120), f"Body text of page {n} with several words in it.", fontsize=10)
        page.insert_text((280, 815), f"Page {n} of 4", fontsize=9)
    doc.save(path)
    ctx = parse(path, tmp_path)
    text = " ".join(r.text for r in ctx.rows)
    assert "ACME" not in text
    assert "Page 3 of 4" not in text
    assert "Body text of page 4" in text


BIRDS = [
    "herons",
    "egrets",
    "bitterns",
    "storks",
    "ibises",
    "cranes",
    "rails",
    "grebes",
    "coots",
    "terns",
    "gulls",
]


def test_a_footer_printed_right_below_the_content_is_removed(tmp_path):
    # Filings printed from a browser end each page's text with the running footer (and the page
    # number) wherever the content stops, far from the page's bottom edge.
    path = tmp_path / "browser-printed.pdf"
    doc: Any = mu.open()
    for n in range(1, 5):
        page = doc.new_page(width=595, height=842)
        y = 120.0
        for i in range(3 + n * 4):
            words = " ".join(random.Random(n * 100 + i).choices(BIRDS, k=8))
            page.insert_text((72, y), f"{words.capitalize()} were counted.", fontsize=10)
            y += 16
        page.insert_text((72, y + 20), f"Heron Holdings Inc. | Q3 2023 Form 10-Q | {n}", fontsize=9)
        page.insert_text((290, y + 40), str(n), fontsize=9)
    doc.save(path)
    ctx = parse(path, tmp_path)
    text = "\n".join(r.text for r in ctx.rows)
    assert "Heron Holdings" not in text
    assert not any(line.strip().isdigit() for line in text.splitlines())
    assert text.count("were counted.") == sum(3 + n * 4 for n in range(1, 5))
    assert ctx.page_labels == ["1", "2", "3", "4"]
    assert ctx.running_text == ["Heron Holdings Inc. | Q3 2023 Form 10-Q"]  # kept as context


def test_a_line_that_ends_only_some_pages_stays_text(tmp_path):
    path = tmp_path / "endings.pdf"
    doc: Any = mu.open()
    for n in range(1, 6):
        page = doc.new_page(width=595, height=842)
        page.insert_text(
            (72, 120), f"Body of page {n} with enough words to be a paragraph.", fontsize=10
        )
        if n == 2:
            page.insert_text((72, 140), "Heron counts fell in the second quarter.", fontsize=10)
    doc.save(path)
    text = " ".join(r.text for r in parse(path, tmp_path).rows)
    assert "Heron counts fell in the second quarter." in text


def test_two_columns_are_read_column_by_column(tmp_path):
    path = tmp_path / "columns.pdf"
    doc: Any = mu.open()
    page = doc.new_page(width=595, height=842)
    left = " ".join(f"left{i} words fill the first column." for i in range(30))
    right = " ".join(f"right{i} words fill the second column." for i in range(30))
    page.insert_textbox(mu.Rect(50, 100, 285, 700), left, fontsize=10)
    page.insert_textbox(mu.Rect(310, 100, 545, 700), right, fontsize=10)
    doc.save(path)
    text = " ".join(r.text for r in parse(path, tmp_path).rows)
    assert "left29" in text and "right0" in text
    assert text.index("left29") < text.index("right0")


@needs_tesseract
def test_a_scanned_page_is_read_with_ocr(tmp_path):
    src: Any = mu.open()
    page = src.new_page(width=595, height=842)
    page.insert_text((72, 200), "Quarterly inspection passed", fontsize=28)
    page.insert_text((72, 260), "All valves were replaced in March", fontsize=28)
    png = page.get_pixmap(dpi=150).tobytes("png")
    scan: Any = mu.open()
    scan.new_page(width=595, height=842).insert_image(mu.Rect(0, 0, 595, 842), stream=png)
    path = tmp_path / "scan.pdf"
    scan.save(path)
    ctx = parse(path, tmp_path)
    assert ctx.profile.pdf is not None and ctx.profile.pdf.category == "scan"
    text = " ".join(r.text for r in ctx.rows)
    assert "inspection passed" in text
    assert all(r.page_numbers == [1] for r in ctx.rows)


SCANNED_LINES = [
    "Quarterly inspection passed",
    "Boiler pressure within limits",
    "All valves were replaced in March",
    "Next inspection due in June",
    "Pump seals show light wear",
]


def _scanned_pdf(path: Path, lines: list[str]) -> Path:
    """One image-only page per line, as a scanner delivers them."""
    scan: Any = mu.open()
    for line in lines:
        src: Any = mu.open()
        page = src.new_page(width=595, height=842)
        page.insert_text((72, 200), line, fontsize=28)
        png = page.get_pixmap(dpi=150).tobytes("png")
        scan.new_page(width=595, height=842).insert_image(mu.Rect(0, 0, 595, 842), stream=png)
    scan.save(path)
    return path


@needs_tesseract
def test_scanned_pages_recognised_side_by_side_read_as_one_at_a_time(tmp_path):
    path = _scanned_pdf(tmp_path / "scans.pdf", SCANNED_LINES)
    one = parse(path, tmp_path / "one", load_settings(home=tmp_path / "h1", ocr_workers=1))
    three = parse(path, tmp_path / "three", load_settings(home=tmp_path / "h3", ocr_workers=3))
    rows = [(r.text, r.page_numbers) for r in three.rows]
    assert rows == [(r.text, r.page_numbers) for r in one.rows]
    for number, line in enumerate(SCANNED_LINES, start=1):
        words = line.split()[-2:]
        assert any(" ".join(words) in text and pages == [number] for text, pages in rows), line


@needs_tesseract
def test_a_page_whose_recognition_fails_fails_alone(tmp_path, monkeypatch):
    import pytesseract

    from corpus_pipeline.parsing.pdf import document as pdf_parser
    from corpus_pipeline.parsing.pdf.ocr import recognise as real

    calls = {"n": 0}

    def second_fails(image: Any, lang: str, timeout: float = 0.0) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise pytesseract.TesseractError(1, "engine crashed")
        return real(image, lang, timeout)

    monkeypatch.setattr(pdf_parser, "recognise", second_fails)
    path = _scanned_pdf(tmp_path / "scans.pdf", SCANNED_LINES[:3])
    ctx = parse(path, tmp_path, load_settings(home=tmp_path / "h", ocr_workers=1))
    text = " ".join(r.text for r in ctx.rows)
    assert "inspection passed" in text and "replaced in March" in text
    assert "Boiler pressure" not in text
    failed = [d for d in ctx.diagnostics.items if d.code == "ocr.failed"]
    assert [(d.page, d.lost) for d in failed] == [(2, "page text")]
    assert "OCR of page 2 failed" in failed[0].message


@needs_tesseract
def test_a_scanned_page_without_words_keeps_its_picture(tmp_path):
    src: Any = mu.open()
    page = src.new_page(width=595, height=842)
    for n in range(6):  # a chart: bars, no words
        page.draw_rect(mu.Rect(80 + 70 * n, 700 - 80 * n, 130 + 70 * n, 760), fill=(0.2, 0.4, 0.8))
    png = page.get_pixmap(dpi=150).tobytes("png")
    path = _scanned_pdf(tmp_path / "scans.pdf", SCANNED_LINES[:1])
    scan: Any = mu.open(path)
    scan.new_page(width=595, height=842).insert_image(mu.Rect(0, 0, 595, 842), stream=png)
    scan.saveIncr()
    ctx = parse(path, tmp_path)
    assert [r.page_numbers for r in ctx.rows if r.row_type is RowType.IMAGE] == [[2]]
    assert any("inspection passed" in r.text for r in ctx.rows if r.page_numbers == [1])


def test_an_encrypted_pdf_without_password_is_refused():
    with pytest.raises(PasswordRequiredError, match="password is needed"):
        profile_source(DOCS / "2206.01062_pg3.pdf")


def test_a_wrong_password_is_named_as_wrong():
    with pytest.raises(WrongPasswordError, match="password is wrong"):
        profile_source(DOCS / "2206.01062_pg3.pdf", password="nope")


def test_the_right_password_opens_the_pdf(tmp_path):
    ctx = parse(DOCS / "2206.01062_pg3.pdf", tmp_path, password="1234")
    assert ("4 ANNOTATION CAMPAIGN", 1, [1]) in [(t, 1, p) for t, _, p in headings(ctx)]
    assert all(r.page_numbers == [1] for r in ctx.rows)


def test_the_parser_refuses_a_locked_pdf_without_password(tmp_path):
    path = DOCS / "2206.01062_pg3.pdf"
    ctx = ParseContext(
        source_path=path,
        source_file_name=path.name,
        profile=bare_profile(path, FileFormat.PDF, "pdf"),
        workdir=tmp_path,
    )
    with pytest.raises(PasswordRequiredError):
        parse_pdf(ctx)


def test_the_password_never_reaches_artifacts_or_diagnostics(settings, tmp_path):
    from corpus_pipeline.orchestration.ingest import ingest

    secret = "Xq7-unlock-Zz9"
    source: Any = mu.open()
    source.new_page().insert_text((72, 100), "Confidential minutes of the meeting.", fontsize=11)
    path = tmp_path / "locked.pdf"
    source.save(path, encryption=mu.PDF_ENCRYPT_AES_256, user_pw=secret, owner_pw="owner")
    refused = ingest([path], settings)
    assert refused[0].status == "failed" and "password is needed" in (refused[0].error or "")
    results = ingest([path], settings, password=secret)
    assert results[0].status == "ok", results[0].error
    for file in settings.home.rglob("*"):
        if file.is_file():
            assert secret.encode() not in file.read_bytes(), file


def test_a_truncated_pdf_is_refused(tmp_path):
    data = (DOCS / "multi_page.pdf").read_bytes()
    path = tmp_path / "cut.pdf"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptDocumentError, match="truncated"):
        profile_source(path)


def test_a_pdf_without_pages_is_refused(tmp_path):
    head = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    pages = b"2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n"
    body_ = head + pages
    xref = (
        b"xref\n0 3\n0000000000 65535 f \n"
        + b"%010d 00000 n \n" % 9
        + b"%010d 00000 n \n" % len(head)
    )
    trailer = b"trailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % len(body_)
    path = tmp_path / "empty.pdf"
    path.write_bytes(body_ + xref + trailer)
    with pytest.raises(CorruptDocumentError, match="no pages"):
        profile_source(path)


def test_the_parse_budget_cuts_with_a_diagnostic(tmp_path):
    path = make_pdf(tmp_path / "long.pdf", [body(2) for _ in range(8)])
    ctx = parse(path, tmp_path, settings=CorpusSettings(parse_max_pages=3))
    assert max(p for r in ctx.rows for p in r.page_numbers) == 3
    cut = [d for d in ctx.diagnostics.items if d.code == "parse.budget_exceeded"]
    assert cut and "3 of 8 pages" in cut[0].message


def test_split_ranges_cover_every_page_in_order(tmp_path):
    path = make_pdf(
        tmp_path / "split.pdf", [[(f"Marker page {n}", 10, "helv")] for n in range(1, 11)]
    )
    profile = profile_source(path, split_pages=3).profile
    assert profile.pdf is not None and profile.pdf.split_plan == [(1, 3), (4, 6), (7, 9), (10, 10)]
    ctx = ParseContext(
        source_path=path, source_file_name=path.name, profile=profile, workdir=tmp_path
    )
    parse_pdf(ctx)
    assert [r.page_numbers for r in ctx.rows] == [[n] for n in range(1, 11)]


def test_every_row_of_a_real_pdf_has_pages(tmp_path):
    ctx = parse(DOCS / "redp5110_sampled.pdf", tmp_path)
    assert ctx.rows and all(r.page_numbers for r in ctx.rows)
    assert all(1 <= p <= 18 for r in ctx.rows for p in r.page_numbers)


def test_slides_get_one_section_per_page(tmp_path):
    path = make_pdf(
        tmp_path / "deck.pdf",
        [
            [("Quarterly results", 36, "hebo"), ("Revenue grew in all regions", 20, "helv")],
            [("Next steps", 36, "hebo"), ("Hire two engineers", 20, "helv")],
            [("Questions", 36, "hebo")],
        ],
        size=(960, 540),
    )
    ctx = parse(path, tmp_path)
    assert headings(ctx) == [
        ("Quarterly results", 1, [1]),
        ("Next steps", 1, [2]),
        ("Questions", 1, [3]),
    ]


def test_bullets_become_list_items_and_hyphens_are_joined(tmp_path):
    path = tmp_path / "list.pdf"
    doc: Any = mu.open()
    page = doc.new_page()
    page.insert_text((72, 100), "The inspection covers the hydrau-", fontsize=10)
    page.insert_text((72, 112), "lic system and more.", fontsize=10)
    page.insert_text((72, 150), "• first item", fontsize=10)
    page.insert_text((72, 162), "• second item", fontsize=10)
    doc.save(path)
    rows = parse(path, tmp_path).rows
    assert any("hydraulic system" in r.text for r in rows)
    items = [r.text for r in rows if r.row_type is RowType.LIST_ITEM]
    assert items == ["first item", "second item"]


def test_without_tesseract_a_scan_says_so(tmp_path, monkeypatch):
    import corpus_pipeline.parsing.pdf.document as pdf_module

    monkeypatch.setattr(pdf_module, "tesseract_version", lambda: None)
    src: Any = mu.open()
    src.new_page().insert_text((72, 100), "scanned words", fontsize=30)
    png = src[0].get_pixmap(dpi=72).tobytes("png")
    doc: Any = mu.open()
    doc.new_page().insert_image(doc[0].rect, stream=png)
    path = tmp_path / "scan.pdf"
    doc.save(path)
    ctx = parse(path, tmp_path)
    codes = [d.code for d in ctx.diagnostics.items]
    assert codes.count("ocr.unavailable") == 1


def _map_sheets(path: Path) -> Path:
    """Two landscape map sheets: hundreds of drawn strokes, a few place labels, a caption;
    the first sheet has a large title, the second none."""
    doc: Any = mu.open()
    captions = [
        "Figure 1: harbour district survey sheet, scale 1:5000.",
        "Figure 2: rail yards north of the old mill, scale 1:2500.",
    ]
    for n, caption in enumerate(captions):
        page = doc.new_page(width=842, height=595)
        if n == 0:
            page.insert_text((60, 60), "Sheet 12 Harbour district", fontsize=22)
        for i in range(180):
            x, y = 60 + (i * 37) % 700, 100 + (i * 53) % 420
            for end in ((x + 30, y + 12), (x + 12, y + 30)):
                shape = page.new_shape()
                shape.draw_line((x, y), end)
                shape.finish(color=(0, 0, 0), width=0.5)
                shape.commit()
        for j, label in enumerate(["Harbour", "Station", "Old mill", "Lighthouse"]):
            page.insert_text((100 + 120 * j, 200 + 40 * j), label, fontsize=8)
        page.insert_text((60, 560), caption, fontsize=9)
    doc.save(path)
    doc.close()
    return path


def test_map_sheets_route_to_atlas_with_page_sections_labels_and_captions(tmp_path):
    from corpus_pipeline.structure.hierarchy import assign_hierarchy

    path = _map_sheets(tmp_path / "atlas.pdf")
    profile = profile_source(path).profile
    assert profile.pdf is not None
    assert (profile.pdf.category, profile.pdf.classification) == ("atlas", "map or drawing set")
    rows = assign_hierarchy(parse(path, tmp_path).rows)
    assert headings_of(rows) == [("Sheet 12 Harbour district", 1, [1]), ("Page 2", 1, [2])]
    by_section: dict[str, list[str]] = {}
    for row in rows:
        if row.row_type is not RowType.HEADING:
            by_section.setdefault(row.hierarchy_path[0], []).append(row.text)
    assert by_section["Sheet 12 Harbour district"] == [
        "Harbour",
        "Station",
        "Old mill",
        "Lighthouse",
        "Figure 1: harbour district survey sheet, scale 1:5000.",
    ]
    assert "Figure 2: rail yards north of the old mill, scale 1:2500." in by_section["Page 2"]
    assert "Lighthouse" in by_section["Page 2"]


def test_a_table_on_a_rotated_page_keeps_its_rows(tmp_path):
    from corpus_pipeline_tests.test_pdf_tables import ROWS, _draw_table

    doc: Any = mu.open()
    page = doc.new_page()
    page.insert_text((72, 80), "Prices of the week are listed below.", fontsize=10)
    _draw_table(page, 100, ROWS)
    page.insert_text((72, 200), "All prices include tax.", fontsize=10)
    page.set_rotation(90)
    path = tmp_path / "rotated.pdf"
    doc.save(path)
    rows = parse(path, tmp_path).rows
    (table,) = [r for r in rows if r.row_type is RowType.TABLE]
    assert table.text.splitlines() == [" | ".join(r) for r in ROWS]
    text = " ".join(r.text for r in rows if r.row_type is RowType.PARAGRAPH)
    assert "Prices of the week" in text and "include tax" in text
    assert "Apple" not in text, "cell text is not repeated as body text"


def test_a_web_address_set_large_is_not_a_heading(tmp_path):
    path = make_pdf(
        tmp_path / "cover.pdf",
        [[("Engine maintenance", 16, "helv"), *body(), ("ibm.com/redbooks", 16, "helv"), *body()]],
    )
    assert [h[0] for h in headings(parse(path, tmp_path))] == ["Engine maintenance"]
