"""Opening a DOCX package: every low-level failure a `CorruptDocumentError`, and a package whose
relationships point at missing parts (a lost image) re-opened without them.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lxml import etree

from corpus_pipeline.common.errors import ZIP_DAMAGE, CorruptDocumentError
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.zipped import check_expansion


def open_package(path: Path, ctx: ParseContext) -> Any:
    """Open the package, turning every low-level failure into a `CorruptDocumentError`.

    python-docx refuses a package in which any relationship points at a missing part (a lost
    image, say); such files are re-opened with those dangling relationships removed, so one
    broken picture does not cost the whole document.
    """
    if not path.is_file():
        raise FileNotFoundError(path)
    if not zipfile.is_zipfile(path):
        raise CorruptDocumentError("docx", "not a zip archive (truncated or not a DOCX file)")
    check_expansion(path, "docx", ctx.memory_limit_mb)
    try:
        return _load(path)
    except KeyError as exc:
        missing = str(exc.args[0]) if exc.args else "a package part"
        try:
            data, dropped = _without_dangling_rels(path)
        except (*ZIP_DAMAGE, etree.XMLSyntaxError) as err:
            raise CorruptDocumentError(
                "docx", f"unreadable archive ({type(err).__name__})"
            ) from err
        if not dropped:
            raise CorruptDocumentError("docx", f"missing package part: {missing}") from exc
        try:
            document = _load(io.BytesIO(data))
        except KeyError as again:
            raise CorruptDocumentError("docx", f"missing package part: {missing}") from again
        ctx.diagnostics.add(
            "parse",
            "docx.missing_parts",
            f"{len(dropped)} part(s) the document refers to (images, mostly) are missing from "
            "the file; their references were dropped",
            lost="package part",
        )
        return document


def _load(source: Path | io.BytesIO) -> Any:
    """python-docx open; every failure but KeyError (missing part) becomes CorruptDocumentError."""
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        return docx.Document(str(source) if isinstance(source, Path) else source)
    except PackageNotFoundError as exc:
        raise CorruptDocumentError("docx", "no Word package in the archive") from exc
    except etree.XMLSyntaxError as exc:
        raise CorruptDocumentError("docx", f"malformed XML: {exc.msg}") from exc
    except ValueError as exc:
        raise CorruptDocumentError(
            "docx", "not a Word document (its main part has another content type)"
        ) from exc
    except ZIP_DAMAGE as exc:
        raise CorruptDocumentError("docx", f"unreadable archive ({type(exc).__name__})") from exc
    except (AttributeError, TypeError) as exc:
        # python-docx reads package XML of the wrong shape (a [Content_Types].xml without its
        # namespace, say) into elements without the expected children, and fails on them
        raise CorruptDocumentError(
            "docx", f"malformed package part ({type(exc).__name__})"
        ) from exc


def _without_dangling_rels(path: Path) -> tuple[bytes, list[str]]:
    """A copy of the package whose .rels files only point at parts that exist."""
    dropped: list[str] = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zout:
        names = set(zin.namelist())
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".rels"):
                data = _prune_rels(info.filename, data, names, dropped)
            zout.writestr(info, data)
    return buffer.getvalue(), dropped


def _prune_rels(rels_name: str, data: bytes, names: set[str], dropped: list[str]) -> bytes:
    root = etree.fromstring(data)
    # "word/_rels/document.xml.rels" describes "word/document.xml": targets are relative to "word/"
    base = posixpath.dirname(posixpath.dirname(rels_name))
    changed = False
    for rel in list(root):
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External" or not target:
            continue
        resolved = target.lstrip("/") if target.startswith("/") else posixpath.join(base, target)
        resolved = posixpath.normpath(unquote(resolved))
        if resolved not in names:
            root.remove(rel)
            dropped.append(resolved)
            changed = True
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8") if changed else data
