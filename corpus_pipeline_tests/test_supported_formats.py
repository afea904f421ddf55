"""What this deployment can parse (`parsing.formats`, read from `formats.toml`, refused whole
naming the entry when malformed): the registry is exactly what the router dispatches and what
the door admits, it reflects whether LibreOffice and Tesseract are here, and
`GET /v1/supported-formats` (upload API and query service) and `corpus formats --json` give the
same answer. docs/architecture.md holds the registry's table, generated here.

Every door check runs on a generated file of the format (legacy Office and Outlook files as OLE2
containers with the streams that name them); LibreOffice's absence is a configured path that
names no program and a PATH without one, as in test_legacy_office.py."""

from __future__ import annotations

import ast
import datetime as dt
import importlib.resources
import io
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pptx
import pytest
import xlwt
from click.testing import CliRunner
from extract_msg.ole_writer import OleWriter
from fastapi.testclient import TestClient
from PIL import Image

import corpus_pipeline.parsing.pdf.ocr as ocr
from corpus_pipeline.cli.doctor import libreoffice as libreoffice_check
from corpus_pipeline.cli.main import main
from corpus_pipeline.common.errors import UnsupportedFormatError
from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts import DocumentProfile, FileFormat, RoutingDecision
from corpus_pipeline.contracts.formats import SupportedFormats
from corpus_pipeline.intake.archives import archive_kind
from corpus_pipeline.intake.door import FAMILIES, Refused, admit
from corpus_pipeline.parsing import router
from corpus_pipeline.parsing.formats import (
    CONTAINERS,
    FORMATS,
    STRATEGIES,
    UNPARSED,
    FormatSpec,
    RegistryError,
    capabilities,
    load_registry,
)
from corpus_pipeline.parsing.legacy import KINDS, libreoffice_available
from corpus_pipeline.profiling import sniff_format
from corpus_pipeline.upload_api.app import create_ingest_app
from query_service.api.app import create_app
from query_service.config import ServiceSettings

from . import mail_files
from .http_service import write_api_keys

ROOT = Path(__file__).resolve().parent.parent
BY_STRATEGY = {spec.strategy: spec for spec in FORMATS}
LEGACY = {"doc", "ppt", "xls_legacy"}
KEY = "formats-key"
BEARER = {"Authorization": f"Bearer {KEY}"}
needs_libreoffice = pytest.mark.skipif(
    not libreoffice_available(load_settings()) and not os.environ.get("CI"),
    reason="LibreOffice is not installed",
)
needs_tesseract = pytest.mark.skipif(
    ocr.tesseract_version() is None and not os.environ.get("CI"),
    reason="Tesseract is not installed",
)


# -- the registry and the router -------------------------------------------------------------


def _dispatched() -> set[str]:
    """The strategies `parser_for`'s match statement names, read from the router's source."""
    tree = ast.parse(Path(router.__file__).read_text(encoding="utf-8"))
    [function] = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "parser_for"
    ]
    [match] = [n for n in ast.walk(function) if isinstance(n, ast.Match)]
    names: set[str] = set()
    for case in match.cases:
        patterns = (
            case.pattern.patterns if isinstance(case.pattern, ast.MatchOr) else [case.pattern]
        )
        for pattern in patterns:
            assert isinstance(pattern, ast.MatchValue), ast.dump(pattern)  # no catch-all
            assert isinstance(pattern.value, ast.Constant)
            assert isinstance(pattern.value.value, str)
            names.add(pattern.value.value)
    return names


def _profile(
    fmt: FileFormat, strategy: str = "", needs_conversion: bool = False
) -> DocumentProfile:
    return DocumentProfile(
        format=fmt,
        media_type="application/octet-stream",
        extension="",
        size_bytes=1,
        sha256="0" * 64,
        needs_conversion=needs_conversion,
        routing=RoutingDecision(strategy=strategy, reason="test"),
    )


def test_the_registry_lists_exactly_the_strategies_parser_for_dispatches():
    assert _dispatched() == STRATEGIES
    assert router.STRATEGIES == STRATEGIES
    assert len(FORMATS) == len(STRATEGIES)  # one entry per strategy


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_each_registry_strategy_gets_a_parse_function(strategy: str):
    parser = router.parser_for(_profile(BY_STRATEGY[strategy].format, strategy))
    assert callable(parser) and parser.__name__.startswith("parse_")


def test_a_strategy_outside_the_registry_is_refused_naming_the_format():
    with pytest.raises(UnsupportedFormatError, match="mbox"):
        router.parser_for(_profile(FileFormat.MBOX, "mbox"))


@pytest.mark.parametrize("fmt", list(FileFormat), ids=str)
def test_the_router_sends_each_format_to_its_registry_entry_or_refuses_it(fmt: FileFormat):
    conversions = (False, True) if fmt in KINDS else (False,)
    for needs_conversion in conversions:
        strategy = router.route(_profile(fmt, needs_conversion=needs_conversion), "test").strategy
        if fmt in UNPARSED:
            assert strategy == "unsupported"
        else:
            assert BY_STRATEGY[strategy].format is fmt, strategy
            # What only LibreOffice reads goes to a legacy strategy: a .doc or .ppt always.
            converted = needs_conversion or fmt in (FileFormat.DOC, FileFormat.PPT)
            assert (strategy in LEGACY) is converted


def test_every_format_has_a_registry_entry_or_a_reason_for_none():
    parsed = {spec.format for spec in FORMATS}
    assert parsed | set(UNPARSED) == set(FileFormat)
    assert not parsed & set(UNPARSED)


def test_a_legacy_strategy_keeps_what_the_parser_of_its_conversion_keeps():
    for legacy, modern in (("doc", "docx"), ("ppt", "pptx"), ("xls_legacy", "xlsx")):
        old, new = BY_STRATEGY[legacy], BY_STRATEGY[modern]
        kept = ("headings", "tables", "table_spans", "images")
        assert [getattr(old, k) for k in kept] == [getattr(new, k) for k in kept]
        assert old.requires == "libreoffice" and new.requires is None


REGISTRY = importlib.resources.files("corpus_pipeline.parsing").joinpath("formats.toml")


def test_the_registry_is_the_data_file_shipped_in_the_package():
    assert load_registry(REGISTRY.read_text(encoding="utf-8"), "formats.toml") == (
        FORMATS,
        CONTAINERS,
    )


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('name = "Word document"', 'name = "Word document"\nkeeps = true', "entry 2 ('docx')"),
        ('format = "pptx"', 'format = "slides"', "entry 4 ('pptx')"),
        ('converted_to = "docx"', 'converted_to = "docx"\ntables = false', "entry 3 ('doc')"),
        ('converted_to = "pptx"', 'converted_to = "odp"', "entry 5 ('ppt')"),
        ('strategy = "pdf"', "strategy = pdf", "Invalid value (at line"),
    ],
    ids=["unknown key", "unknown format", "converted restates", "converted before", "toml"],
)
def test_a_malformed_registry_is_refused_naming_the_file_and_the_entry(
    old: str, new: str, named: str
):
    text = REGISTRY.read_text(encoding="utf-8")
    assert text.count(old) == 1
    with pytest.raises(RegistryError, match=r"^formats\.toml: ") as refused:
        load_registry(text.replace(old, new), "formats.toml")
    assert named in str(refused.value)


# -- the registry and the door -----------------------------------------------------------------


def _ole(stream: str) -> bytes:
    """An OLE2 compound file whose root holds `stream` (what names a legacy Office file)."""
    writer = OleWriter()
    writer.addEntry(stream, b"\x00" * 4096)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _zip(mimetype: str, main_part: str, text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        archive.writestr(main_part, text)
    return buffer.getvalue()


def _saved(document: Any) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _image(ext: str) -> bytes:
    kind = {"jpg": "JPEG", "tif": "TIFF"}.get(ext, ext.upper())
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "navy").save(buffer, kind)
    return buffer.getvalue()


def _xls() -> bytes:
    book = xlwt.Workbook()
    sheet = book.add_sheet("Ducks")
    for row, (pond, ducks) in enumerate((("Pond", "Ducks"), ("Mill", 14))):
        sheet.write(row, 0, pond)
        sheet.write(row, 1, ducks)
    return _saved(book)


_ODF = "application/vnd.oasis.opendocument."
_CONTENT = (
    '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"/>'
)
# A small file of each strategy's format, for a listed extension.
SAMPLES: dict[str, Callable[[str], bytes]] = {
    "pdf": lambda _: mail_files.pdf("Tufted ducks dive for mussels."),
    "docx": lambda _: _saved(docx.Document()),
    "doc": lambda _: _ole("WordDocument"),
    "pptx": lambda _: _saved(pptx.Presentation()),
    "ppt": lambda _: _ole("PowerPoint Document"),
    "xlsx": lambda _: _saved(openpyxl.Workbook()),
    "xls": lambda _: _xls(),
    "xls_legacy": lambda _: _ole("Workbook"),  # a workbook stream xlrd cannot read
    "ods": lambda _: _zip(_ODF + "spreadsheet", "content.xml", _CONTENT),
    "odt": lambda _: _zip(_ODF + "text", "content.xml", _CONTENT),
    "odp": lambda _: _zip(_ODF + "presentation", "content.xml", _CONTENT),
    "epub": lambda _: _zip("application/epub+zip", "META-INF/container.xml", "<container/>"),
    "rtf": lambda _: b"{\\rtf1\\ansi Tufted ducks dive.\\par}",
    "html": lambda _: b"<!doctype html><html><body><h1>Ducks</h1></body></html>",
    "markdown": lambda _: b"# Ducks\n\nTufted ducks dive for mussels.\n",
    "text": lambda _: b"Tufted ducks dive for mussels.\n",
    "csv": lambda ext: (b"pond,ducks\nMill,14\nLake,9\n").replace(
        b",", b"\t" if ext == "tsv" else b","
    ),
    "eml": lambda _: mail_files.message(),
    "msg": lambda _: mail_files.outlook_msg(
        "Budget", "The figures.", dt.datetime(2024, 3, 5, tzinfo=dt.UTC)
    ),
    "image": _image,
    "segments_json": lambda _: json.dumps([{"type": "paragraph", "content": "Ducks"}]).encode(),
}
LISTED = [(spec.strategy, ext) for spec in FORMATS for ext in spec.extensions]


def test_there_is_a_sample_of_every_registry_strategy():
    assert set(SAMPLES) == STRATEGIES


@pytest.mark.parametrize(("strategy", "ext"), LISTED, ids=[f"{s}-{e}" for s, e in LISTED])
def test_the_door_admits_each_listed_extension_as_its_format(strategy: str, ext: str):
    spec = BY_STRATEGY[strategy]
    data = SAMPLES[strategy](ext)
    assert spec.format in FAMILIES[ext]
    admitted = admit(f"sample.{ext}", data, max_bytes=1 << 24, libreoffice=True)
    assert admitted.format is spec.format
    assert sniff_format(data, ext).media_type in spec.media_types


def test_every_extension_the_door_knows_is_listed_by_a_format_or_a_container():
    listed = {ext: spec.format for spec in FORMATS for ext in spec.extensions}
    split = {ext for container in CONTAINERS for ext in container.extensions}
    for ext, family in FAMILIES.items():
        assert listed.get(ext) in family or ext in split, ext


def test_the_containers_listed_are_split_at_the_door():
    [mailbox, archive] = CONTAINERS
    assert FAMILIES["mbox"] == {FileFormat.MBOX}
    one = mail_files.mbox(mail_files.message())
    assert admit("mail.mbox", one, max_bytes=1 << 24, mailbox=True).format is FileFormat.MBOX
    assert all(archive_kind(f"files.{ext}") for ext in archive.extensions)
    assert mailbox.extensions == ["mbox"]


# -- what is installed -----------------------------------------------------------------------


def _path_without_libreoffice() -> str:
    return os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if not any((Path(d) / name).exists() for name in ("soffice", "libreoffice"))
    )


@pytest.fixture
def no_libreoffice(
    tmp_path: Path, corpus_home: Path, monkeypatch: pytest.MonkeyPatch
) -> CorpusSettings:
    """Settings (and an environment) of a deployment without LibreOffice."""
    missing = str(tmp_path / "missing" / "soffice")
    monkeypatch.setenv("CORPUS_LIBREOFFICE_PATH", missing)
    monkeypatch.setenv("PATH", _path_without_libreoffice())
    return load_settings(home=corpus_home, libreoffice_path=missing)


def _by_strategy(report: SupportedFormats) -> dict[str, Any]:
    return {entry.strategy: entry for entry in report.formats}


def test_without_libreoffice_the_legacy_formats_are_unavailable_naming_it(no_libreoffice):
    report = capabilities(no_libreoffice)
    entries = _by_strategy(report)
    for strategy in LEGACY:
        assert not entries[strategy].available
        assert "needs LibreOffice" in (entries[strategy].reason or "")
    assert all(e.available for s, e in entries.items() if s not in LEGACY)
    office = report.tools[0]
    assert (office.tool, office.available) == ("libreoffice", False)
    assert "CORPUS_LIBREOFFICE_PATH" in office.detail


def test_without_libreoffice_the_door_refuses_what_the_answer_lists_as_unavailable(
    no_libreoffice,
):
    """The answer and the door agree: each listed extension of an unavailable format is
    refused (naming LibreOffice), of an available one admitted."""
    entries = _by_strategy(capabilities(no_libreoffice))
    for strategy, ext in LISTED:
        data = SAMPLES[strategy](ext)
        if entries[strategy].available:
            admit(f"sample.{ext}", data, max_bytes=1 << 24)
        else:
            with pytest.raises(Refused, match="needs LibreOffice"):
                admit(f"sample.{ext}", data, max_bytes=1 << 24)


@needs_libreoffice
def test_with_libreoffice_every_format_is_available(corpus_home: Path):
    report = capabilities(load_settings(home=corpus_home))
    assert all(entry.available for entry in report.formats)
    assert all(entry.reason is None for entry in report.formats if entry.strategy in LEGACY)
    assert report.tools[0].available and report.tools[0].detail == "installed"


def test_without_tesseract_ocr_is_off_for_pdf_and_images_only(
    corpus_home: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(ocr, "tesseract_version", lambda: None)
    report = capabilities(load_settings(home=corpus_home))
    entries = _by_strategy(report)
    assert {s for s, e in entries.items() if e.ocr is not None} == {"pdf", "image"}
    for strategy in ("pdf", "image"):
        assert entries[strategy].ocr is False and entries[strategy].available
        assert "Tesseract is not installed" in (entries[strategy].reason or "")
    assert report.tools[1].tool == "tesseract" and not report.tools[1].available


@needs_tesseract
def test_with_tesseract_ocr_is_on_for_pdf_and_images(corpus_home: Path):
    report = capabilities(load_settings(home=corpus_home))
    entries = _by_strategy(report)
    assert entries["pdf"].ocr is True and entries["image"].ocr is True
    assert report.tools[1].detail == f"installed (Tesseract {ocr.tesseract_version()})"


def test_doctor_says_what_a_missing_libreoffice_disables(no_libreoffice):
    check = libreoffice_check(no_libreoffice)
    assert not check.ok and not check.required
    assert "refused at the door" in check.detail and ".doc" in check.detail


@needs_libreoffice
def test_doctor_names_the_libreoffice_version_it_converts_with(corpus_home: Path):
    check = libreoffice_check(load_settings(home=corpus_home))
    assert check.ok and check.detail.startswith("LibreOffice ")
    assert check.detail.split()[1][0].isdigit()


# -- HTTP and CLI ------------------------------------------------------------------------------


@pytest.fixture
def keyed_home(corpus_home: Path) -> Path:
    write_api_keys(corpus_home, {KEY: ("reader", ["default"])})
    return corpus_home


@pytest.fixture
def upload(keyed_home: Path) -> Iterator[TestClient]:
    settings = load_settings(home=keyed_home)
    with TestClient(create_ingest_app(settings, worker=False)) as client:
        yield client


@pytest.fixture
def query(keyed_home: Path) -> Iterator[TestClient]:
    with TestClient(create_app(ServiceSettings(home=keyed_home))) as client:
        yield client


def _answer(client: TestClient) -> dict[str, Any]:
    response = client.get("/v1/supported-formats", headers=BEARER)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    SupportedFormats.model_validate(body)
    return body


def test_the_upload_api_answers_the_registry_as_available_here(upload, corpus_home):
    expected = capabilities(load_settings(home=corpus_home)).model_dump(mode="json")
    assert _answer(upload) == expected
    assert {entry["strategy"] for entry in expected["formats"]} == STRATEGIES


def test_the_query_service_answers_as_the_upload_api_does(upload, query):
    assert _answer(query) == _answer(upload)


@pytest.mark.parametrize("app", ["upload", "query"])
def test_the_route_needs_a_key(app: str, request: pytest.FixtureRequest):
    client: TestClient = request.getfixturevalue(app)
    assert client.get("/v1/supported-formats").status_code == 401


def test_both_routes_say_when_libreoffice_is_missing(no_libreoffice, keyed_home):
    with (
        TestClient(create_ingest_app(no_libreoffice, worker=False)) as upload,
        TestClient(create_app(ServiceSettings(home=keyed_home))) as query,
    ):
        for client in (upload, query):
            entries = {e["strategy"]: e for e in _answer(client)["formats"]}
            assert [entries[s]["available"] for s in sorted(LEGACY)] == [False] * 3


def test_corpus_formats_json_is_the_http_answer(upload):
    result = CliRunner().invoke(main, ["formats", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == _answer(upload)


def test_corpus_formats_prints_each_format_and_what_is_missing(no_libreoffice):
    result = CliRunner().invoke(main, ["formats"])
    assert result.exit_code == 0, result.output
    for spec in FORMATS:
        assert re.search(rf"\.{spec.extensions[0]}\b", result.output), spec.strategy
    assert result.output.count("no: needs LibreOffice") == len(LEGACY)
    assert "-- LibreOffice  CORPUS_LIBREOFFICE_PATH names no program here" in result.output


# -- docs/architecture.md ----------------------------------------------------------------------


def _mark(value: bool) -> str:
    return "yes" if value else "no"


def _row(spec: FormatSpec) -> str:
    tables = ("with spans" if spec.table_spans else "yes") if spec.tables else "no"
    cells = [
        spec.name,
        f"`{spec.strategy}`",
        ", ".join(f"`.{ext}`" for ext in spec.extensions),
        spec.headings or "none",
        tables,
        _mark(spec.images),
        "with Tesseract" if spec.ocr else "no",
        "LibreOffice" if spec.requires == "libreoffice" else "-",
    ]
    return "| " + " | ".join(cells) + " |"


def registry_table() -> str:
    """The registry as the Markdown table docs/architecture.md holds."""
    header = "| format | strategy | extensions | headings | tables | images | OCR | needs |"
    rule = "| --- | --- | --- | --- | --- | --- | --- | --- |"
    return "\n".join([header, rule, *(_row(spec) for spec in FORMATS)])


def test_the_architecture_docs_hold_the_registrys_table():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("<!-- supported-formats:start -->") + len("<!-- supported-formats:start -->")
    end = text.index("<!-- supported-formats:end -->")
    assert text[start:end].strip() == registry_table(), "\n" + registry_table()
