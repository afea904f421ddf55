"""Identity is never silently shared: an uploaded document's id derives from its name as sent
(two names that sanitise to one label stay two documents), a name already registered is
refused unless the upload says which document it replaces, and a replaced document's old bytes
are removed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pymupdf as _pymupdf
import pytest

from corpus_pipeline.common.ids import sha256_bytes
from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts import SourceKind
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry, blob_key
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision

from .http_service import finished_job, served
from .support import pdf_data

mu: Any = _pymupdf


def _pdf(text: str) -> bytes:
    doc = mu.open()
    doc.new_page().insert_text((72, 100), text, fontsize=12)
    return pdf_data(doc)


def _upload(client: httpx.Client, name: str, data: bytes, **form: str) -> httpx.Response:
    return client.post("/v1/documents", files={"files": (name, data)}, data=form)


def _queued(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 202, response.text
    [queued] = response.json()["files"]
    return dict(queued)


def _blobs(settings: CorpusSettings) -> list[str]:
    return ObjectStore(settings.object_store).list("sources")


def _api_settings(tmp_path: Path) -> CorpusSettings:
    return load_settings(home=tmp_path / "home", open_access=True)


@pytest.mark.slow
def test_two_names_that_sanitise_alike_are_two_searchable_documents(tmp_path: Path) -> None:
    settings = _api_settings(tmp_path)
    with served(settings) as client:
        north = _queued(_upload(client, "q3/report.pdf", _pdf("Northern depot closed in May.")))
        south = _queued(_upload(client, "q3_report.pdf", _pdf("Southern depot opened in June.")))
        assert north["source_file_name"] == south["source_file_name"] == "q3_report.pdf"
        assert north["document_id"] != south["document_id"]
        for queued in (north, south):
            assert finished_job(client, queued["job_id"])["status"] == "done"
    revision = open_revision(settings.published_dir, "default")
    for query, queued in (("northern depot", north), ("southern depot", south)):
        [hit] = classic_search(revision, SearchRequest(query=query, top_k=1)).results
        assert hit.document_id == queued["document_id"], query
    assert len(SourceRegistry(ObjectStore(settings.object_store)).records()) == 2


def test_names_with_a_space_or_an_underscore_are_two_documents(tmp_path: Path) -> None:
    settings = _api_settings(tmp_path)
    with served(settings, worker=False) as client:
        spaced = _queued(_upload(client, "a b.pdf", _pdf("first")))
        underscored = _queued(_upload(client, "a_b.pdf", _pdf("second")))
    assert spaced["document_id"] != underscored["document_id"]


def test_uploading_a_registered_name_again_is_refused_naming_the_document_to_replace(
    tmp_path: Path,
) -> None:
    settings = _api_settings(tmp_path)
    original = _pdf("first version")
    with served(settings, worker=False) as client:
        first = _queued(_upload(client, "report.pdf", original))
        again = _upload(client, "report.pdf", _pdf("second version"))
    assert again.status_code == 409
    detail = again.json()["detail"]
    assert detail.startswith(f"'report.pdf' is already document '{first['document_id']}'")
    assert f"replace_document_id={first['document_id']}" in detail
    [record] = SourceRegistry(ObjectStore(settings.object_store)).records()
    assert record.sha256 == sha256_bytes(original), "the first stays as it was"
    assert _blobs(settings) == [blob_key(record.sha256)], "the refused bytes are not stored"


def test_a_name_sent_twice_in_one_request_is_refused(tmp_path: Path) -> None:
    settings = _api_settings(tmp_path)
    with served(settings, worker=False) as client:
        response = client.post(
            "/v1/documents",
            files=[
                ("files", ("memo.md", b"# A\n\none\n")),
                ("files", ("memo.md", b"# B\n\ntwo\n")),
            ],
        )
    assert response.status_code == 400
    assert response.json()["detail"] == "'memo.md' is sent twice in this request"
    assert _blobs(settings) == []


def test_an_explicit_replacement_removes_the_replaced_bytes(tmp_path: Path) -> None:
    settings = _api_settings(tmp_path)
    old, new = _pdf("draft figures"), _pdf("final figures")
    with served(settings, worker=False) as client:
        first = _queued(_upload(client, "budget.pdf", old))
        second = _queued(
            _upload(client, "budget-final.pdf", new, replace_document_id=first["document_id"])
        )
    assert second["document_id"] == first["document_id"]
    assert _blobs(settings) == [blob_key(sha256_bytes(new))]


def test_a_replacement_keeps_bytes_another_document_still_holds(settings: CorpusSettings) -> None:
    registry = SourceRegistry(ObjectStore(settings.object_store))
    shared = b"# Shared\n\nThe same words in two files.\n"
    registry.register(shared, "a.md", "default", SourceKind.CLI)
    registry.register(shared, "b.md", "default", SourceKind.CLI)
    registry.register(b"# A\n\nNew words.\n", "a.md", "default", SourceKind.CLI)
    assert blob_key(sha256_bytes(shared)) in _blobs(settings), "b.md still holds them"


def test_ingesting_the_same_path_with_new_content_replaces_it_and_removes_the_old_bytes(
    settings: CorpusSettings,
) -> None:
    registry = SourceRegistry(ObjectStore(settings.object_store))
    before = registry.register(b"# Q1\n\nold\n", "q1/README.md", "default", SourceKind.FOLDER)
    after = registry.register(b"# Q1\n\nnew\n", "q1/README.md", "default", SourceKind.FOLDER)
    assert after.document_id == before.document_id
    assert _blobs(settings) == [after.object_key]
