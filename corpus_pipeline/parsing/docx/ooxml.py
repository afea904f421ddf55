"""WordprocessingML names and the small readers of its elements and attributes, shared by the
DOCX modules (namespaces, `w:` tags, on/off and integer attributes, wrapper elements).
"""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree

from corpus_pipeline.common.xmlnames import Namespace

W_NS = Namespace("http://schemas.openxmlformats.org/wordprocessingml/2006/main")
R_NS = Namespace("http://schemas.openxmlformats.org/officeDocument/2006/relationships")
WP_NS = Namespace("http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing")
A_NS = Namespace("http://schemas.openxmlformats.org/drawingml/2006/main")
PIC_NS = Namespace("http://schemas.openxmlformats.org/drawingml/2006/picture")
V_NS = Namespace("urn:schemas-microsoft-com:vml")
O_NS = Namespace("urn:schemas-microsoft-com:office:office")
MC_NS = Namespace("http://schemas.openxmlformats.org/markup-compatibility/2006")
M_NS = Namespace("http://schemas.openxmlformats.org/officeDocument/2006/math")

RT_STYLES = "/styles"
RT_NUMBERING = "/numbering"


# `w("p")`: the `{…}p` tag of WordprocessingML, the namespace nearly every name is in.
w = W_NS


def local_name(el: etree._Element) -> str:
    tag = el.tag
    if not isinstance(tag, str):  # comments / processing instructions
        return ""
    return tag.rsplit("}", 1)[-1]


def namespace(el: etree._Element) -> str:
    tag = el.tag
    if not isinstance(tag, str) or not tag.startswith("{"):
        return ""
    return tag[1:].split("}", 1)[0]


def val(el: etree._Element | None, attr: str = "val") -> str | None:
    if el is None:
        return None
    return el.get(w(attr))


def int_value(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def is_on(el: etree._Element | None) -> bool:
    """OOXML boolean property: present and not explicitly false."""
    return el is not None and (val(el) or "true").lower() not in ("0", "false", "off")


# Containers that only wrap block- or run-level content; their children are read in place.
WRAPPERS = frozenset({"customXml", "smartTag", "ins", "moveTo", "sdtContent", "dir", "bdo"})
# Removed content (tracked deletions) that must not be read.
DELETED = frozenset({"del", "moveFrom"})


def children(el: etree._Element, tag: str) -> Iterator[etree._Element]:
    """Direct `w:{tag}` children, looking through wrapper elements (sdt, customXml, ins)."""
    for child in el.iterchildren():
        name = local_name(child)
        if namespace(child) != W_NS or name in DELETED:
            continue
        if name == tag:
            yield child
        elif name in WRAPPERS or name == "sdt":
            inner = child.find(w("sdtContent")) if name == "sdt" else child
            if inner is not None:
                yield from children(inner, tag)
