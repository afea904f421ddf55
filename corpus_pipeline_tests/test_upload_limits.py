"""The upload API is bounded before it costs: the key is checked from the headers before a
byte of the body is read, the body is streamed with its limits enforced while reading (for a
Content-Length and a chunked request alike), a refused request stores nothing and leaves no
scratch file, and one key has only so many uploads in flight. Real uvicorn on a loopback port;
raw sockets where the test must control exactly which bytes are sent."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

from .http_service import served, write_api_keys

BOUNDARY = "corpus-test-boundary"
WRITER = {"Authorization": "Bearer writer"}


def _settings(home: Path, **overrides: object) -> CorpusSettings:
    """A home with one key that may write to "birds" and one that may only read it."""
    write_api_keys(
        home, {"reader": ("r", ["birds"]), "writer": ("w", ["birds"])}, {"writer": ["birds"]}
    )
    return load_settings(home=home, **overrides)


def _stored(settings: CorpusSettings) -> list[str]:
    registry = SourceRegistry(ObjectStore(settings.object_store))
    return [r.source_file_name for r in registry.records()]


def _scratch(settings: CorpusSettings) -> list[Path]:
    return list((settings.home / "service" / "uploads").iterdir())


def _part_head(name: str) -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()


def _field(name: str, value: str) -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
    ).encode()


def _body(name: str, data: bytes, namespace: str = "birds") -> bytes:
    return (
        _field("namespace", namespace)
        + _part_head(name)
        + data
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


def _head(port: int, length: int | None, headers: dict[str, str]) -> bytes:
    lines = [
        "POST /v1/documents HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    lines.append(
        f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    )
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _answer_without_a_body(port: int, length: int, headers: dict[str, str]) -> int:
    """The status the server answers to a request whose headers announce `length` bytes of
    body of which none is ever sent (an answer proves nothing of the body was waited for)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_head(port, length, headers))
        answer = sock.recv(65536)
    return int(answer.split(b" ", 2)[1])


def _port(client: httpx.Client) -> int:
    port = client.base_url.port
    assert port is not None
    return port


def test_a_request_without_a_key_is_refused_before_its_body_is_read(tmp_path: Path):
    settings = _settings(tmp_path / "home")
    with served(settings, worker=False) as client:
        status = _answer_without_a_body(_port(client), 50 * 1024 * 1024, {})
    assert status == 401
    assert _stored(settings) == [] and _scratch(settings) == []


def test_a_key_that_may_write_nowhere_is_refused_before_the_body_is_read(tmp_path: Path):
    settings = _settings(tmp_path / "home")
    with served(settings, worker=False) as client:
        status = _answer_without_a_body(_port(client), 1024, {"Authorization": "Bearer reader"})
    assert status == 403


def test_a_declared_length_above_the_request_limit_is_413_before_the_body_is_read(
    tmp_path: Path,
):
    settings = _settings(tmp_path / "home", max_request_mb=2)
    with served(settings, worker=False) as client:
        status = _answer_without_a_body(_port(client), 3 * 1024 * 1024, WRITER)
    assert status == 413
    assert _stored(settings) == [] and _scratch(settings) == []


def _chunked(body: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def _post_chunked(settings: CorpusSettings, body: bytes, size: int = 64 * 1024) -> httpx.Response:
    """The body sent as a chunked request (no Content-Length) by the writer."""
    with served(settings, worker=False) as client:
        return client.post(
            "/v1/documents",
            content=_chunked(body, size),
            headers={**WRITER, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
        )


def test_a_chunked_request_above_the_request_limit_is_413_and_leaves_nothing(tmp_path: Path):
    settings = _settings(tmp_path / "home", max_request_mb=1, max_upload_mb=10)
    body = _body("notes.md", b"# Notes\n\n" + b"words " * 400_000)  # ~2.4 MB, no length
    response = _post_chunked(settings, body)
    assert response.status_code == 413
    assert response.json()["detail"] == "the request is above the limit of 1 MiB"
    assert _stored(settings) == [] and _scratch(settings) == []


def test_a_file_above_its_limit_is_413_naming_it_while_it_is_still_arriving(tmp_path: Path):
    settings = _settings(tmp_path / "home", max_request_mb=50, max_upload_mb=1)
    body = _body("big report.md", b"# Big\n\n" + b"words " * 400_000)
    response = _post_chunked(settings, body)
    assert response.status_code == 413
    assert response.json()["detail"] == "'big report.md' is above the limit of 1 MiB"
    assert _stored(settings) == [] and _scratch(settings) == []


def test_a_chunked_request_within_its_limits_is_stored_and_queued(tmp_path: Path):
    settings = _settings(tmp_path / "home")
    body = _body("notes.md", b"# Ducks\n\nTufted ducks dive for mussels.\n")
    response = _post_chunked(settings, body, 16)
    assert response.status_code == 202, response.text
    [queued] = response.json()["files"]
    assert (queued["source_file_name"], queued["status"]) == ("notes.md", "queued")
    assert _stored(settings) == ["notes.md"] and _scratch(settings) == []


def test_a_bad_form_field_is_422_naming_the_field(tmp_path: Path):
    settings = _settings(tmp_path / "home")
    with served(settings, worker=False) as client:
        response = client.post(
            "/v1/documents",
            files={"files": ("n.md", b"# N\n\ntext\n")},
            data={"namespace": "birds", "document_date": "yesterday"},
            headers=WRITER,
        )
    assert response.status_code == 422
    assert response.json()["detail"].startswith("form field 'document_date':")
    assert _stored(settings) == []


def test_a_form_without_files_is_400(tmp_path: Path):
    settings = _settings(tmp_path / "home")
    with served(settings, worker=False) as client:
        response = client.post(
            "/v1/documents", files={"namespace": (None, "birds")}, headers=WRITER
        )
    assert response.status_code == 400
    assert response.json()["detail"] == "no files: send one or more 'files' parts"


def test_one_key_has_only_so_many_uploads_in_flight(tmp_path: Path):
    """With one upload allowed per key, a second while the first is still sending its body is
    told to retry (429); once the first client is gone, its slot is free again."""
    settings = _settings(tmp_path / "home", max_uploads_per_key=1)
    upload = {"files": ("n.md", b"# N\n\ntext\n")}
    with served(settings, worker=False) as client:
        port = _port(client)
        slow = socket.create_connection(("127.0.0.1", port), timeout=10)
        slow.sendall(_head(port, 10_000, WRITER) + _field("namespace", "birds"))
        time.sleep(0.5)  # the server is reading the first body now
        busy = client.post(
            "/v1/documents", files=upload, data={"namespace": "birds"}, headers=WRITER
        )
        slow.close()
        deadline = time.monotonic() + 10
        while True:
            again = client.post(
                "/v1/documents", files=upload, data={"namespace": "birds"}, headers=WRITER
            )
            if again.status_code != 429 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert busy.status_code == 429 and busy.headers["retry-after"] == "5"
    assert "1 uploads in flight" in busy.json()["detail"]
    assert again.status_code == 202, again.text
    assert _scratch(settings) == []


def test_the_openapi_document_shows_the_upload_form(tmp_path: Path):
    settings = _settings(tmp_path / "home")
    with served(settings, worker=False) as client:
        spec = client.get("/openapi.json").json()
    body = spec["paths"]["/v1/documents"]["post"]["requestBody"]["content"]
    schema = body["multipart/form-data"]["schema"]
    assert schema["required"] == ["files"]
    assert {"files", "namespace", "replace_document_id", "password"} <= set(schema["properties"])


def test_scratch_left_by_a_killed_upload_api_is_removed_at_start(tmp_path: Path):
    import os
    import subprocess

    settings = _settings(tmp_path / "home")
    root = settings.home / "service" / "uploads"
    dead = subprocess.Popen(["true"])  # a process that has exited: its pid is free
    dead.wait()
    orphan = root / f"{dead.pid}-abc123"
    alive = root / f"{os.getpid()}-def456"
    for folder in (orphan, alive):
        folder.mkdir(parents=True)
        (folder / "00000").write_bytes(b"half an upload")
    with served(settings, worker=False):
        pass
    assert not orphan.exists(), "the dead process's half upload is removed"
    assert (alive / "00000").exists(), "a live process's upload is never touched"


def test_readyz_follows_the_job_store_without_waiting_for_it(tmp_path: Path):
    """`/readyz` answers from the job store's last check (once a second, off the request
    path): ok while it answers, 503 once it has failed for a few seconds."""
    import sqlite3

    settings = _settings(tmp_path / "home")
    with served(settings, worker=False) as client:
        assert client.get("/readyz").json() == {"status": "ok"}
        with sqlite3.connect(settings.home / "service" / "jobs.db") as db:
            db.execute("drop table jobs")
        deadline = time.monotonic() + 15
        while (answer := client.get("/readyz")).status_code == 200:
            assert time.monotonic() < deadline, "still ready without a job table"
            time.sleep(0.2)
    assert (answer.status_code, answer.json()) == (503, {"status": "loading"})
