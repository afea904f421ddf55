"""What every parser strategy gets (a `ParseContext`) and gives back (rows via `emit`).

Parsers only describe blocks in reading order; hierarchy paths are assigned afterwards by one
shared heading stack (`corpus_pipeline.structure.hierarchy`), so every format closes levels the same way.
"""

from __future__ import annotations

import functools
import hashlib
import io
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from corpus_pipeline.common.errors import CorpusError, CorruptDocumentError
from corpus_pipeline.contracts import (
    Conversion,
    Diagnostic,
    DocumentProfile,
    LinkSpan,
    ParsedRow,
    RowType,
)
from corpus_pipeline.enrich.tokens import count_tokens
from corpus_pipeline.parsing.tables import TableGrid, split_columns, split_rows

T = TypeVar("T")
P = ParamSpec("P")
# A longer table is stored as parts (each led by its header rows): a chunk an agent can read
# and cite by the pages it is on (twice the default text chunk limit).
MAX_TABLE_TOKENS = 600

if TYPE_CHECKING:
    from corpus_pipeline.common.settings import CorpusSettings

DiagnosticStage = Literal["ingest", "profile", "parse", "hierarchy", "chunks", "nav", "manifest"]

# What the readers raise when one part of a file (an image, a table, a page, a font) is damaged:
# (module, class) of each library's own error root, resolved only once that library is loaded,
# so importing this module loads none of them. PyMuPDF's `FzErrorBase` does not derive from
# RuntimeError, which is why catching builtins alone let one bad image fail whole documents.
LIBRARY_ERRORS: tuple[tuple[str, str], ...] = (
    ("pymupdf.mupdf", "FzErrorBase"),  # MuPDF: FzErrorArgument, FzErrorFormat, FzErrorLimit, ...
    ("pymupdf", "FileDataError"),
    ("lxml.etree", "LxmlError"),  # XMLSyntaxError and friends (docx, pptx, xlsx, html)
    ("PIL.Image", "DecompressionBombError"),  # PIL's other errors are OSError / ValueError
    ("docx.exceptions", "PythonDocxError"),
    ("docx.opc.exceptions", "OpcError"),
    ("pptx.exc", "PythonPptxError"),
    ("openpyxl.utils.exceptions", "InvalidFileException"),
    ("openpyxl.utils.exceptions", "CellCoordinatesException"),
    ("openpyxl.utils.exceptions", "IllegalCharacterError"),
    ("pytesseract", "TesseractError"),
)
# The builtins those libraries use for damage: PyMuPDF (RuntimeError, ValueError), package
# readers (KeyError/IndexError for a missing part or relationship, zip and zlib errors, EOFError
# for a truncated member), PIL (OSError incl. UnidentifiedImageError, SyntaxError from a broken
# plugin header, struct.error from short binary records), Tesseract (OSError when it is gone).
BUILTIN_PART_ERRORS: tuple[type[BaseException], ...] = (
    RuntimeError,
    ValueError,
    LookupError,
    OSError,
    EOFError,
    SyntaxError,
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
)


def part_errors() -> tuple[type[BaseException], ...]:
    """The exception classes one damaged part may raise: the builtins above plus the error roots
    of every reader library loaded so far (a library not loaded cannot have raised)."""
    loaded: list[type[BaseException]] = []
    for module_name, name in LIBRARY_ERRORS:
        module = sys.modules.get(module_name)
        cls = getattr(module, name, None) if module is not None else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            loaded.append(cls)
    return BUILTIN_PART_ERRORS + tuple(loaded)


class Part:
    """Outcome of one isolated part: `failed` tells the caller to take its fallback."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: BaseException | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass
class DiagnosticSink:
    """Collects warnings per stage; they end up in diagnostics.json."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(
        self,
        stage: DiagnosticStage,
        code: str,
        message: str,
        level: Literal["info", "warning", "error"] = "warning",
        *,
        page: int | None = None,
        lost: str | None = None,
        exception: BaseException | None = None,
    ) -> None:
        self.items.append(
            Diagnostic(
                stage=stage,
                level=level,
                code=code,
                message=message,
                page=page,
                lost=lost,
                exception=type(exception).__name__ if exception is not None else None,
            )
        )

    @contextmanager
    def part(
        self,
        lost: str,
        message: str,
        *,
        page: int | None = None,
        code: str | None = None,
        stage: DiagnosticStage = "parse",
        level: Literal["info", "warning", "error"] = "warning",
    ) -> Iterator[Part]:
        """Isolate one part of a document: a library error inside the block becomes a diagnostic
        (`lost`, `page`, exception class; `message` in words, no paths) and the document goes
        on. Anything else, e.g. a TypeError from our own code, still propagates.

            with ctx.diagnostics.part("image", f"image on page {n} could not be decoded; "
                                      "skipped", page=n) as part:
                data = decode(...)
            if part.failed: ...
        """
        outcome = Part()
        try:
            yield outcome
        except Exception as exc:
            if not isinstance(exc, part_errors()):
                raise
            outcome.error = exc
            self.add(
                stage,
                code or f"{lost.replace(' ', '_')}.failed",
                message,
                level,
                page=page,
                lost=lost,
                exception=exc,
            )


def image_decoding(
    sink: DiagnosticSink, page: int | None, where: str = ""
) -> AbstractContextManager[Part]:
    """Isolation of decoding one image (on `page`, else at `where`): an undecodable one is
    skipped, recorded as a lost image."""
    at = f" on page {page}" if page is not None else (f" at {where}" if where else "")
    message = f"image{at} could not be decoded; skipped"
    return sink.part("image", message, page=page, code="image.undecodable")


@dataclass(frozen=True)
class ImageInfo:
    """Cached facts about one stored image file (shared by all its occurrences)."""

    file_path: str
    width: int
    height: int
    phash: str
    sha256: str


class ResourceSink:
    """Writes tables and images into the job-local work directory.

    Tables get sequential ids (`tables/table-0001.html`). Images are stored once per
    perceptual hash: a repeated or re-encoded copy reuses the stored file and its cached
    metadata (dedupe by byte hash first, then by pHash Hamming distance).
    """

    PHASH_MAX_DISTANCE = 4

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.tables: list[str] = []
        self.image_occurrences: list[str] = []
        self._by_sha: dict[str, ImageInfo] = {}
        self._stored: list[ImageInfo] = []

    def add_table(self, grid: TableGrid) -> str:
        rel = f"tables/table-{len(self.tables) + 1:04d}.html"
        path = self.workdir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(grid.to_html() + "\n", encoding="utf-8")
        self.tables.append(rel)
        return rel

    def add_image(
        self,
        data: bytes,
        diagnostics: DiagnosticSink | None = None,
        *,
        page: int | None = None,
        where: str = "",
    ) -> ImageInfo | None:
        """Store an image (or reuse an identical one); None when the bytes are not an image
        (recorded in `diagnostics` as a lost image on `page`, described by `where`)."""
        sha = hashlib.sha256(data).hexdigest()
        cached = self._by_sha.get(sha)
        if cached is not None:
            self.image_occurrences.append(cached.file_path)
            return cached
        info = self._decode_and_store(data, sha, diagnostics or DiagnosticSink(), page, where)
        if info is not None:
            self._by_sha[sha] = info
            self.image_occurrences.append(info.file_path)
        return info

    @property
    def stored_images(self) -> list[ImageInfo]:
        return list(self._stored)

    def _decode_and_store(
        self, data: bytes, sha: str, diagnostics: DiagnosticSink, page: int | None, where: str
    ) -> ImageInfo | None:
        import imagehash
        from PIL import Image

        with (
            image_decoding(diagnostics, page, where) as part,
            Image.open(io.BytesIO(data)) as img,
        ):
            img.load()
            width, height = img.size
            fmt = (img.format or "png").lower()
            phash = imagehash.phash(img.convert("RGB"))
        if part.failed:
            return None
        for known in self._stored:
            if _near(known, phash, width, height, self.PHASH_MAX_DISTANCE):
                return known
        ext = {"jpeg": "jpg", "mpo": "jpg"}.get(fmt, fmt)
        rel = f"images/{phash}.{ext}"
        path = self.workdir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        info = ImageInfo(file_path=rel, width=width, height=height, phash=str(phash), sha256=sha)
        self._stored.append(info)
        return info


def _near(known: ImageInfo, phash: Any, width: int, height: int, max_distance: int) -> bool:
    import imagehash

    distance = imagehash.hex_to_hash(known.phash) - phash
    if distance > max_distance:
        return False
    ratio_known = known.width / max(known.height, 1)
    ratio_new = width / max(height, 1)
    return abs(ratio_known - ratio_new) <= 0.1 * max(ratio_known, ratio_new)


def _on_diagnostics(
    method: Callable[Concatenate[DiagnosticSink, P], T],
) -> Callable[Concatenate[ParseContext, P], T]:
    """A method of `DiagnosticSink` as a method of the context, with the sink's signature: it
    acts on the sink the context holds when called (a parse may give its context another)."""

    @functools.wraps(method)
    def on_sink(ctx: ParseContext, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return method(ctx.diagnostics, *args, **kwargs)

    return on_sink


@dataclass
class ParseContext:
    """Inputs of one parse, plus the sinks a parser writes to."""

    source_path: Path
    source_file_name: str
    profile: DocumentProfile
    workdir: Path
    diagnostics: DiagnosticSink = field(default_factory=DiagnosticSink)
    rows: list[ParsedRow] = field(default_factory=list)
    # Parse budget and model roles; None = the defaults of `CorpusSettings`.
    settings: CorpusSettings | None = field(default=None, repr=False)
    # Opens an encrypted source; memory only (see corpus_pipeline.common.secrets), never logged.
    password: str | None = field(default=None, repr=False)
    # What profiling this file already read that the parse would read again
    # (`parsing.pdf.reads.PageReads` for a PDF): the format's parser checks the type and the
    # file before using it, so anything else is ignored.
    prior_reads: object | None = field(default=None, repr=False)
    # The title the file declares in its metadata (PDF info, Office core properties), as read;
    # `corpus_pipeline.structure.titles` decides whether it names the document.
    declared_title: str | None = None
    # The date the file's metadata declares (`corpus_pipeline.parsing.dates`); the document's date when
    # the uploader gave none.
    declared_date: date | None = None
    # The label printed on each physical page ('' where none; paginated formats only): what a
    # reader cites as "page 28" (see corpus_pipeline.parsing.pdf.page_labels).
    page_labels: list[str] = field(default_factory=list)
    # The running headers/footers the document prints on its pages, without page numbers: how
    # it names itself ("Apple Inc. | Q1 2023 Form 10-Q"); stripped from the text, kept here.
    running_text: list[str] = field(default_factory=list)
    # Set when the file was converted before its rows were read (`parsing.legacy`): the
    # manifest records it.
    conversion: Conversion | None = None
    resources: ResourceSink = field(init=False)

    def __post_init__(self) -> None:
        self.resources = ResourceSink(self.workdir)

    @property
    def memory_limit_mb(self) -> int:
        """The parse's memory limit (`CORPUS_PARSE_MAX_MEMORY_MB`; 0 = none)."""
        from corpus_pipeline.common.settings import load_settings

        return (self.settings or load_settings()).parse_max_memory_mb

    # `DiagnosticSink.part` (the parse stage unless told): isolate one image, table, page or shape.
    part = _on_diagnostics(DiagnosticSink.part)

    def emit(
        self,
        row_type: RowType,
        text: str,
        source_location: str,
        *,
        heading_level: int | None = None,
        page_numbers: list[int] | None = None,
        resource_path: str | None = None,
        links: list[LinkSpan] | None = None,
    ) -> ParsedRow:
        """Append one block in reading order (hierarchy paths are assigned later)."""
        row = ParsedRow(
            order=len(self.rows),
            row_type=row_type,
            text=text,
            heading_level=heading_level if row_type is RowType.HEADING else None,
            page_numbers=page_numbers or [],
            resource_path=resource_path,
            source_location=source_location,
            links=links or [],
        )
        self.rows.append(row)
        return row

    def emit_table(
        self, grid: TableGrid, source_location: str, page_numbers: list[int] | None = None
    ) -> ParsedRow | None:
        """Store a table as HTML and emit its row (the first part's: a table over
        MAX_TABLE_TOKENS is stored and emitted as parts that repeat its header rows, each with
        the pages its rows are on, and rows too wide as parts of columns that repeat the first);
        empty tables are dropped with a warning."""
        if grid.num_rows == 0 or not any(c.text.strip() for c in grid.cells):
            self.diagnostics.add(
                "parse", "table.empty", f"empty table at {source_location} dropped"
            )
            return None
        parts = [
            columns
            for rows in split_rows(grid, MAX_TABLE_TOKENS, count_tokens)
            for columns in split_columns(rows, MAX_TABLE_TOKENS, count_tokens)
        ]
        first: ParsedRow | None = None
        for number, part in enumerate(parts, 1):
            where = source_location
            if len(parts) > 1:
                where = f"{source_location} part {number}/{len(parts)}"
            row = self.emit(
                RowType.TABLE,
                part.to_text(),
                where,
                resource_path=self.resources.add_table(part),
                page_numbers=part.pages() or page_numbers,
            )
            first = first or row
        return first

    def emit_image(
        self, data: bytes, alt: str, source_location: str, page_numbers: list[int] | None = None
    ) -> ParsedRow | None:
        """Store (or reuse) an image and emit its row with the alt text."""
        page = page_numbers[0] if page_numbers else None
        info = self.resources.add_image(data, self.diagnostics, page=page, where=source_location)
        if info is None:
            return None
        return self.emit(
            RowType.IMAGE,
            " ".join(alt.split()),
            source_location,
            resource_path=info.file_path,
            page_numbers=page_numbers,
        )


def load_or_corrupt(fmt: str, what: str, load: Callable[[], T]) -> T:
    """Open a binary package with a third-party reader. A damaged file can fail anywhere inside
    such a reader (zip, XML, records), and every such failure means the same thing here: the
    file is corrupt, named by its format, without the library's internals in the message."""
    try:
        return load()
    except CorpusError:  # the reader's own refusal says what is wrong already
        raise
    except Exception as exc:  # any damage, see the docstring
        raise CorruptDocumentError(
            fmt, f"the {what} cannot be read ({type(exc).__name__})"
        ) from exc


Parser = Callable[[ParseContext], None]
"""A format strategy: reads `ctx.source_path` and emits rows into `ctx`."""


class Locator:
    """Source locations of XML formats, `body/sdt[0]/p[2]`-style: per-container, per-tag
    0-based indexes (DOCX, ODF)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._counts: dict[str, int] = {}

    def next(self, tag: str) -> str:
        index = self._counts.get(tag, 0)
        self._counts[tag] = index + 1
        return f"{self.prefix}/{tag}[{index}]"
