"""OpenDocument XML names: the namespaces ODT and ODP share; `text("p")` is the `{uri}p` tag."""

from __future__ import annotations

from corpus_pipeline.common.xmlnames import Namespace

office = Namespace("urn:oasis:names:tc:opendocument:xmlns:office:1.0")
text = Namespace("urn:oasis:names:tc:opendocument:xmlns:text:1.0")
table = Namespace("urn:oasis:names:tc:opendocument:xmlns:table:1.0")
draw = Namespace("urn:oasis:names:tc:opendocument:xmlns:drawing:1.0")
style = Namespace("urn:oasis:names:tc:opendocument:xmlns:style:1.0")
presentation = Namespace("urn:oasis:names:tc:opendocument:xmlns:presentation:1.0")
svg = Namespace("urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0")
meta = Namespace("urn:oasis:names:tc:opendocument:xmlns:meta:1.0")
xlink = Namespace("http://www.w3.org/1999/xlink")
dc = Namespace("http://purl.org/dc/elements/1.1/")


def int_attr(value: str | None, default: int = 1, most: int = 1000) -> int:
    """A count attribute (spans, repeats, levels) clamped to 1 … `most`; `default` when absent
    or malformed."""
    try:
        number = int((value or "").strip())
    except ValueError:
        return default
    return max(1, min(number, most))
