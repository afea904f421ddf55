"""PDF strategy (`parse_pdf`): text layer (or OCR) → headings, paragraphs, list items, tables and
images. The page walk is `document`; one page's rows `rows`; headings `heading_finder` (over the
rules of `headings`); tables `tables` (found by `table_finder`, tested for by `table_evidence`,
joined across pages by `table_joining`); images `images`; OCR `ocr`; the profile `profile`, whose
page reads the parse takes over (`reads`).
"""

from corpus_pipeline.parsing.pdf.document import parse_pdf

__all__ = ["parse_pdf"]
