"""OpenDocument text (ODT) and presentation (ODP) strategies, reading the package XML directly
with lxml (no odfpy): `content.xml` for the body, `styles.xml` for what styles mean (Title,
Caption, hidden slides), `meta.xml` for the declared title and date, `Pictures/` for images.

Modules: `document` (ODT entry point, body walk), `slides` (ODP), `inline` (paragraph content,
notes, comments), `tables` (spans, header rows), `package` (opening, styles, metadata,
pictures), `names` (namespaces). Spreadsheets (ODS) are read with the XLSX strategy.
"""

from corpus_pipeline.parsing.odf.document import parse_odt
from corpus_pipeline.parsing.odf.slides import parse_odp

__all__ = ["parse_odp", "parse_odt"]
