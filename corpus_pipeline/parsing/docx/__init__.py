"""DOCX strategy: walks `word/document.xml` at the XML level so nothing is lost.

python-docx's high-level API skips content controls (`w:sdt`), tracked insertions and
`customXml`/`smartTag` wrappers, and does not expose merged-cell geometry or automatic
numbering; all of those matter for a faithful reading order, heading text and table spans, so
this package reads the body element tree directly and uses python-docx only to open the package
and resolve relationships (images, hyperlink targets, styles, numbering).

Modules: `document` (entry point, body walk), `reader` (package, paragraphs), `inline`
(paragraph content, text normalisation), `styles`, `numbering`, `tables`, `package` (opening
and repairing the package), `ooxml` (names and attribute readers).
"""

from corpus_pipeline.parsing.docx.document import parse_docx

__all__ = ["parse_docx"]
