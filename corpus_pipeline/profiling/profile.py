"""The document profile: cheap structural evidence gathered once, before parsing.

Every later stage reads the profile; nothing re-profiles. Evidence here is deliberately
shallow (counts from the container's XML or the markup), never a full parse.
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from lxml import etree
from lxml import html as lxml_html

from corpus_pipeline.common.errors import ZIP_DAMAGE
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import DocumentProfile, FileFormat
from corpus_pipeline.parsing.router import route
from corpus_pipeline.parsing.zipped import MAX_MEMBER_BYTES, BoundedStream, MemberTooLarge
from corpus_pipeline.profiling.sniff import decode_text, sniff_format

if TYPE_CHECKING:
    from corpus_pipeline.parsing.pdf.reads import PageReads

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_LANG_SAMPLE = 8000
_MD_HEADING = re.compile(r"^#{1,6}[ \t]++\S", re.M)
# A table's delimiter row. Blanks are matched possessively (`*+`) and within the line: with
# backtracking, a line of thousands of spaces (a list nested 3,000 deep) took minutes.
_MD_TABLE = re.compile(
    r"^[ \t]*+\|?[ \t]*+:?-{3,}:?[ \t]*+(?:\|[ \t]*+:?-{3,}:?[ \t]*+)++\|?[ \t]*+$", re.M
)
# What reading a damaged package's members raises besides BadZipFile: a missing member
# (KeyError), bad offsets or names (ValueError, UnicodeDecodeError), an unknown compression
# (NotImplementedError), an encrypted member (RuntimeError), a broken deflate stream (zlib.error,
# EOFError). The profile then has no counts; the parser names the damage.
_PACKAGE_ERRORS = (*ZIP_DAMAGE, KeyError)


def guess_language(text: str) -> str | None:
    """ISO 639-1 guess (py3langid, offline); None when there is too little text to tell."""
    sample = " ".join(text[:_LANG_SAMPLE].split())
    if len(sample) < 40:
        return None
    import py3langid

    lang, _ = py3langid.classify(sample)
    return str(lang)


@dataclass(frozen=True)
class Profiled:
    """A file as profiling leaves it for its parse: where it is, the name it was delivered
    under, its profile, what profiling read that the parse would read again (a PDF's sampled
    pages, `ParseContext.prior_reads`) and the password it was given (memory only, never in
    the repr). The pipeline's parse stages and the parse worker take this one object."""

    source_path: Path
    source_file_name: str
    profile: DocumentProfile
    reads: PageReads | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)


def profile_source(
    path: Path,
    source_file_name: str | None = None,
    *,
    password: str | None = None,
    split_pages: int | None = None,
    settings: CorpusSettings | None = None,
) -> Profiled:
    """Sniff, count and route one file (`.profile`), ready for its parse. `password` only opens
    an encrypted PDF; it is never stored, only carried on to the parse in memory."""
    data = path.read_bytes()
    name = source_file_name or path.name
    extension = Path(name).suffix.lower().lstrip(".")
    sniffed = sniff_format(data, extension)
    facts: dict[str, object] = {}
    if sniffed.format is FileFormat.DOCX:
        facts = _docx_facts(data)
    elif sniffed.format is FileFormat.HTML:
        facts = _html_facts(data)
    elif sniffed.format in (FileFormat.MARKDOWN, FileFormat.TEXT):
        facts = _text_facts(decode_text(data) or "", sniffed.format)
    elif sniffed.format is FileFormat.PDF:
        facts = _pdf_facts(path, password, split_pages, settings)
    elif sniffed.format is FileFormat.XLSX:
        facts = _xlsx_facts(data)
    elif sniffed.format is FileFormat.PPTX:
        facts = _pptx_facts(data)
    elif sniffed.format is FileFormat.IMAGE:
        facts = _image_facts(data)
    elif sniffed.format in (FileFormat.EML, FileFormat.MSG):
        from corpus_pipeline.parsing.email import mail_facts

        facts = mail_facts(data, outlook=sniffed.format is FileFormat.MSG)
    elif sniffed.format is FileFormat.CSV:
        from corpus_pipeline.parsing.csv_table import delimited_facts

        facts = delimited_facts(decode_text(data) or "")
    elif sniffed.format in (FileFormat.DOC, FileFormat.PPT, FileFormat.XLS):
        facts = _legacy_facts(data, sniffed.format)
    elif sniffed.format in (FileFormat.ODT, FileFormat.ODP, FileFormat.EPUB, FileFormat.RTF):
        facts = _open_format_facts(path, data, sniffed.format)
    text_sample = str(facts.pop("text_sample", ""))
    page_reads = cast("PageReads | None", facts.pop("page_reads", None))
    base = DocumentProfile(
        format=sniffed.format,
        media_type=sniffed.media_type,
        extension=extension,
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        language=guess_language(text_sample) if text_sample else None,
        routing={"strategy": "pending", "reason": sniffed.evidence},  # type: ignore[arg-type]
        **facts,  # type: ignore[arg-type]
    )
    profile = base.model_copy(update={"routing": route(base, sniffed.evidence)})
    return Profiled(path, name, profile, page_reads, password)


def _docx_facts(data: bytes) -> dict[str, object]:
    """Paragraphs, headings, tables and a language sample, counted while document.xml streams
    out of the package (each paragraph dropped once counted, the bytes counted: a zip bomb stops
    at MAX_MEMBER_BYTES with the counts so far, in bounded memory)."""
    paragraphs = headings = tables = 0
    has_toc = False
    texts: list[str] = []
    sample_len = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            media = [n for n in zf.namelist() if n.startswith("word/media/")]
            with zf.open("word/document.xml") as raw:
                stream = BoundedStream(raw, MAX_MEMBER_BYTES)
                for _, el in etree.iterparse(stream, events=("end",), huge_tree=True):
                    tag = el.tag
                    if tag == f"{_W}p":
                        paragraphs += 1
                        style = el.find(f"{_W}pPr/{_W}pStyle")
                        val = (style.get(f"{_W}val") or "") if style is not None else ""
                        if (
                            val.lower().startswith(("heading", "title"))
                            or el.find(f"{_W}pPr/{_W}outlineLvl") is not None
                        ):
                            headings += 1
                        if sample_len < _LANG_SAMPLE:
                            text = "".join(t.text or "" for t in el.iter(f"{_W}t"))
                            texts.append(text)
                            sample_len += len(text)
                        _drop(el)
                    elif tag == f"{_W}tbl":
                        tables += 1
                        _drop(el)
                    elif (
                        tag == f"{_W}docPartGallery"
                        and "Table of Contents" in (el.get(f"{_W}val") or "")
                    ) or (tag == f"{_W}instrText" and (el.text or "").strip().startswith("TOC")):
                        has_toc = True
    except MemberTooLarge:
        pass  # the counts so far: the parse, in its limited worker, judges the rest
    except (*_PACKAGE_ERRORS, etree.XMLSyntaxError):
        return {}
    return {
        "paragraph_count": paragraphs,
        "heading_count": headings,
        "table_count": tables,
        "image_count": len(media),
        "has_embedded_toc": has_toc,
        "char_count": None,
        "text_sample": " ".join(texts),
    }


def _drop(el: etree._Element) -> None:
    """A counted element and its finished siblings before it, freed (iterparse keeps the tree)."""
    el.clear()
    parent = el.getparent()
    while parent is not None and el.getprevious() is not None:
        del parent[0]


_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def _xlsx_facts(data: bytes) -> dict[str, object]:
    """Sheets (`page_count`, hidden ones included: pages are workbook positions), drawings and
    a language sample from the shared strings, read from the package XML only (counted while
    they stream out: a bomb stops at MAX_MEMBER_BYTES)."""
    texts: list[str] = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            with zf.open("xl/workbook.xml") as raw:
                workbook = etree.parse(BoundedStream(raw, MAX_MEMBER_BYTES)).getroot()
            if "xl/sharedStrings.xml" in names:
                texts = _shared_strings_sample(zf)
    except (*_PACKAGE_ERRORS, etree.XMLSyntaxError, MemberTooLarge):
        return {}
    sheets = workbook.findall(f"{_S}sheets/{_S}sheet")
    return {
        "page_count": len(sheets),
        "image_count": sum(1 for n in names if n.startswith("xl/media/")),
        "text_sample": " ".join(texts),
    }


def _shared_strings_sample(zf: zipfile.ZipFile) -> list[str]:
    """The first shared strings, up to a language sample (streamed: the rest is never read)."""
    texts: list[str] = []
    size = 0
    with zf.open("xl/sharedStrings.xml") as raw:
        try:
            stream = BoundedStream(raw, MAX_MEMBER_BYTES)
            for _, el in etree.iterparse(stream, tag=f"{_S}t", huge_tree=True):
                texts.append(el.text or "")
                size += len(el.text or "")
                _drop(el)
                if size >= _LANG_SAMPLE:
                    break
        except (etree.XMLSyntaxError, MemberTooLarge):
            pass
    return texts


_PML = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_DML = "{http://schemas.openxmlformats.org/drawingml/2006/main}"


def _pptx_facts(data: bytes) -> dict[str, object]:
    """Slides (`page_count`), pictures and a language sample from the first slides' text."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            with zf.open("ppt/presentation.xml") as raw:
                presentation = etree.parse(BoundedStream(raw, MAX_MEMBER_BYTES)).getroot()
            slides = sorted(
                (n for n in names if n.startswith("ppt/slides/slide") and n.endswith(".xml")),
                key=lambda n: int("".join(ch for ch in n if ch.isdigit()) or 0),
            )
            texts: list[str] = []
            for name in slides:
                with zf.open(name) as raw:
                    root = etree.parse(BoundedStream(raw, MAX_MEMBER_BYTES)).getroot()
                texts.extend(t.text or "" for t in root.iter(f"{_DML}t"))
                if sum(len(t) for t in texts) >= _LANG_SAMPLE:
                    break
    except (*_PACKAGE_ERRORS, etree.XMLSyntaxError, MemberTooLarge):
        return {}
    return {
        "page_count": len(presentation.findall(f"{_PML}sldIdLst/{_PML}sldId")),
        "image_count": sum(1 for n in names if n.startswith("ppt/media/")),
        "text_sample": " ".join(texts),
    }


def _open_format_facts(path: Path, data: bytes, fmt: FileFormat) -> dict[str, object]:
    """ODT, ODP, EPUB and RTF facts (`profiling.open_formats`)."""
    from corpus_pipeline.profiling.open_formats import epub_facts, odf_facts, rtf_facts

    if fmt is FileFormat.EPUB:
        return epub_facts(path)
    if fmt is FileFormat.RTF:
        return rtf_facts(data)
    return odf_facts(path, fmt)


def _legacy_facts(data: bytes, fmt: FileFormat) -> dict[str, object]:
    """A legacy Word or PowerPoint file is converted by LibreOffice before it is parsed; a
    legacy workbook only when xlrd cannot open it."""
    from corpus_pipeline.parsing.legacy import xlrd_refusal

    return {"needs_conversion": fmt is not FileFormat.XLS or xlrd_refusal(data) is not None}


def _image_facts(data: bytes) -> dict[str, object]:
    """Frames (`page_count`: pages of a TIFF scan, 1 for a picture), read from the header."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            frames = getattr(image, "n_frames", 1)
    except Exception:  # PIL reports a damaged header as many classes (TypeError, SyntaxError, ...)
        return {}  # the parser names the problem
    return {"page_count": frames, "image_count": frames}


def _html_facts(data: bytes) -> dict[str, object]:
    try:
        doc = lxml_html.document_fromstring(data)
    except (etree.ParserError, ValueError):
        return {}
    for bad in doc.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    text = doc.text_content()
    return {
        "paragraph_count": len(doc.xpath("//p")),
        "heading_count": len(doc.xpath("//h1|//h2|//h3|//h4|//h5|//h6")),
        "table_count": len(doc.xpath("//table")),
        "image_count": len(doc.xpath("//img")),
        "has_embedded_toc": bool(
            doc.xpath("//*[@id='toc' or @id='mw-toc-heading' or contains(@class,'toc')]")
        ),
        "char_count": len(text),
        "text_sample": text[:_LANG_SAMPLE],
    }


def _text_facts(text: str, fmt: FileFormat) -> dict[str, object]:
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    markdown = fmt is FileFormat.MARKDOWN
    return {
        "paragraph_count": len(paragraphs),
        "heading_count": len(_MD_HEADING.findall(text)),
        "table_count": len(_MD_TABLE.findall(text)) if markdown else 0,
        "image_count": text.count("![") if markdown else 0,
        "char_count": len(text),
        "text_sample": text[:_LANG_SAMPLE],
    }


def _pdf_facts(
    path: Path, password: str | None, split_pages: int | None, settings: CorpusSettings | None
) -> dict[str, object]:
    from corpus_pipeline.parsing.pdf.profile import llm_classification, open_pdf, profile_pdf
    from corpus_pipeline.parsing.pdf.reads import PageReads, file_key

    every = split_pages or (
        settings.pdf_split_pages
        if settings is not None
        else int(CorpusSettings.model_fields["pdf_split_pages"].default)
    )
    doc = open_pdf(path, password)
    reads = PageReads()
    try:
        pdf, sample = profile_pdf(doc, every, reads)
    finally:
        doc.close()
    reads.source = file_key(path)  # the file they were read from
    label = llm_classification(sample, settings) if settings is not None else None
    if label:
        pdf = pdf.model_copy(update={"classification": label})
    return {
        "page_count": pdf.page_count,
        "heading_count": len(pdf.toc) or None,
        "has_embedded_toc": bool(pdf.toc),
        "char_count": None,
        "pdf": pdf,
        "text_sample": sample[:_LANG_SAMPLE],
        "page_reads": reads,  # handed to the parse beside the profile (`parsing.pdf.reads`)
    }
