"""The upload API over HTTP (uvicorn on a loopback port): 202 with queued jobs, processing in the
background to a published revision, refusals at the door that store nothing, write keys. Tests
of everything but keys run with open access (the local user; no key file)."""

from __future__ import annotations

import io
import time
import zipfile
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision

from .http_service import finished_job, served, write_api_keys
from .support import DOCS


def _stored(settings: CorpusSettings) -> list[str]:
    return [
        r.source_file_name for r in SourceRegistry(ObjectStore(settings.object_store)).records()
    ]


def _upload_one(client: httpx.Client, name: str, data: bytes) -> dict[str, Any]:
    """POST one file; its entry of the 202 answer."""
    response = client.post("/v1/documents", files={"files": (name, data)})
    assert response.status_code == 202, response.text
    [queued] = response.json()["files"]
    return dict(queued)


@pytest.mark.slow
def test_an_upload_is_queued_at_once_and_processed_to_a_published_revision(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings) as client:
        response = client.post(
            "/v1/documents",
            files={"files": ("../../notes.md", b"# Ducks\n\nTufted ducks dive for mussels.\n")},
            data={"namespace": "birds"},
        )
        assert response.status_code == 202
        [queued] = response.json()["files"]
        assert queued["status"] == "queued" and queued["source_file_name"] == "notes.md"
        job = finished_job(client, queued["job_id"])
        assert job["status"] == "done" and job["revision"] == 1, job
        assert job["started_at"] and job["finished_at"]
        status = client.get("/v1/namespaces/birds/ingestion").json()
        assert status == {"namespace": "birds", "state": "complete", "counts": {"done": 1}}
    revision = open_revision(settings.published_dir, "birds")
    [hit] = classic_search(revision, SearchRequest(query="tufted ducks mussels", top_k=1)).results
    assert hit.document_id == queued["document_id"], "searchable once the job is done"


@pytest.mark.parametrize(
    ("name", "data", "status", "detail"),
    [
        ("report.pdf", (DOCS / "word_sample.docx").read_bytes(), 415, "is docx by its bytes"),
        ("empty.md", b"", 400, "'empty.md' is empty"),
        ("blob.bin", bytes(range(256)) * 8, 415, "unsupported format 'unknown'"),
    ],
)
def test_a_refused_file_stores_nothing_and_names_the_reason(
    tmp_path: Path, name: str, data: bytes, status: int, detail: str
):
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings, worker=False) as client:
        response = client.post(
            "/v1/documents",
            files=[("files", ("ok.md", b"# fine\n\ntext\n")), ("files", (name, data))],
        )
    assert response.status_code == status and detail in response.json()["detail"]
    assert _stored(settings) == [], "the good file of a refused request is not stored either"


def test_a_file_above_the_upload_limit_is_413(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home", open_access=True, max_upload_mb=1)
    with served(settings, worker=False) as client:
        big = b"# Big\n\n" + b"words " * 200_000
        response = client.post("/v1/documents", files={"files": ("big.md", big)})
    assert response.status_code == 413 and "above the limit of 1 MiB" in response.json()["detail"]
    assert _stored(settings) == []


def test_an_archive_is_one_job_per_document_member(tmp_path: Path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a/one.md", "# One\n\ntext\n")
        archive.writestr("two.md", "# Two\n\ntext\n")
        archive.writestr("tool.bin", bytes(range(256)) * 4)
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings, worker=False) as client:
        response = client.post("/v1/documents", files={"files": ("batch.zip", buffer.getvalue())})
    files = response.json()["files"]
    assert response.status_code == 202
    assert [(f["source_file_name"], f["status"]) for f in files] == [
        ("batch.zip/a/one.md", "queued"),
        ("batch.zip/two.md", "queued"),
        ("batch.zip/tool.bin", "skipped"),
    ]


def test_writing_needs_a_key_with_write_access(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home")
    write_api_keys(
        settings.home,
        {"reader": ("r", ["birds"]), "writer": ("w", ["birds"])},
        {"writer": ["birds"]},
    )
    upload = {"files": ("n.md", b"# N\n\ntext\n")}
    with served(settings, worker=False) as client:
        assert client.post("/v1/documents", files=upload).status_code == 401
        as_reader = {"Authorization": "Bearer reader"}
        forbidden = client.post(
            "/v1/documents", files=upload, data={"namespace": "birds"}, headers=as_reader
        )
        assert forbidden.status_code == 403
        as_writer = {"Authorization": "Bearer writer"}
        hidden = client.post(
            "/v1/documents", files=upload, data={"namespace": "fish"}, headers=as_writer
        )
        assert hidden.status_code == 404, "a namespace the key cannot read does not exist"
        ok = client.post(
            "/v1/documents", files=upload, data={"namespace": "birds"}, headers=as_writer
        )
        assert ok.status_code == 202


def _broken_docx() -> bytes:
    """Passes the door (a ZIP with a Word part) and fails in the parser."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document> not xml")
    return buffer.getvalue()


@pytest.mark.slow
def test_a_failed_job_says_why_and_can_be_retried_from_its_stored_original(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings) as client:
        queued = _upload_one(client, "broken.docx", _broken_docx())
        failed = finished_job(client, queued["job_id"])
        assert failed["status"] == "error"
        assert failed["error_message"] == (
            "'broken.docx': corrupt docx document: malformed package part (AttributeError)"
        )
        again = client.post(f"/v1/jobs/{queued['job_id']}/retry")
        assert again.status_code == 202 and again.json()["status"] == "queued"
        assert finished_job(client, queued["job_id"])["status"] == "error"
        ok = _upload_one(client, "n.md", b"# N\n\nok\n")
        assert finished_job(client, ok["job_id"])["status"] == "done"
        not_failed = client.post(f"/v1/jobs/{ok['job_id']}/retry")
        assert not_failed.status_code == 400 and "did not fail" in not_failed.json()["detail"]


@pytest.mark.slow
def test_deleting_a_document_publishes_a_revision_without_it(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings) as client:
        queued = _upload_one(client, "n.md", b"# N\n\nTufted ducks.\n")
        assert finished_job(client, queued["job_id"])["revision"] == 1
        removal = client.delete(f"/v1/documents/{queued['document_id']}")
        assert removal.status_code == 202 and removal.json()["kind"] == "delete"
        done = finished_job(client, removal.json()["job_id"])
        assert done["status"] == "done" and done["revision"] == 2
        assert client.delete(f"/v1/documents/{queued['document_id']}").status_code == 404
    assert _stored(settings) == []
    assert ObjectStore(settings.object_store).list("sources") == [], "its bytes are gone too"
    assert not (settings.artifacts_dir / queued["document_id"]).exists()


def test_a_replacement_keeps_the_document_id_and_the_date_is_recorded(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings, worker=False) as client:
        [first] = client.post(
            "/v1/documents",
            files={"files": ("q3.md", b"# Q3\n\nfirst\n")},
            data={"document_date": "2023-07-01"},
        ).json()["files"]
        replaced = client.post(
            "/v1/documents",
            files={"files": ("q3-final.md", b"# Q3\n\nfinal\n")},
            data={"replace_document_id": first["document_id"], "document_date": "2023-09-30"},
        )
        assert replaced.status_code == 202
        [second] = replaced.json()["files"]
        assert second["document_id"] == first["document_id"] and second["job_id"] != first["job_id"]
        missing = client.post(
            "/v1/documents",
            files={"files": ("x.md", b"# X\n\nx\n")},
            data={"replace_document_id": "no-such-doc"},
        )
        assert missing.status_code == 404
    [record] = SourceRegistry(ObjectStore(settings.object_store)).records()
    assert record.source_file_name == "q3.md" and record.size_bytes == len(b"# Q3\n\nfinal\n")
    assert record.document_date == date(2023, 9, 30)


@pytest.mark.slow
def test_a_job_whose_worker_is_killed_runs_again_and_completes_once(tmp_path: Path):
    import multiprocessing

    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings) as client:
        queued = _upload_one(client, "n.md", b"# N\n\nTufted ducks dive.\n")
        deadline = time.monotonic() + 60
        while client.get(f"/v1/jobs/{queued['job_id']}").json()["status"] != "processing":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        workers = multiprocessing.active_children()  # the API's spawned worker process
        assert workers, "the job runs in a spawned worker process"
        for worker in workers:  # as the OOM killer would
            worker.kill()
        done = finished_job(client, queued["job_id"])  # an interrupted attempt: queued again
        assert (done["status"], done["attempts"]) == ("done", 2), done
    revision = open_revision(settings.published_dir, "default")
    hits = classic_search(revision, SearchRequest(query="tufted ducks dive", top_k=10)).results
    assert len({h.chunk_id for h in hits}) == len(hits) and hits, "no duplicate chunks"
    assert {h.document_id for h in hits} == {queued["document_id"]}
