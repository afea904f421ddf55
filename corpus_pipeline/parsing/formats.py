"""The registry of parser strategies: one entry per strategy the router hands files to, with the
extensions and media types of its files, what of their structure it keeps, and the external
program it needs. It is the data table `formats.toml` beside this module, read and validated
at import, and the one place these facts are written: the router's `STRATEGIES`, the door's
extension families (`intake.door`) and the sniffer's extensions and media types
(`profiling.sniff`) derive from it, and `GET /v1/supported-formats` and `corpus formats`
answer from it (`capabilities`), with what is installed on this deployment looked up at the
time of asking (LibreOffice, Tesseract).

A test pins the registry to the router (every strategy `parser_for` dispatches, and no other),
to the door (every extension listed is admitted as its format) and to the format table of
docs/architecture.md.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts.formats import (
    ContainerSupport,
    FormatSupport,
    SupportedFormats,
    Tool,
    ToolStatus,
)
from corpus_pipeline.contracts.profile import FileFormat


@dataclass(frozen=True, kw_only=True)
class FormatSpec:
    """One parser strategy as the code implements it: `ocr` says the strategy reads text from
    pixels when Tesseract is installed, `requires` names a program without which it cannot
    run at all. `headings` is None for a format without headings (TOML has no null: the
    entry leaves the key out)."""

    # A key the dataclass does not know is a typo in the data file, not something to ignore.
    __pydantic_config__ = ConfigDict(extra="forbid")

    strategy: str
    format: FileFormat
    name: str
    extensions: tuple[str, ...]
    media_types: tuple[str, ...]
    headings: str | None = None
    tables: bool
    table_spans: bool
    images: bool
    ocr: bool = False
    requires: Tool | None = None
    notes: str = ""


class RegistryError(ValueError):
    """The data file of the registry is malformed: raised at import, naming the file and the
    entry, since nothing can be routed or admitted without it."""


_SPEC = TypeAdapter(FormatSpec)
# What a legacy strategy (`converted_to`) keeps: what the parser of its conversion keeps.
_CONVERTED_KEEPS = ("headings", "tables", "table_spans", "images")


def load_registry(
    text: str, where: str
) -> tuple[tuple[FormatSpec, ...], tuple[ContainerSupport, ...]]:
    """The strategies and containers of the registry's TOML `text` (read from `where`, named in
    errors), in the file's order; a malformed file or entry raises `RegistryError`."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{where}: {exc}") from None
    unknown = set(table) - {"format", "container"}
    if unknown:
        raise RegistryError(f"{where}: unknown tables {sorted(unknown)}")
    specs: dict[str, FormatSpec] = {}
    for number, row in enumerate(_entries(table, "format", where), start=1):
        entry = f"{where}: [[format]] entry {number} ({row.get('strategy', 'no strategy')!r})"
        try:
            spec = _SPEC.validate_python(_converted(row, specs))
        except ValueError as exc:  # a pydantic ValidationError is one too
            raise RegistryError(f"{entry}: {exc}") from None
        if spec.strategy in specs:
            raise RegistryError(f"{entry}: the strategy is listed twice")
        specs[spec.strategy] = spec
    containers = []
    for number, row in enumerate(_entries(table, "container", where), start=1):
        try:
            containers.append(ContainerSupport.model_validate(row))
        except ValidationError as exc:
            raise RegistryError(f"{where}: [[container]] entry {number}: {exc}") from None
    return tuple(specs.values()), tuple(containers)


def _entries(table: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    """The entries of an array of tables (`[[format]]`, `[[container]]`)."""
    rows = table.get(key, [])
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise RegistryError(f"{where}: {key!r} is not an array of tables ([[{key}]])")
    return rows


def _converted(row: dict[str, Any], earlier: Mapping[str, FormatSpec]) -> dict[str, Any]:
    """An entry as `FormatSpec` fields: a legacy strategy (`converted_to`) gets what the
    strategy it is converted to keeps, and notes that say so."""
    fields = dict(row)
    target = fields.pop("converted_to", None)
    if target is None:
        return fields
    modern = earlier.get(target)
    if modern is None:
        raise ValueError(f"converted_to {target!r} names no strategy listed before it")
    stated = sorted(set(fields) & {*_CONVERTED_KEEPS, "notes"})
    if stated:
        raise ValueError(f"{stated} are those of {target!r}, which it is converted to")
    kept = {key: getattr(modern, key) for key in _CONVERTED_KEEPS}
    notes = (
        f"converted to {target.upper()} by a managed LibreOffice, then read as "
        f"{target.upper()}; the manifest records the conversion"
    )
    return {**fields, **kept, "notes": notes}


_DATA = resources.files("corpus_pipeline.parsing").joinpath("formats.toml")
# Every strategy, each legacy one right after its modern counterpart; and the containers.
FORMATS, CONTAINERS = load_registry(_DATA.read_text(encoding="utf-8"), str(_DATA))
# The strategies the router may choose (`router.route`) and must dispatch (`router.parser_for`).
STRATEGIES: frozenset[str] = frozenset(spec.strategy for spec in FORMATS)


def _by_format(
    listed: Callable[[FormatSpec], tuple[str, ...]],
) -> dict[FileFormat, tuple[str, ...]]:
    """What the entries of each parsed format list, in the registry's order and without
    repeats (XLS is read by two strategies)."""
    out: dict[FileFormat, dict[str, None]] = {}
    for spec in FORMATS:
        out.setdefault(spec.format, {}).update(dict.fromkeys(listed(spec)))
    return {fmt: tuple(values) for fmt, values in out.items()}


# Each parsed format's extensions and media types: what the door and the sniffer know of a
# format by name.
EXTENSIONS: Mapping[FileFormat, tuple[str, ...]] = _by_format(lambda spec: spec.extensions)
MEDIA_TYPES: Mapping[FileFormat, tuple[str, ...]] = _by_format(lambda spec: spec.media_types)
# Formats no strategy parses, and why.
UNPARSED: Mapping[FileFormat, str] = {
    FileFormat.MBOX: "split at the door into one e-mail document per message",
    FileFormat.UNKNOWN: "not a document format: refused at the door",
}
_ENABLES: Mapping[Tool, str] = {
    "libreoffice": "legacy .doc and .ppt files, and the .xls files xlrd cannot read",
    "tesseract": "OCR: the text of scanned PDF pages and of images",
}
_NO_TESSERACT = "not installed; install it with `make system-deps`"
_OCR_OFF = "OCR is off: Tesseract is not installed, so scans and pictures get no text"


def capabilities(settings: CorpusSettings) -> SupportedFormats:
    """What this deployment parses now: LibreOffice looked up as the door looks it up (with
    `settings`), Tesseract as the PDF parser does."""
    from corpus_pipeline.parsing.legacy import libreoffice_available
    from corpus_pipeline.parsing.pdf.ocr import tesseract_version

    configured = bool(settings.libreoffice_path.strip())
    return report(
        libreoffice=libreoffice_status(libreoffice_available(settings), configured=configured),
        tesseract=tesseract_status(tesseract_version()),
    )


def libreoffice_status(available: bool, *, configured: bool = False) -> ToolStatus:
    """LibreOffice's line: `configured` when CORPUS_LIBREOFFICE_PATH names the program."""
    from corpus_pipeline.parsing.legacy import INSTALL_HINT

    if available:
        detail = "installed"
    elif configured:
        detail = f"CORPUS_LIBREOFFICE_PATH names no program here; {INSTALL_HINT}"
    else:
        detail = f"not installed; {INSTALL_HINT}"
    return ToolStatus(
        tool="libreoffice", available=available, enables=_ENABLES["libreoffice"], detail=detail
    )


def tesseract_status(version: str | None) -> ToolStatus:
    """Tesseract's line, from the version it reports (None: not installed)."""
    detail = f"installed (Tesseract {version})" if version else _NO_TESSERACT
    return ToolStatus(
        tool="tesseract",
        available=version is not None,
        enables=_ENABLES["tesseract"],
        detail=detail,
    )


def supported_formats(settings: CorpusSettings) -> list[FormatSupport]:
    """Every strategy of the registry, as available here now (`capabilities`)."""
    return capabilities(settings).formats


def report(*, libreoffice: ToolStatus, tesseract: ToolStatus) -> SupportedFormats:
    """The registry evaluated for a deployment with (or without) each tool."""
    from corpus_pipeline.parsing.legacy import INSTALL_HINT

    tools = {"libreoffice": libreoffice.available, "tesseract": tesseract.available}
    formats = []
    for spec in FORMATS:
        available = spec.requires is None or tools[spec.requires]
        reason = None
        if not available:
            reason = (
                "needs LibreOffice, which is not installed on this deployment: such files are "
                f"refused at the door ({INSTALL_HINT})"
            )
        elif spec.ocr and not tesseract.available:
            reason = _OCR_OFF
        formats.append(
            FormatSupport(
                format=spec.format,
                strategy=spec.strategy,
                name=spec.name,
                extensions=list(spec.extensions),
                media_types=list(spec.media_types),
                headings=spec.headings,
                tables=spec.tables,
                table_spans=spec.table_spans,
                images=spec.images,
                ocr=tesseract.available if spec.ocr else None,
                requires=spec.requires,
                available=available,
                reason=reason,
                notes=spec.notes,
            )
        )
    return SupportedFormats(
        tools=[libreoffice, tesseract], formats=formats, containers=list(CONTAINERS)
    )


def examples() -> dict[str, tuple[str, SupportedFormats]]:
    """The OpenAPI examples of the answer, cut down to three formats: with both tools
    installed, and with neither."""
    shown = {"pdf", "docx", "doc"}
    cases = {
        "installed": ("LibreOffice and Tesseract installed", True, "5.3.0"),
        "missing": ("Neither LibreOffice nor Tesseract installed", False, None),
    }
    out = {}
    for name, (summary, office, version) in cases.items():
        full = report(libreoffice=libreoffice_status(office), tesseract=tesseract_status(version))
        cut = [f for f in full.formats if f.strategy in shown]
        out[name] = (summary, full.model_copy(update={"formats": cut}))
    return out
