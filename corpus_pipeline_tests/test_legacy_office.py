"""Legacy Office files through a managed LibreOffice (`parsing.legacy`).

The legacy files are real: LibreOffice itself writes them, once per session, from a DOCX, a PPTX
and an XLSX generated here. They are sniffed by their OLE2 streams, routed, converted back and
read by the modern parsers (headings, tables, slide titles, cells), and the manifest records the
conversion. A conversion past its time limit is stopped with its whole process group, at most
`libreoffice_max_parallel` conversions run at once (both shown with a stand-in `soffice` script
that sleeps and logs), and without LibreOffice the door refuses these files, for `corpus ingest`
and for the upload API, before anything is stored.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pptx
import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts import FileFormat, Manifest, RowType
from corpus_pipeline.intake.door import Refused, admit
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.legacy import (
    ConversionError,
    converted,
    libreoffice_available,
    parse_legacy,
)
from corpus_pipeline.profiling import profile_source, sniff_format
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

from .http_service import CORPUS_CLI, served
from .support import bare_profile, build_documents, tables_of

# The conversion tests skip on a developer's machine without LibreOffice; never on CI (`CI`
# set), where `make test` installs it (`make system-deps`): there they fail instead.
needs_libreoffice = pytest.mark.skipif(
    not libreoffice_available(load_settings()) and not os.environ.get("CI"),
    reason="LibreOffice is not installed",
)
pytestmark = needs_libreoffice


# -- the legacy files, written by LibreOffice from generated modern ones -------------------------


def _report_docx(path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "Duck Survey 2003"
    document.add_heading("Duck Survey 2003", 1)
    document.add_paragraph("Tufted ducks were counted on three ponds in May.")
    document.add_heading("Counts by pond", 2)
    table = document.add_table(rows=3, cols=2)
    for r, (pond, ducks) in enumerate((("Pond", "Ducks"), ("Mill pond", "14"), ("Lake", "9"))):
        table.cell(r, 0).text = pond
        table.cell(r, 1).text = ducks
    document.add_heading("Method", 2)
    document.add_paragraph("Two observers walked each shore at dawn.")
    document.save(str(path))


def _deck_pptx(path: Path) -> None:
    deck = pptx.Presentation()
    for title, body in (
        ("Quarterly Review", "Revenue grew by a tenth on duck feed sales."),
        ("Outlook for 2004", "Two new ponds open in spring."),
    ):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        assert slide.shapes.title is not None
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = body
    deck.save(str(path))


def _survey_xlsx(path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Survey"
    for row in (("Pond", "Ducks"), ("Mill pond", 14), ("Lake", 9)):
        sheet.append(row)
    book.save(str(path))


@pytest.fixture(scope="session")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """report.doc, deck.ppt and survey.xls as LibreOffice writes them (side by side, each
    with a profile of its own): extension → path."""
    root = tmp_path_factory.mktemp("legacy")
    binary = shutil.which("soffice") or shutil.which("libreoffice")
    assert binary is not None
    sources = {"doc": root / "report.docx", "ppt": root / "deck.pptx", "xls": root / "survey.xlsx"}
    _report_docx(sources["doc"])
    _deck_pptx(sources["ppt"])
    _survey_xlsx(sources["xls"])
    runs = [
        subprocess.Popen(
            [
                binary,
                f"-env:UserInstallation={(root / f'profile-{ext}').as_uri()}",
                "--headless",
                "--norestore",
                "--convert-to",
                ext,
                "--outdir",
                str(root / "out"),
                str(source),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for ext, source in sources.items()
    ]
    for run in runs:
        assert run.wait(timeout=180) == 0
    out = {ext: root / "out" / f"{source.stem}.{ext}" for ext, source in sources.items()}
    assert all(path.is_file() for path in out.values()), out
    return out


def _flagged_encrypted(xls: Path, target: Path) -> Path:
    """A copy of a workbook whose globals declare it encrypted (its INTERFACEHDR record retyped
    as FILEPASS, same length): xlrd refuses it ("Workbook is encrypted")."""
    data = xls.read_bytes()
    bof = data.index(b"\x09\x08\x10\x00\x00\x06")  # BIFF8 workbook globals BOF
    header = data.index(b"\xe1\x00\x02\x00", bof)  # INTERFACEHDR, 2 bytes
    target.write_bytes(data[:header] + struct.pack("<H", 0x2F) + data[header + 2 :])
    return target


# -- sniffing and routing -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ext", "fmt"), [("doc", FileFormat.DOC), ("ppt", FileFormat.PPT), ("xls", FileFormat.XLS)]
)
def test_an_ole2_file_is_told_apart_by_its_streams_not_its_name(
    legacy: dict[str, Path], ext: str, fmt: FileFormat
):
    sniffed = sniff_format(legacy[ext].read_bytes(), "bin")
    assert sniffed.format is fmt
    assert "OLE2 container with a" in sniffed.evidence


def test_legacy_word_and_powerpoint_are_routed_to_libreoffice(legacy: dict[str, Path]):
    for ext in ("doc", "ppt"):
        profile = profile_source(legacy[ext]).profile
        assert profile.needs_conversion
        assert profile.routing.strategy == ext
        assert "converted by LibreOffice" in profile.routing.reason


def test_an_xls_xlrd_reads_stays_with_xlrd(legacy: dict[str, Path]):
    profile = profile_source(legacy["xls"]).profile
    assert (profile.routing.strategy, profile.needs_conversion) == ("xls", False)


def test_an_xls_xlrd_cannot_read_is_routed_to_libreoffice(legacy: dict[str, Path], tmp_path):
    flagged = _flagged_encrypted(legacy["xls"], tmp_path / "locked.xls")
    profile = profile_source(flagged).profile
    assert (profile.format, profile.routing.strategy) == (FileFormat.XLS, "xls_legacy")
    assert profile.needs_conversion


# -- conversion and the modern parsers ------------------------------------------------------------


def _parse(path: Path, fmt: FileFormat, strategy: str, settings: CorpusSettings) -> ParseContext:
    ctx = ParseContext(
        source_path=path,
        source_file_name=path.name,
        profile=bare_profile(path, fmt, strategy),
        workdir=path.parent / f"work-{path.stem}",
        settings=settings,
    )
    parse_legacy(ctx)
    return ctx


def test_a_workbook_through_libreoffice_keeps_its_cells(legacy: dict[str, Path], settings):
    # The route of an .xls xlrd refuses, taken by one it reads: no workbook that LibreOffice
    # reads and xlrd refuses can be written here (LibreOffice writes only BIFF8).
    ctx = _parse(legacy["xls"], FileFormat.XLS, "xls_legacy", settings)
    assert [r.text for r in ctx.rows if r.row_type is RowType.HEADING] == ["Survey"]
    (table,) = tables_of(ctx)
    html = str(table["html"])
    assert "<th>Pond</th><th>Ducks</th>" in html
    assert "<td>Mill pond</td><td>14</td>" in html and "<td>Lake</td><td>9</td>" in html
    assert ctx.conversion is not None
    assert (ctx.conversion.from_format, ctx.conversion.to_format) == (
        FileFormat.XLS,
        FileFormat.XLSX,
    )


def test_a_file_libreoffice_cannot_load_fails_naming_the_file_and_libreoffice(
    legacy: dict[str, Path], settings, tmp_path
):
    flagged = _flagged_encrypted(legacy["xls"], tmp_path / "locked.xls")
    with pytest.raises(ConversionError) as raised:
        _parse(flagged, FileFormat.XLS, "xls_legacy", settings)
    message = str(raised.value)
    assert message.startswith("'locked.xls' could not be converted by LibreOffice: ")
    assert "produced no xlsx" in message
    assert str(tmp_path) not in message, "no paths in messages"


@pytest.fixture(scope="module")
def ingested(
    legacy: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[CorpusSettings, dict[str, Any]]:
    """The three legacy files ingested as every document is (Dagster runs, parse workers)."""
    settings = load_settings(home=tmp_path_factory.mktemp("legacy-home") / "home")
    records = build_documents(settings, {p.name: p.read_bytes() for p in legacy.values()})
    return settings, records


def _artifact(ingested: tuple[CorpusSettings, dict[str, Any]], name: str, file: str) -> Any:
    settings, records = ingested
    path = settings.artifacts_dir / records[name].document_id / file
    return json.loads(path.read_text(encoding="utf-8"))


def _chunks(ingested: tuple[CorpusSettings, dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return list(_artifact(ingested, name, "chunks.json")["chunks"])


@pytest.mark.slow
def test_an_ingested_doc_keeps_its_headings_and_its_table(ingested):
    chunks = _chunks(ingested, "report.doc")
    paths = {tuple(c["hierarchy_path"]) for c in chunks}
    assert ("Duck Survey 2003", "Counts by pond") in paths
    assert ("Duck Survey 2003", "Method") in paths
    [table] = [c for c in chunks if c["chunk_type"] == "table"]
    assert table["hierarchy_path"] == ["Duck Survey 2003", "Counts by pond"]
    assert "Mill pond" in table["content"] and "14" in table["content"]
    assert any("Two observers walked each shore" in c["content"] for c in chunks)


@pytest.mark.slow
def test_an_ingested_ppt_has_one_section_per_slide_titled_by_it(ingested):
    chunks = _chunks(ingested, "deck.ppt")
    by_section = {c["hierarchy_path"][0]: c["content"] for c in chunks if c["hierarchy_path"]}
    assert "duck feed" in by_section["Quarterly Review"]
    assert "Two new ponds" in by_section["Outlook for 2004"]


@pytest.mark.slow
def test_an_ingested_xls_keeps_its_cells(ingested):
    [table] = [c for c in _chunks(ingested, "survey.xls") if c["chunk_type"] == "table"]
    assert table["hierarchy_path"] == ["Survey"]
    assert "Mill pond" in table["content"] and "Lake" in table["content"]


@pytest.mark.slow
def test_the_manifest_records_the_conversion(ingested):
    manifest = Manifest.model_validate(_artifact(ingested, "report.doc", "manifest.json"))
    assert manifest.parser == "doc"
    conversion = manifest.conversion
    assert conversion is not None
    assert (conversion.tool, conversion.from_format, conversion.to_format) == (
        "LibreOffice",
        FileFormat.DOC,
        FileFormat.DOCX,
    )
    assert conversion.version and conversion.version[0].isdigit()
    assert 0 < conversion.seconds < 120
    assert manifest.title == "Duck Survey 2003"


@pytest.mark.slow
def test_a_workbook_xlrd_reads_is_not_converted(ingested):
    manifest = Manifest.model_validate(_artifact(ingested, "survey.xls", "manifest.json"))
    assert (manifest.parser, manifest.conversion) == ("xls", None)


# -- the managed process: time limit, parallel limit ----------------------------------------------

# A stand-in for `soffice`: answers `--version`; a conversion logs "<start|end> <pid> <process
# group> <time>" beside it, sleeps SLEEP seconds (also in a child it leaves running), then
# writes the file LibreOffice would have written (its input under the target's extension).
_STAND_IN = """#!/bin/sh
[ "$1" = "--version" ] && { echo "LibreOffice 0.1.2.3 stand-in"; exit 0; }
here=$(dirname "$0")
group=$(cut -d' ' -f5 /proc/$$/stat)
echo "start $$ $group $(date +%s.%N)" >> "$here/log"
outdir=""; target=""; prev=""
for arg in "$@"; do
  [ "$prev" = "--outdir" ] && outdir=$arg
  [ "$prev" = "--convert-to" ] && target=$arg
  prev=$arg; last=$arg
done
sleep SLEEP &
sleep SLEEP
mkdir -p "$outdir"; name=$(basename "$last"); cp "$last" "$outdir/${name%.*}.$target"
echo "end $$ $group $(date +%s.%N)" >> "$here/log"
"""


def _stand_in(folder: Path, seconds: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "soffice"
    script.write_text(_STAND_IN.replace("SLEEP", f"{seconds:g}"))
    script.chmod(0o755)
    return script


def _log(folder: Path) -> dict[str, dict[str, float]]:
    """pid → {"start": t, "end": t, "group": process group} from the stand-in's log."""
    runs: dict[str, dict[str, float]] = {}
    for line in (folder / "log").read_text().splitlines():
        event, pid, group, stamp = line.split()
        runs.setdefault(pid, {"group": int(group)})[event] = float(stamp)
    return runs


def _group_members(pgid: int) -> list[int]:
    """Live processes (zombies aside) of one process group, from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def test_a_conversion_past_its_time_limit_is_stopped_with_its_process_group(
    legacy: dict[str, Path], corpus_home: Path, tmp_path
):
    script = _stand_in(tmp_path / "bin", 30)
    settings = load_settings(
        home=corpus_home, libreoffice_path=str(script), libreoffice_timeout_seconds=1
    )
    started = time.monotonic()
    with (
        pytest.raises(ConversionError, match=r"exceeded its time limit of 1 s"),
        converted(legacy["doc"], FileFormat.DOC, "report.doc", settings),
    ):
        pass
    assert time.monotonic() - started < 10
    [run] = _log(script.parent).values()
    assert _group_members(int(run["group"])) == [], "the stand-in and its child were killed"


_CALLER = """
import sys
from pathlib import Path
from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.parsing.legacy import converted

settings = load_settings(home=Path(sys.argv[1]), libreoffice_path=sys.argv[2])
with converted(Path(sys.argv[3]), FileFormat.DOC, "report.doc", settings):
    pass
"""


def test_a_caller_killed_mid_conversion_leaves_no_process_behind(
    legacy: dict[str, Path], corpus_home: Path, tmp_path
):
    script = _stand_in(tmp_path / "bin", 30)
    caller = subprocess.Popen(
        [sys.executable, "-c", _CALLER, str(corpus_home), str(script), str(legacy["doc"])]
    )
    deadline = time.monotonic() + 60
    while not (script.parent / "log").is_file():
        assert time.monotonic() < deadline and caller.poll() is None
        time.sleep(0.05)
    [run] = _log(script.parent).values()
    assert _group_members(int(run["group"])), "the stand-in runs"
    caller.kill()  # SIGKILL: no handler of the caller runs
    caller.wait()
    deadline = time.monotonic() + 10
    while _group_members(int(run["group"])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _group_members(int(run["group"])) == []


def test_the_next_conversion_removes_the_folder_a_killed_caller_left(
    legacy: dict[str, Path], corpus_home: Path, tmp_path
):
    script = _stand_in(tmp_path / "bin", 30)
    caller = subprocess.Popen(
        [sys.executable, "-c", _CALLER, str(corpus_home), str(script), str(legacy["doc"])]
    )
    runs = corpus_home / "work" / "libreoffice" / "runs"
    deadline = time.monotonic() + 60
    while not (script.parent / "log").is_file():
        assert time.monotonic() < deadline and caller.poll() is None
        time.sleep(0.05)
    caller.kill()
    caller.wait()
    [left] = runs.glob(f"run-{caller.pid}-*")
    settings = load_settings(home=corpus_home, libreoffice_path=str(_stand_in(tmp_path, 0)))
    with converted(legacy["doc"], FileFormat.DOC, "report.doc", settings) as result:
        assert result.path.parent.parent.parent == runs
    assert not left.exists()


def _convert_two_at_once(legacy: dict[str, Path], settings: CorpusSettings) -> None:
    def one() -> None:
        with converted(legacy["doc"], FileFormat.DOC, "report.doc", settings) as result:
            assert result.path.read_bytes() == legacy["doc"].read_bytes()

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)


def test_with_one_slot_two_conversions_run_one_after_the_other(
    legacy: dict[str, Path], corpus_home: Path, tmp_path
):
    script = _stand_in(tmp_path / "bin", 0.5)
    settings = load_settings(
        home=corpus_home, libreoffice_path=str(script), libreoffice_max_parallel=1
    )
    _convert_two_at_once(legacy, settings)
    first, second = sorted(_log(script.parent).values(), key=lambda run: run["start"])
    assert first["end"] <= second["start"]


def test_with_two_slots_two_conversions_run_side_by_side(
    legacy: dict[str, Path], corpus_home: Path, tmp_path
):
    script = _stand_in(tmp_path / "bin", 0.5)
    settings = load_settings(
        home=corpus_home, libreoffice_path=str(script), libreoffice_max_parallel=2
    )
    _convert_two_at_once(legacy, settings)
    first, second = sorted(_log(script.parent).values(), key=lambda run: run["start"])
    assert second["start"] < first["end"]


# -- the door without LibreOffice -----------------------------------------------------------------


def test_without_libreoffice_the_door_refuses_legacy_word_and_powerpoint(legacy):
    for ext, kind in (("doc", "legacy Word .doc"), ("ppt", "legacy PowerPoint .ppt")):
        with pytest.raises(Refused) as refused:
            admit(f"old.{ext}", legacy[ext].read_bytes(), max_bytes=1 << 30, libreoffice=False)
        assert refused.value.status == 415
        assert str(refused.value).startswith(f"'old.{ext}' is a {kind}: it needs LibreOffice, ")
        assert "not installed on this deployment" in str(refused.value)


def test_without_libreoffice_an_xls_is_refused_only_when_xlrd_cannot_read_it(legacy, tmp_path):
    readable = legacy["xls"].read_bytes()
    assert admit("survey.xls", readable, max_bytes=1 << 30, libreoffice=False).format is (
        FileFormat.XLS
    )
    locked = _flagged_encrypted(legacy["xls"], tmp_path / "locked.xls").read_bytes()
    with pytest.raises(Refused, match=r"xlrd cannot read \(XLRDError: Workbook is encrypted\)"):
        admit("locked.xls", locked, max_bytes=1 << 30, libreoffice=False)


def test_a_truncated_doc_is_refused_as_damaged(legacy):
    with pytest.raises(Refused) as refused:
        admit("report.doc", legacy["doc"].read_bytes()[:700], max_bytes=1 << 30)
    assert refused.value.status == 400
    assert str(refused.value) == "corrupt doc document: truncated or damaged (OLE2 container)"


def _path_without_libreoffice() -> str:
    return os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if not any((Path(d) / name).exists() for name in ("soffice", "libreoffice"))
    )


def _stored(settings: CorpusSettings) -> list[str]:
    registry = SourceRegistry(ObjectStore(settings.object_store))
    return [r.source_file_name for r in registry.records()]


@pytest.mark.slow
def test_corpus_ingest_without_libreoffice_refuses_a_doc_and_stores_nothing(legacy, tmp_path):
    home = tmp_path / "home"
    env = {
        **os.environ,
        "CORPUS_HOME": str(home),
        "CORPUS_LIBREOFFICE_PATH": str(tmp_path / "missing" / "soffice"),
        "PATH": _path_without_libreoffice(),
    }
    env.pop("CORPUS_OBJECT_STORE_URL", None)
    done = subprocess.run(
        [str(CORPUS_CLI), "ingest", str(legacy["doc"]), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0
    [line] = [json.loads(out) for out in done.stdout.splitlines() if out.startswith("{")]
    assert line["status"] == "failed" and line["document_id"] is None
    assert "is a legacy Word .doc: it needs LibreOffice" in line["error"]
    assert _stored(load_settings(home=home)) == []


@pytest.mark.slow
def test_ingest_with_a_missing_configured_libreoffice_refuses_a_ppt(legacy, tmp_path):
    settings = load_settings(
        home=tmp_path / "home", libreoffice_path=str(tmp_path / "missing" / "soffice")
    )
    (result,) = ingest([legacy["ppt"]], settings)
    assert result.status == "failed" and result.document_id is None
    assert result.error is not None and "legacy PowerPoint .ppt: it needs LibreOffice" in (
        result.error
    )
    assert _stored(settings) == []


@pytest.mark.slow
def test_the_upload_api_without_libreoffice_refuses_a_doc_and_stores_nothing(legacy, tmp_path):
    settings = load_settings(
        home=tmp_path / "home",
        open_access=True,
        libreoffice_path=str(tmp_path / "missing" / "soffice"),
    )
    with served(settings, worker=False) as client:
        response = client.post(
            "/v1/documents", files={"files": ("report.doc", legacy["doc"].read_bytes())}
        )
    assert response.status_code == 415
    assert "is a legacy Word .doc: it needs LibreOffice" in response.json()["detail"]
    assert _stored(settings) == []
