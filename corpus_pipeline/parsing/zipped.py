"""Members of a ZIP-based document (OpenDocument, EPUB) read within bounds.

A document package is a ZIP whose headers are never trusted: each member is decompressed in
chunks and counted against a per-member and a per-document budget (a zip bomb stops at the
budget, not at the memory limit), references between members are resolved only to members that
exist inside the package (a `../` or absolute reference resolves to nothing), and package XML is
parsed without DTDs, external entities or network access.
"""

from __future__ import annotations

import posixpath
import zipfile
import zlib
from pathlib import Path
from typing import IO
from urllib.parse import unquote

from lxml import etree

from corpus_pipeline.common.closing import Closing
from corpus_pipeline.common.errors import ZIP_DAMAGE, CorruptDocumentError, ParseLimitError

MIB = 1024 * 1024
MAX_MEMBER_BYTES = 64 * MIB
MAX_TOTAL_BYTES = 512 * MIB
MAX_ENTRIES = 20_000
_CHUNK = 64 * 1024
# What a whole-package reader (python-docx, python-pptx, openpyxl) holds per byte of a member:
# an XML part as bytes, as lxml's tree and as the library's objects; any other part as bytes.
XML_HOLD_FACTOR = 4
_XML_SUFFIXES = (".xml", ".rels", ".vml")


class MemberTooLarge(ValueError):
    """One member expands beyond its budget (a bomb, or a huge embedded video)."""


class BoundedStream:
    """A member's decompressed bytes as a stream that raises MemberTooLarge past `limit`: for
    readers that parse as they read (lxml's iterparse), so memory stays bounded too."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(_CHUNK if size < 0 else min(size, _CHUNK))
        self.size += len(chunk)
        if self.size > self._limit:
            raise MemberTooLarge(f"a package part expands beyond {self._limit // MIB} MiB")
        return chunk


def check_expansion(path: Path, fmt: str, megabytes: int) -> None:
    """Refuse, before a byte is decompressed, a package that a whole-package reader could not
    hold within the parse's memory limit (`megabytes`; 0 = no limit): the members' declared
    sizes, weighted by what reading them costs. Declared sizes bound what is read, because
    `zipfile` stops a member at its declared size (and fails its CRC if more was there), so a
    bomb is refused here instead of growing the worker until the memory poll kills it."""
    if megabytes <= 0:
        return
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except ZIP_DAMAGE:
        return  # the format's reader names the damage
    held = sum(
        info.file_size * (XML_HOLD_FACTOR if info.filename.lower().endswith(_XML_SUFFIXES) else 1)
        for info in infos
    )
    if held > megabytes * MIB:
        expanded = sum(info.file_size for info in infos)
        raise ParseLimitError.memory(
            megabytes,
            f"the {fmt} package expands to {expanded / MIB:,.0f} MiB, and reading it would "
            f"hold about {held / MIB:,.0f} MiB",
        )


def xml_parser(recover: bool = False) -> etree.XMLParser:
    """Package XML: no DTD loading, no entity expansion from outside, no network."""
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, recover=recover, huge_tree=False
    )


class ZipPackage(Closing):
    """One open package; `fmt` names the format in every `CorruptDocumentError`."""

    def __init__(self, path: Path, fmt: str) -> None:
        self.fmt = fmt
        self._total = 0
        try:
            self._zip = zipfile.ZipFile(path)
            infos = self._zip.infolist()
        except ZIP_DAMAGE as exc:
            raise CorruptDocumentError(
                fmt, f"not a readable zip archive ({type(exc).__name__})"
            ) from exc
        if len(infos) > MAX_ENTRIES:
            raise CorruptDocumentError(fmt, f"more than {MAX_ENTRIES} entries in the package")
        self.names = frozenset(i.filename for i in infos if not i.is_dir())

    def close(self) -> None:
        self._zip.close()

    def read(self, name: str, limit: int | None = None) -> bytes:
        """A member's bytes, counted while decompressing: `MemberTooLarge` past `limit` (else
        MAX_MEMBER_BYTES) or the package's total budget; `KeyError` when there is no such
        member."""
        limit = limit or MAX_MEMBER_BYTES
        parts: list[bytes] = []
        size = 0
        with self._zip.open(name) as stream:
            while chunk := self._chunk(stream, name):
                size += len(chunk)
                self._total += len(chunk)
                if size > limit:
                    raise MemberTooLarge(f"a package part expands beyond {limit // MIB} MiB")
                if self._total > MAX_TOTAL_BYTES:  # many members, each within its budget
                    raise MemberTooLarge(
                        f"the package expands beyond {MAX_TOTAL_BYTES // MIB} MiB in all"
                    )
                parts.append(chunk)
        return b"".join(parts)

    @staticmethod
    def _chunk(stream: IO[bytes], name: str) -> bytes:
        """The next piece of a member; a damaged deflate stream is a damaged package."""
        try:
            return stream.read(_CHUNK)
        except zlib.error as exc:
            raise zipfile.BadZipFile(f"member {name} is damaged ({exc})") from exc

    def xml(self, name: str, what: str) -> etree._Element:
        """A required XML member, parsed; anything wrong with it makes the document corrupt."""
        try:
            return etree.fromstring(self.read(name), xml_parser())
        except KeyError as exc:
            raise CorruptDocumentError(self.fmt, f"{what} ({name}) is missing") from exc
        except (etree.XMLSyntaxError, MemberTooLarge) as exc:
            raise CorruptDocumentError(self.fmt, f"{what} cannot be read ({exc})") from exc
        except ZIP_DAMAGE as exc:
            raise CorruptDocumentError(
                self.fmt, f"{what} cannot be read ({type(exc).__name__})"
            ) from exc

    def part_xml(self, name: str) -> etree._Element:
        """An optional XML member, parsed; its failures are the library's own (a caller
        isolates them with `ctx.part`, so the document goes on without it)."""
        return etree.fromstring(self.read(name), xml_parser())

    def resolve(self, base: str, href: str) -> str | None:
        """The member that `href` (as written in member `base`) names, or None when it points
        outside the package, elsewhere on the net, or at nothing."""
        target = unquote(href.split("#", 1)[0].split("?", 1)[0]).strip()
        if not target or ":" in target.split("/", 1)[0] or target.startswith(("/", "\\")):
            return None
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(base), target))
        if joined.startswith("../") or joined == "..":
            return None
        return joined if joined in self.names else None
