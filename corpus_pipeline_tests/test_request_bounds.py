"""Every request within a budget: the key before the body, a body size limit checked from
Content-Length and while it streams, and a bound on every list and string a request carries."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.api import ReadRef, ReadRequest
from corpus_pipeline.contracts.search import (
    MAX_DOCUMENT_IDS,
    MAX_FILTER_VALUE_CHARS,
    MAX_FILTER_VALUES,
    MAX_SECTION_PATHS,
)
from query_service.config import ServiceSettings
from query_service.snapshot import store
from query_service.snapshot.revision import open_revision

from .http_service import running_service, served, write_api_keys
from .support import build_documents, publish_namespaces

pytestmark = pytest.mark.slow

KEY = "reader-key"
LIMIT_KB = 8


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    home = tmp_path_factory.mktemp("bounds")
    settings = load_settings(home=home)
    sections = "".join(f"## Pond {i}\n\nMallard count {i} at the pond.\n\n" for i in range(30))
    build_documents(settings, {"ponds.md": "# Ponds\n\n" + sections})
    publish_namespaces(settings)
    write_api_keys(home, {KEY: ("reader", ["default"])})
    return settings


@pytest.fixture(scope="module")
def service(corpus) -> Iterator[str]:
    settings = ServiceSettings(home=corpus.home, reload_seconds=0.2, query_max_body_kb=LIMIT_KB)
    with running_service(settings) as url:
        yield url


def _raw_request(url: str, head: str) -> tuple[int, dict[str, str]]:
    """Send only a request's head (no body follows) and read the answer: a server that waited
    for the declared body would time out here."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head.encode())
        data = b""
        while b"\r\n\r\n" not in data or not _complete(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    body = data.split(b"\r\n\r\n", 1)[1]
    return status, json.loads(body)


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def _head(path: str, length: int, key: str | None = None) -> str:
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{auth}Content-Length: {length}\r\n\r\n"
    )


def test_a_request_without_a_key_is_refused_before_its_body_is_read(service):
    status, body = _raw_request(service, _head("/v1/search", 10_000_000_000))
    assert status == 401
    assert body["field"] == "authorization"


def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(service):
    status, body = _raw_request(service, _head("/v1/search", 10_000_000_000, KEY))
    assert status == 413
    assert body["field"] == "body"
    assert "10,000,000,000 bytes" in body["detail"]
    assert f"{LIMIT_KB * 1024:,} bytes" in body["detail"]


def test_a_streamed_body_without_a_length_is_refused_once_it_passes_the_limit(service):
    def chunked() -> Iterator[bytes]:  # no Content-Length: sent chunked
        yield b'{"query": "mallard", "filters": {"path_prefix": ["'
        for _ in range(4 * LIMIT_KB):
            yield b"a" * 1024

    with httpx.Client(base_url=service, timeout=30) as client:
        response = client.post(
            "/v1/search",
            content=chunked(),
            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        )
    assert response.status_code == 413
    assert response.json()["field"] == "body"


def test_a_body_within_the_limit_is_searched(service):
    with httpx.Client(base_url=service, timeout=30) as client:
        response = client.post(
            "/v1/search",
            json={"query": "mallard count 7", "top_k": 3},
            headers={"Authorization": f"Bearer {KEY}"},
        )
    assert response.status_code == 200
    assert "Mallard count 7" in response.json()["results"][0]["content"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("path_prefix", ["notes/"] * (MAX_FILTER_VALUES + 1)),
        ("path_prefix", ["n" * (MAX_FILTER_VALUE_CHARS + 1)]),
        ("entity", ["e" * (MAX_FILTER_VALUE_CHARS + 1)]),
        ("document_ids", ["d"] * (MAX_DOCUMENT_IDS + 1)),
        ("document_ids", ["d" * 201]),
    ],
)
def test_filter_values_beyond_their_bounds_are_refused(service, field, value):
    with httpx.Client(base_url=service, timeout=30) as client:
        response = client.post(
            "/v1/search",
            json={"query": "mallard", "filters": {field: value}},
            headers={"Authorization": f"Bearer {KEY}"},
        )
    assert response.status_code == 422
    assert field in json.dumps(response.json())


@pytest.mark.parametrize("mode", ["classic", "agentic"])
def test_too_many_excluded_section_paths_are_refused(service, mode):
    with httpx.Client(base_url=service, timeout=30) as client:
        response = client.post(
            "/v1/search",
            json={
                "query": "mallard",
                "mode": mode,
                "exclude_section_paths": [["Ponds"]] * (MAX_SECTION_PATHS + 1),
            },
            headers={"Authorization": f"Bearer {KEY}"},
        )
    assert response.status_code == 422
    assert "exclude_section_paths" in response.text


def test_a_ref_given_many_times_is_read_once(corpus):
    request = ReadRequest(refs=[ReadRef(document_id="x", section_path=["Ponds"])] * 100)
    assert len(request.refs) == 1


def test_one_read_answers_a_bounded_number_of_chunks(corpus, monkeypatch):
    monkeypatch.setattr(store, "MAX_READ_CHUNKS", 12)
    revision = open_revision(corpus.published_dir, "default")
    document_id = revision.rows("documents", None)[0]["document_id"]
    whole = ReadRef(document_id=document_id)
    first = ReadRef(document_id=document_id, section_path=["Ponds", "Pond 1"])
    answer = store.read(revision, ReadRequest(refs=[whole, first], max_chunks_per_ref=500))
    assert len(answer.items[0].chunks) == 12 and answer.items[0].truncated
    assert answer.items[1].chunks == [] and answer.items[1].truncated
    assert "ask again" in (answer.items[1].message or "")


def test_the_upload_api_checks_the_key_before_any_body(tmp_path):
    settings = load_settings(home=tmp_path)
    write_api_keys(tmp_path, {KEY: ("reader", ["default"])})
    with served(settings, worker=False) as client:
        url = str(client.base_url).rstrip("/")
        status, body = _raw_request(url, _head("/v1/jobs/j1/retry", 10_000_000_000))
    assert status == 401
    assert body["field"] == "authorization"


def test_the_mcp_endpoint_checks_the_key_before_its_body(service):
    status, body = _raw_request(service, _head("/mcp/", 10_000_000_000))
    assert status == 401
    assert body["field"] == "authorization"
