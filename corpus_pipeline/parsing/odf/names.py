"""OpenDocument XML names: the namespaces ODT and ODP share, as `{uri}local` tags."""

from __future__ import annotations

OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
PRESENTATION = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"
SVG = "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
META = "urn:oasis:names:tc:opendocument:xmlns:meta:1.0"
XLINK = "http://www.w3.org/1999/xlink"
DC = "http://purl.org/dc/elements/1.1/"


def office(name: str) -> str:
    return f"{{{OFFICE}}}{name}"


def text(name: str) -> str:
    return f"{{{TEXT}}}{name}"


def table(name: str) -> str:
    return f"{{{TABLE}}}{name}"


def draw(name: str) -> str:
    return f"{{{DRAW}}}{name}"


def style(name: str) -> str:
    return f"{{{STYLE}}}{name}"


def presentation(name: str) -> str:
    return f"{{{PRESENTATION}}}{name}"


def svg(name: str) -> str:
    return f"{{{SVG}}}{name}"


def int_attr(value: str | None, default: int = 1, most: int = 1000) -> int:
    """A count attribute (spans, repeats, levels) clamped to 1 … `most`; `default` when absent
    or malformed."""
    try:
        number = int((value or "").strip())
    except ValueError:
        return default
    return max(1, min(number, most))
