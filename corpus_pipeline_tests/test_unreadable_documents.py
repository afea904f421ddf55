"""Documents that yield no text end in error with a reason the user can act on (blank pages,
whitespace, pictures only, a scan without OCR), never as `done` with no chunks; an encrypted
PDF is opened with the upload API's `password` field, which never reaches a disk, a job row
or a message."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import dagster as dg
import pymupdf as _pymupdf
import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import dagster_instance
from corpus_pipeline.storage.store import ObjectStore
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision

from .http_service import CORPUS_CLI, finished_job, served
from .support import needs_tesseract, pdf_data

mu: Any = _pymupdf
SECRET = "Kx8-open-sesame-Q2"


def _blank_pdf(pages: int) -> bytes:
    doc = mu.open()
    for _ in range(pages):
        doc.new_page()
    return pdf_data(doc)


def _text_page(lines: list[str]) -> Any:
    doc = mu.open()
    page = doc.new_page()
    for n, line in enumerate(lines):
        page.insert_text((72, 100 + 30 * n), line, fontsize=14)
    return doc


def _scanned_pdf() -> bytes:
    """A page of text as a scanner delivers it: one picture, no text layer."""
    text = _text_page(["Quarterly inspection report", "The pump station passed every check."])
    picture = text[0].get_pixmap(dpi=200)
    doc = mu.open()
    page = doc.new_page(width=text[0].rect.width, height=text[0].rect.height)
    page.insert_image(page.rect, pixmap=picture)
    return pdf_data(doc)


def _picture_pdf() -> bytes:
    """A page holding one photo-like gradient: an image with no text in it."""
    samples = bytes(
        v for y in range(300) for x in range(300) for v in (x * 255 // 300, y * 255 // 300, 128)
    )
    doc = mu.open()
    doc.new_page().insert_image(
        mu.Rect(50, 50, 500, 500), pixmap=mu.Pixmap(mu.csRGB, 300, 300, samples, False)
    )
    return pdf_data(doc)


def _locked_pdf(text: str) -> bytes:
    doc = _text_page([text])
    data = doc.tobytes(encryption=mu.PDF_ENCRYPT_AES_256, user_pw=SECRET, owner_pw="owner-pw")
    doc.close()
    return bytes(data)


def _ingest_one(settings: CorpusSettings, tmp_path: Path, name: str, data: bytes) -> Any:
    path = tmp_path / name
    path.write_bytes(data)
    [result] = ingest([path], settings)
    return result


def test_a_pdf_of_blank_pages_fails_naming_the_file_and_its_blank_pages(
    settings: CorpusSettings, tmp_path: Path
) -> None:
    result = _ingest_one(settings, tmp_path, "minutes.pdf", _blank_pdf(2))
    assert result.status == "failed"
    assert result.error == "no text in 'minutes.pdf': its 2 pages are blank"
    assert not (settings.artifacts_dir / result.document_id).exists(), "nothing committed"


def test_the_dagster_run_of_a_document_without_text_fails(
    settings: CorpusSettings, tmp_path: Path
) -> None:
    result = _ingest_one(settings, tmp_path, "minutes.pdf", _blank_pdf(1))
    [run] = dagster_instance(settings).get_runs(
        dg.RunsFilter(tags={"dagster/partition": result.document_id})
    )
    assert run.status is dg.DagsterRunStatus.FAILURE


def test_a_file_of_whitespace_fails_as_empty(settings: CorpusSettings, tmp_path: Path) -> None:
    result = _ingest_one(settings, tmp_path, "notes.txt", b"  \n\n   \n")
    assert result.status == "failed"
    assert result.error == "no text in 'notes.txt': it is empty (no text, tables or images)"


@needs_tesseract
def test_a_pdf_of_pictures_without_text_fails_saying_it_holds_only_images(
    settings: CorpusSettings, tmp_path: Path
) -> None:
    result = _ingest_one(settings, tmp_path, "photo.pdf", _picture_pdf())
    assert result.status == "failed"
    assert result.error.startswith("no text in 'photo.pdf': it holds only images (1)")
    assert "CORPUS_IMAGE_DESCRIPTION__MODEL" in result.error, "what to do about it"


@pytest.mark.slow
def test_a_scan_without_tesseract_fails_telling_how_to_install_ocr(tmp_path: Path) -> None:
    scan = tmp_path / "inspection.pdf"
    scan.write_bytes(_scanned_pdf())
    no_programs = tmp_path / "empty-path"
    no_programs.mkdir()
    env = {**os.environ, "CORPUS_HOME": str(tmp_path / "home"), "PATH": str(no_programs)}
    env.pop("CORPUS_OBJECT_STORE_URL", None)
    done = subprocess.run(
        [str(CORPUS_CLI), "ingest", str(scan)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    out = " ".join(done.stdout.split())
    assert "no text in 'inspection.pdf': its pages are scanned images and OCR is unavailable" in out
    assert "install it (`make system-deps`, or the tesseract-ocr package)" in out


@pytest.mark.slow
def test_an_upload_without_text_ends_its_job_in_error_naming_the_file(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings) as client:
        response = client.post("/v1/documents", files={"files": ("cover.pdf", _blank_pdf(1))})
        [queued] = response.json()["files"]
        job = finished_job(client, queued["job_id"])
    assert job["status"] == "error"
    assert job["error_message"] == "no text in 'cover.pdf': its page is blank"


def test_an_encrypted_upload_without_password_is_refused_naming_the_file_and_the_field(
    tmp_path: Path,
) -> None:
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings, worker=False) as client:
        response = client.post("/v1/documents", files={"files": ("locked.pdf", _locked_pdf("x"))})
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("'locked.pdf': encrypted pdf document: a password is needed")
    assert "`password` form field" in detail
    assert ObjectStore(settings.object_store).list("sources") == [], "nothing stored"


@pytest.mark.slow
def test_an_encrypted_upload_with_its_password_is_searchable_and_the_password_kept_nowhere(
    tmp_path: Path,
) -> None:
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings) as client:
        response = client.post(
            "/v1/documents",
            files={"files": ("locked.pdf", _locked_pdf("Confidential merger timeline"))},
            data={"password": SECRET},
        )
        assert response.status_code == 202, response.text
        [queued] = response.json()["files"]
        job = finished_job(client, queued["job_id"])
    assert job["status"] == "done", job
    revision = open_revision(settings.published_dir, "default")
    [hit] = classic_search(revision, SearchRequest(query="merger timeline", top_k=1)).results
    assert hit.document_id == queued["document_id"]
    for file in settings.home.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file


@pytest.mark.slow
def test_a_wrong_password_ends_the_job_in_error_naming_the_file_and_the_field(
    tmp_path: Path,
) -> None:
    settings = load_settings(home=tmp_path / "home", open_access=True)
    wrong = "not-the-Kx8-password"
    with served(settings) as client:
        response = client.post(
            "/v1/documents",
            files={"files": ("locked.pdf", _locked_pdf("Confidential merger timeline"))},
            data={"password": wrong},
        )
        [queued] = response.json()["files"]
        job = finished_job(client, queued["job_id"])
    message = str(job["error_message"])
    assert job["status"] == "error"
    assert message.startswith("'locked.pdf': encrypted pdf document: the password is wrong")
    assert "`password` form field" in message
    assert wrong not in message and SECRET not in message
    for file in settings.home.rglob("*"):
        if file.is_file():
            assert wrong.encode() not in file.read_bytes(), file
