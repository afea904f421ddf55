"""Profile facts of OpenDocument text and presentations, EPUB and RTF: counts read from the
package XML or the RTF control words, and a language sample, never a full parse (the same
shallow evidence `profile.py` gathers for DOCX and PPTX). A package that cannot be read gives
no facts: the parser names the problem.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

from lxml import etree

from corpus_pipeline.common.errors import ZIP_DAMAGE, CorruptDocumentError
from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.parsing.epub_package import read_publication
from corpus_pipeline.parsing.odf.names import draw, table, text
from corpus_pipeline.parsing.rtf_reader import Paragraph, Table, read_rtf
from corpus_pipeline.parsing.zipped import MemberTooLarge, ZipPackage

LANG_SAMPLE = 8000
_RTF_SAMPLE_BYTES = 256 * 1024
_EPUB_SAMPLE_FILES = 40
_TAGS = {
    "paragraph_count": re.compile(rb"<(?:\w+:)?p[\s/>]"),
    "heading_count": re.compile(rb"<(?:\w+:)?h[1-6][\s/>]"),
    "table_count": re.compile(rb"<(?:\w+:)?table[\s/>]"),
    "image_count": re.compile(rb"<(?:\w+:)?img[\s/>]"),
}
_MARKUP = re.compile(r"<[^>]*>")
_PACKAGE_ERRORS = (
    *ZIP_DAMAGE,
    KeyError,
    MemberTooLarge,
    etree.XMLSyntaxError,
    CorruptDocumentError,
)


def odf_facts(path: Path, fmt: FileFormat) -> dict[str, object]:
    """Paragraphs, headings, tables, pictures and indexes of content.xml (slides as pages for a
    presentation), streamed: a big document is counted without being held."""
    counts: Counter[str] = Counter()
    texts: list[str] = []
    size = 0
    wanted = {
        text("p"): "p", text("h"): "h", table("table"): "table", draw("image"): "image",
        text("table-of-content"): "toc", draw("page"): "page",
    }  # fmt: skip
    try:
        with ZipPackage(path, fmt.value) as package:
            data = package.read("content.xml")
        events = etree.iterparse(
            io.BytesIO(data),
            events=("end",),
            tag=list(wanted),
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
        )
        for _, el in events:
            kind = wanted[str(el.tag)]
            counts[kind] += 1
            if kind in ("p", "h") and size < LANG_SAMPLE:
                line = " ".join("".join(el.itertext()).split())
                texts.append(line)
                size += len(line)
    except _PACKAGE_ERRORS:
        return {}
    facts: dict[str, object] = {
        "paragraph_count": counts["p"],
        "heading_count": counts["h"],
        "table_count": counts["table"],
        "image_count": counts["image"],
        "has_embedded_toc": counts["toc"] > 0,
        "text_sample": " ".join(texts),
    }
    if fmt is FileFormat.ODP:
        facts["page_count"] = counts["page"]
    return facts


def epub_facts(path: Path) -> dict[str, object]:
    """Counts over the first spine documents' markup, whether a navigation document exists, and
    a language sample of their text."""
    counts: Counter[str] = Counter()
    sample: list[str] = []
    size = 0
    try:
        with ZipPackage(path, "epub") as package:
            pub = read_publication(package)
            for member in pub.spine[:_EPUB_SAMPLE_FILES]:
                data = package.read(member)
                for name, pattern in _TAGS.items():
                    counts[name] += len(pattern.findall(data))
                if size < LANG_SAMPLE:
                    body = data.decode("utf-8", errors="replace").partition("<body")[2]
                    words = " ".join(_MARKUP.sub(" ", body).split())
                    sample.append(words)
                    size += len(words)
    except _PACKAGE_ERRORS:
        return {}
    return {
        **{name: counts[name] for name in _TAGS},
        "has_embedded_toc": pub.nav is not None or pub.ncx is not None,
        "text_sample": " ".join(sample),
    }


def rtf_facts(data: bytes) -> dict[str, object]:
    """Paragraphs, headings-by-style and tables of the file's first part, and its text."""
    doc = read_rtf(data[:_RTF_SAMPLE_BYTES])
    paragraphs = [b for b in doc.blocks if isinstance(b, Paragraph)]
    headings = sum(
        1
        for p in paragraphs
        if p.outline is not None
        or (p.style in doc.styles and re.match(r"heading|title", doc.styles[p.style].name))
    )
    return {
        "paragraph_count": len(paragraphs),
        "heading_count": headings,
        "table_count": sum(1 for b in doc.blocks if isinstance(b, Table)),
        "image_count": sum(len(p.images) for p in paragraphs),
        "text_sample": " ".join(p.text for p in paragraphs)[:LANG_SAMPLE],
    }
