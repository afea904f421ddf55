"""No oracle anywhere: every route of both services answers a key about a document, job or
namespace it cannot read exactly as about one that does not exist (status, body with the
name swapped, headers)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from corpus_pipeline.common.settings import load_settings
from query_service.config import ServiceSettings

from .http_service import running_service, served, write_api_keys
from .support import build_documents, publish_namespaces

pytestmark = pytest.mark.slow

OWNER, OTHER = "owner-key", "other-key"
MADE_UP = "made-up-md-0123456789ab"
VOLATILE = {"date", "content-length", "x-corpus-revision", "etag"}


def _same(real: httpx.Response, made_up: httpx.Response, name: str, fake: str) -> None:
    """The two answers are alike once the real and made-up names are the same word."""
    assert real.status_code == made_up.status_code, (real.text, made_up.text)
    assert _timeless(real.text.replace(name, "X")) == _timeless(made_up.text.replace(fake, "X"))
    real_headers = {k: v for k, v in real.headers.items() if k not in VOLATILE}
    made_headers = {k: v for k, v in made_up.headers.items() if k not in VOLATILE}
    assert real_headers == made_headers


def _timeless(text: str) -> str:
    return re.sub(r'"took_ms":[0-9.]+', '"took_ms":0', text)


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.fixture(scope="module")
def query(tmp_path_factory) -> Iterator[tuple[str, str]]:
    home = tmp_path_factory.mktemp("oracle")
    settings = load_settings(home=home)
    build_documents(settings, {"ducks.md": "# Ducks\n\nTufted ducks dive for mussels.\n"})
    build_documents(settings, {"geese.md": "# Geese\n\nGeese graze.\n"}, namespace="team")
    publish_namespaces(settings)
    write_api_keys(home, {OWNER: ("owner", ["default"]), OTHER: ("other", ["team"])})
    with (
        running_service(ServiceSettings(home=home, reload_seconds=0.2)) as url,
        _client(url, OWNER) as owner,
    ):
        [doc] = owner.get("/v1/documents").json()["items"]
        yield url, doc["document_id"]


QUERY_NAMESPACE_ROUTES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/search", {"json": {"query": "ducks", "namespace": "{ns}"}}),
    (
        "POST",
        "/v1/search",
        {"json": {"query": "ducks", "mode": "agentic", "token_budget": 2000, "namespace": "{ns}"}},
    ),
    ("POST", "/v1/read", {"json": {"namespace": "{ns}", "refs": [{"chunk_id": "c1"}]}}),
    ("GET", "/v1/documents", {"params": {"namespace": "{ns}"}}),
    ("GET", "/v1/namespaces/{ns}/filter-values", {}),
    ("GET", "/v1/documents/{doc}", {"params": {"namespace": "{ns}"}}),
    ("GET", "/v1/documents/{doc}/outline", {"params": {"namespace": "{ns}"}}),
    ("GET", "/v1/documents/{doc}/neighbors", {"params": {"namespace": "{ns}"}}),
    ("GET", "/v1/documents/{doc}/resources/images/x.png", {"params": {"namespace": "{ns}"}}),
]


def _filled(value: Any, **names: str) -> Any:
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {k: _filled(v, **names) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, **names) for v in value]
    return value


@pytest.mark.parametrize(("method", "path", "kwargs"), QUERY_NAMESPACE_ROUTES)
def test_a_namespace_the_key_cannot_read_answers_like_a_missing_one(query, method, path, kwargs):
    url, doc = query
    with _client(url, OTHER) as other:
        real = other.request(
            method, _filled(path, ns="default", doc=doc), **_filled(kwargs, ns="default", doc=doc)
        )
        fake = other.request(
            method, _filled(path, ns="nowhere", doc=doc), **_filled(kwargs, ns="nowhere", doc=doc)
        )
    assert real.status_code == 404
    _same(real, fake, "default", "nowhere")


@pytest.mark.parametrize(
    "path", ["/v1/documents/{doc}", "/v1/documents/{doc}/outline", "/v1/documents/{doc}/neighbors"]
)
def test_a_document_of_another_namespace_answers_like_a_missing_one(query, path):
    url, doc = query
    with _client(url, OTHER) as other:
        real = other.get(path.format(doc=doc), params={"namespace": "team"})
        fake = other.get(path.format(doc=MADE_UP), params={"namespace": "team"})
    assert real.status_code == 404
    _same(real, fake, doc, MADE_UP)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/read", {"namespace": "team", "refs": [{"document_id": "{doc}"}]}),
        (
            "/v1/search",
            {"query": "ducks", "namespace": "team", "filters": {"document_ids": ["{doc}"]}},
        ),
    ],
)
def test_reading_or_filtering_by_a_document_of_another_namespace_answers_like_a_missing_one(
    query, path, body
):
    url, doc = query
    with _client(url, OTHER) as other:
        real = other.post(path, json=_filled(body, doc=doc))
        fake = other.post(path, json=_filled(body, doc=MADE_UP))
    _same(real, fake, doc, MADE_UP)


# -- the upload API --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def upload(tmp_path_factory) -> Iterator[tuple[httpx.Client, dict[str, Any]]]:
    home = tmp_path_factory.mktemp("oracle-upload")
    settings = load_settings(home=home)
    write_api_keys(
        home,
        {OWNER: ("owner", ["default"]), OTHER: ("other", ["team"])},
        writes={OWNER: ["default"], OTHER: ["team"]},
    )
    with served(settings, worker=False) as client:
        queued = client.post(
            "/v1/documents",
            files={"files": ("ducks.md", b"# Ducks\n\nTufted ducks dive.\n")},
            headers={"Authorization": f"Bearer {OWNER}"},
        )
        assert queued.status_code == 202, queued.text
        [owned] = queued.json()["files"]
        client.headers["Authorization"] = f"Bearer {OTHER}"
        yield client, owned


def test_replacing_a_document_of_another_namespace_answers_like_a_missing_one(upload):
    client, owned = upload

    def replace(document_id: str) -> httpx.Response:
        response: httpx.Response = client.post(
            "/v1/documents",
            files={"files": ("geese.md", b"# Geese\n\nGeese graze.\n")},
            data={"namespace": "team", "replace_document_id": document_id},
        )
        return response

    real, fake = replace(owned["document_id"]), replace(MADE_UP)
    assert real.status_code == 404
    _same(real, fake, owned["document_id"], MADE_UP)


def test_removing_a_document_of_another_namespace_answers_like_a_missing_one(upload):
    client, owned = upload
    real = client.delete(f"/v1/documents/{owned['document_id']}")
    fake = client.delete(f"/v1/documents/{MADE_UP}")
    assert real.status_code == 404
    _same(real, fake, owned["document_id"], MADE_UP)


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/v1/jobs/{}"), ("POST", "/v1/jobs/{}/retry")]
)
def test_a_job_of_another_namespace_answers_like_a_missing_one(upload, method, path):
    client, owned = upload
    real = client.request(method, path.format(owned["job_id"]))
    fake = client.request(method, path.format("job-made-up"))
    assert real.status_code == 404
    _same(real, fake, owned["job_id"], "job-made-up")


def test_the_ingestion_of_a_namespace_the_key_cannot_read_answers_like_a_missing_one(upload):
    client, _ = upload
    real = client.get("/v1/namespaces/default/ingestion")
    fake = client.get("/v1/namespaces/nowhere/ingestion")
    assert real.status_code == 404
    _same(real, fake, "default", "nowhere")
