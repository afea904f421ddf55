"""RTF and EPUB: RTF paragraphs, headings from its styles, list items, merged table cells,
footnotes, info-group metadata and non-ASCII text in its code pages; EPUB chapters in spine
order, titled from the navigation document when they have no heading, through the HTML parser
(tables, pictures from the zip), with its metadata; both sniffed, profiled and routed, and
broken packages refused at the door. Files are written in the tests."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import date
from pathlib import Path

import pytest
from PIL import Image

from corpus_pipeline.common.errors import CorruptDocumentError
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.intake.door import Refused, admit
from corpus_pipeline.parsing import zipped
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.epub import parse_epub
from corpus_pipeline.parsing.rtf import parse_rtf
from corpus_pipeline.profiling import profile_source
from corpus_pipeline_tests.support import build_documents, run_parser, tables_of

LIMIT = 10_000_000

# -- RTF -----------------------------------------------------------------------------------------

LETTER = rb"""{\rtf1\ansi\ansicpg1252\deff0
{\fonttbl{\f0\froman\fcharset0 Times New Roman;}{\f1\fswiss\fcharset204 Arial Cyr;}}
{\stylesheet{\s0 Normal;}{\s1\outlinelevel0 heading 1;}{\s2 heading 2;}{\*\cs10 Default Font;}}
{\info{\title Caf\'e9 Quarterly}{\author Zo\'eb}{\creatim\yr2023\mo4\dy5\hr10\min3}}
\pard\s1 Introduction\par
\pard\plain Caf\'e9 cr\'e8me costs \'80 5, \u252?ber alles{\super\chftn}
{\footnote\pard\plain{\super\chftn} Prices include VAT.}.\par
{\f1 \'cf\'f0\'e8\'e2\'e5\'f2}\par
\pard\s2 Details\par
\pard{\listtext\'b7\tab}\ls1 First item\par
{\listtext\'b7\tab}Second item\par
\pard
\trowd\trhdr\clmgf\cellx2000\clmrg\cellx4000\cellx6000
\pard\intbl Region\cell\cell Total\cell\row
\trowd\clvmgf\cellx2000\cellx4000\cellx6000
\pard\intbl North\cell Q1\cell 10\cell\row
\trowd\clvmrg\cellx2000\cellx4000\cellx6000
\pard\intbl\cell Q2\cell 12\cell\row
\pard After the table.\par
}"""


@pytest.fixture
def letter(tmp_path: Path) -> ParseContext:
    path = tmp_path / "letter.rtf"
    path.write_bytes(LETTER)
    return run_parser(parse_rtf, path, tmp_path / "work", FileFormat.RTF)


def _rows(ctx: ParseContext, *types: RowType) -> list[str]:
    return [r.text for r in ctx.rows if r.row_type in types]


def test_rtf_text_in_its_code_pages_keeps_accents_umlauts_and_the_euro(letter) -> None:
    paragraphs = _rows(letter, RowType.PARAGRAPH)
    assert "Café crème costs € 5, über alles[1]." in paragraphs
    assert "Привет" in paragraphs  # \'xx bytes in the font's charset (Cyrillic, cp1251)


def test_rtf_headings_come_from_outline_levels_and_heading_styles(letter) -> None:
    headings = [(r.text, r.heading_level) for r in letter.rows if r.row_type is RowType.HEADING]
    assert headings == [("Introduction", 1), ("Details", 2)]


def test_rtf_list_paragraphs_are_list_items(letter) -> None:
    assert _rows(letter, RowType.LIST_ITEM) == ["First item", "Second item"]


def test_rtf_merged_cells_become_spans(letter) -> None:
    (table,) = tables_of(letter)
    assert table["html"].strip() == (
        '<table><thead><tr><th colspan="2">Region</th><th>Total</th></tr></thead><tbody>'
        '<tr><td rowspan="2">North</td><td>Q1</td><td>10</td></tr>'
        "<tr><td>Q2</td><td>12</td></tr></tbody></table>"
    )
    assert _rows(letter, RowType.PARAGRAPH)[-1] == "After the table."


def test_rtf_a_cell_whose_edge_skips_a_column_spans_it(tmp_path: Path) -> None:
    path = tmp_path / "wide.rtf"
    path.write_bytes(
        rb"{\rtf1\ansi\trowd\cellx2000\cellx4000\cellx6000\pard\intbl A\cell B\cell C\cell\row"
        rb"\trowd\cellx2000\cellx6000\pard\intbl D\cell Wide\cell\row\pard After\par}"
    )
    (table,) = tables_of(run_parser(parse_rtf, path, tmp_path / "work", FileFormat.RTF))
    assert '<tr><td>D</td><td colspan="2">Wide</td></tr>' in table["html"]


def test_rtf_footnote_follows_its_paragraph(letter) -> None:
    paragraphs = _rows(letter, RowType.PARAGRAPH)
    cited = paragraphs.index("Café crème costs € 5, über alles[1].")
    assert paragraphs[cited + 1] == "Footnote 1: Prices include VAT."


def test_rtf_info_group_declares_title_and_creation_date(letter) -> None:
    assert letter.declared_title == "Café Quarterly"
    assert letter.declared_date == date(2023, 4, 5)


def test_unicode_escapes_skip_their_fallback_characters(tmp_path: Path) -> None:
    path = tmp_path / "u.rtf"
    path.write_bytes(rb"{\rtf1\ansi\uc2 na\u239\'3f\'3fve \uc1\u8364? \u-10179\u-8704? ok\par}")
    ctx = run_parser(parse_rtf, path, tmp_path / "work", FileFormat.RTF)
    assert _rows(ctx, RowType.PARAGRAPH) == ["naïve € \U0001f600 ok"]


def test_an_rtf_is_sniffed_profiled_and_routed(tmp_path: Path) -> None:
    path = tmp_path / "letter.txt"  # the bytes decide, not the name
    path.write_bytes(LETTER)
    profile = profile_source(path).profile
    assert (profile.format, profile.media_type, profile.routing.strategy) == (
        FileFormat.RTF,
        "application/rtf",
        "rtf",
    )
    assert (profile.heading_count, profile.table_count) == (2, 1)


# -- EPUB ----------------------------------------------------------------------------------------

CONTAINER = (
    '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">'
    '<rootfiles><rootfile full-path="OEBPS/content.opf" '
    'media-type="application/oebps-package+xml"/></rootfiles></container>'
)
OPF = """<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">x</dc:identifier>
<dc:title>Field Manual</dc:title><dc:creator>Ada Writer</dc:creator><dc:date>2021-06</dc:date>
</metadata>
<manifest>
<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
<item id="c2" href="text/two.xhtml" media-type="application/xhtml+xml"/>
<item id="c1" href="text/one.xhtml" media-type="application/xhtml+xml"/>
<item id="pic" href="images/map.png" media-type="image/png"/>
</manifest>
<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>"""
NAV = """<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
<body><nav epub:type="toc"><ol>
<li><a href="text/one.xhtml">Getting Started</a>
  <ol><li><a href="text/one.xhtml#tools">Tools</a></li></ol></li>
<li><a href="text/two.xhtml">Field Work</a></li>
</ol></nav></body></html>"""
XHTML = '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
ONE = f"""{XHTML}<head><title>one</title></head><body>
<p>Pack a caf&eacute; stove.<a id="p1"/> Check the map.</p>
<img src="../images/map.png" alt="Trail map"/>
<img src="../../../etc/passwd" alt="outside"/>
</body></html>"""
TWO = f"""{XHTML}<head><title>two</title></head><body>
<h1>Field Work</h1><h2>Sampling</h2>
<table><tr><th colspan="2">Site</th></tr><tr><td>A</td><td>12</td></tr></table>
</body></html>"""


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (30, 20), (20, 120, 40)).save(out, "PNG")
    return out.getvalue()


def _epub(members: dict[str, bytes | str] | None = None, mimetype: bool = True) -> bytes:
    files: dict[str, bytes | str] = {
        "META-INF/container.xml": CONTAINER,
        "OEBPS/content.opf": OPF,
        "OEBPS/nav.xhtml": NAV,
        "OEBPS/text/one.xhtml": ONE,
        "OEBPS/text/two.xhtml": TWO,
        "OEBPS/images/map.png": _png(),
        **(members or {}),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        if mimetype:
            zf.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def _parse_epub(tmp_path: Path, data: bytes) -> ParseContext:
    path = tmp_path / "book.epub"
    path.write_bytes(data)
    return run_parser(parse_epub, path, tmp_path / "work", FileFormat.EPUB)


@pytest.fixture
def book(tmp_path: Path) -> ParseContext:
    return _parse_epub(tmp_path, _epub())


def test_epub_chapters_follow_the_spine_and_untitled_ones_take_the_nav_title(book) -> None:
    headings = [(r.text, r.heading_level) for r in book.rows if r.row_type is RowType.HEADING]
    assert headings == [("Getting Started", 1), ("Field Work", 1), ("Sampling", 2)]


def test_epub_xhtml_is_read_as_xml_with_html_entities(book) -> None:
    assert "Pack a café stove. Check the map." in _rows(book, RowType.PARAGRAPH)


def test_epub_tables_keep_their_spans(book) -> None:
    (table,) = tables_of(book)
    assert '<th colspan="2">Site</th>' in table["html"]


def test_epub_pictures_are_read_from_the_zip_and_never_outside_it(book) -> None:
    (image,) = [r for r in book.rows if r.row_type is RowType.IMAGE]
    assert image.text == "Trail map" and image.source_location == "OEBPS/text/one.xhtml"
    assert (book.workdir / str(image.resource_path)).is_file()
    assert "outside" in _rows(book, RowType.PARAGRAPH)  # its alt text only
    assert any(d.code == "image.unavailable" for d in book.diagnostics.items)


def test_epub_metadata_declares_title_and_date(book) -> None:
    assert book.declared_title == "Field Manual"
    assert book.declared_date == date(2021, 6, 1)


def test_an_epub2_ncx_titles_the_chapters(tmp_path: Path) -> None:
    ncx = """<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>
    <navPoint id="a"><navLabel><text>Before You Go</text></navLabel>
    <content src="text/one.xhtml"/></navPoint></navMap></ncx>"""
    opf = (
        OPF.replace('version="3.0"', 'version="2.0"')
        .replace(' properties="nav"', "")
        .replace(
            '<item id="pic"',
            '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/><item id="pic"',
        )
        .replace("<spine>", '<spine toc="ncx">')
    )
    ctx = _parse_epub(tmp_path, _epub({"OEBPS/content.opf": opf, "OEBPS/toc.ncx": ncx}))
    assert _rows(ctx, RowType.HEADING)[0] == "Before You Go"


def test_an_oversized_chapter_is_skipped_not_read_whole(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(zipped, "MAX_MEMBER_BYTES", 50_000)
    bomb = f"{XHTML}<body><p>{'a' * 200_000}</p></body></html>"  # compresses to a few KiB
    ctx = _parse_epub(tmp_path, _epub({"OEBPS/text/one.xhtml": bomb}))
    assert _rows(ctx, RowType.HEADING) == ["Field Work", "Sampling"]
    assert [d.code for d in ctx.diagnostics.items if d.lost == "chapter"] == ["chapter.failed"]


def test_an_epub_without_its_package_document_is_corrupt(tmp_path: Path) -> None:
    broken = _epub({"META-INF/container.xml": CONTAINER.replace("content.opf", "gone.opf")})
    with pytest.raises(CorruptDocumentError, match="corrupt epub document: the container names"):
        _parse_epub(tmp_path, broken)


def test_an_epub_is_sniffed_profiled_and_routed(tmp_path: Path) -> None:
    path = tmp_path / "book.epub"
    path.write_bytes(_epub())
    profile = profile_source(path).profile
    assert (profile.format, profile.media_type, profile.routing.strategy) == (
        FileFormat.EPUB,
        "application/epub+zip",
        "epub",
    )
    assert (profile.heading_count, profile.table_count, profile.has_embedded_toc) == (2, 1, True)


def test_a_truncated_epub_is_refused_at_the_door() -> None:
    with pytest.raises(Refused) as refused:
        admit("book.epub", _epub()[:500], max_bytes=LIMIT)
    assert str(refused.value) == "corrupt epub document: truncated or damaged (BadZipFile)"


def test_an_epub_without_a_container_is_refused_at_the_door() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("mimetype", "application/epub+zip")
        zf.writestr("OEBPS/text/one.xhtml", ONE)
    with pytest.raises(Refused, match="corrupt epub document: the package has no META-INF"):
        admit("book.epub", out.getvalue(), max_bytes=LIMIT)


@pytest.mark.slow
def test_ingested_epub_and_rtf_are_chunked_under_their_headings(settings) -> None:
    records = build_documents(settings, {"book.epub": _epub(), "letter.rtf": LETTER})

    def paths(name: str) -> set[tuple[str, ...]]:
        directory = settings.artifacts_dir / records[name].document_id
        chunks = json.loads((directory / "chunks.json").read_text(encoding="utf-8"))["chunks"]
        return {tuple(c["hierarchy_path"]) for c in chunks}

    assert {("Getting Started",), ("Field Work", "Sampling")} <= paths("book.epub")
    assert {("Introduction",), ("Introduction", "Details")} <= paths("letter.rtf")
