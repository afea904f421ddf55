"""What every parser strategy gets (a `ParseContext`) and gives back (rows via `emit`).

Parsers only describe blocks in reading order; hierarchy paths are assigned afterwards by one
shared heading stack (`corpus_pipeline.hierarchy`), so every format closes levels the same way.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from corpus_pipeline.contracts import Diagnostic, DocumentProfile, LinkSpan, ParsedRow, RowType
from corpus_pipeline.errors import CorruptDocumentError
from corpus_pipeline.parsing.tables import TableGrid

T = TypeVar("T")

if TYPE_CHECKING:
    from corpus_pipeline.settings import CorpusSettings

DiagnosticStage = Literal["ingest", "profile", "parse", "hierarchy", "chunks", "nav", "manifest"]


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
    ) -> None:
        self.items.append(Diagnostic(stage=stage, level=level, code=code, message=message))


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

    def add_image(self, data: bytes, diagnostics: DiagnosticSink | None = None) -> ImageInfo | None:
        """Store an image (or reuse an identical one); None when the bytes are not an image."""
        sha = hashlib.sha256(data).hexdigest()
        cached = self._by_sha.get(sha)
        if cached is not None:
            self.image_occurrences.append(cached.file_path)
            return cached
        info = self._decode_and_store(data, sha, diagnostics)
        if info is not None:
            self._by_sha[sha] = info
            self.image_occurrences.append(info.file_path)
        return info

    @property
    def stored_images(self) -> list[ImageInfo]:
        return list(self._stored)

    def _decode_and_store(
        self, data: bytes, sha: str, diagnostics: DiagnosticSink | None
    ) -> ImageInfo | None:
        import imagehash
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(data)) as img:
                img.load()
                width, height = img.size
                fmt = (img.format or "png").lower()
                phash = imagehash.phash(img.convert("RGB"))
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            if diagnostics is not None:
                diagnostics.add(
                    "parse", "image.undecodable", f"image skipped: {type(exc).__name__}"
                )
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
    # Opens an encrypted source; memory only (see corpus_pipeline.secrets), never logged.
    password: str | None = field(default=None, repr=False)
    resources: ResourceSink = field(init=False)

    def __post_init__(self) -> None:
        self.resources = ResourceSink(self.workdir)

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
        """Store a table as HTML and emit its row; empty tables are dropped with a warning."""
        if grid.num_rows == 0 or not any(c.text.strip() for c in grid.cells):
            self.diagnostics.add(
                "parse", "table.empty", f"empty table at {source_location} dropped"
            )
            return None
        rel = self.resources.add_table(grid)
        return self.emit(
            RowType.TABLE,
            grid.to_text(),
            source_location,
            resource_path=rel,
            page_numbers=page_numbers,
        )

    def emit_image(
        self, data: bytes, alt: str, source_location: str, page_numbers: list[int] | None = None
    ) -> ParsedRow | None:
        """Store (or reuse) an image and emit its row with the alt text."""
        info = self.resources.add_image(data, self.diagnostics)
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
    except Exception as exc:  # any damage, see the docstring
        raise CorruptDocumentError(
            fmt, f"the {what} cannot be read ({type(exc).__name__})"
        ) from exc


Parser = Callable[[ParseContext], None]
"""A format strategy: reads `ctx.source_path` and emits rows into `ctx`."""
