"""Resources are addressed by document id and relative ref and served by the query service:
no answer (search, read, agentic, MCP) carries a file-system path of the server."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts.search import Resource, SearchRequest
from corpus_pipeline.publish.service import publish
from query_service.config import ServiceSettings

from .http_service import running_service, write_api_keys
from .support import DOCS, build_documents, publish_namespaces

pytestmark = pytest.mark.slow

KEYS = {"alice-key": ("alice", ["default", "team"]), "bob-key": ("bob", ["team"])}
# An absolute POSIX path inside a string: a slash that starts a value or follows a separator,
# then at least two segments (`/tmp/x`). Closing HTML tags (`</td>`) and URLs (`http://`) do
# not match; the service-relative resource URLs are allowed.
ABSOLUTE = re.compile(r"(?:^|[\s\[(='\"])/(?!v1/documents/)[\w.-]+/[\w.-]+")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[CorpusSettings, str]:
    settings = load_settings(home=tmp_path_factory.mktemp("resources"))
    records = build_documents(
        settings, {"word_sample.docx": (DOCS / "word_sample.docx").read_bytes()}
    )
    build_documents(settings, {"geese.md": "# Geese\n\nGeese graze on grass.\n"}, namespace="team")
    publish_namespaces(settings)
    write_api_keys(settings.home, KEYS)
    return settings, records["word_sample.docx"].document_id


@pytest.fixture(scope="module")
def service(corpus: tuple[CorpusSettings, str]) -> Iterator[str]:
    settings, _ = corpus
    with running_service(ServiceSettings(home=settings.home, reload_seconds=0.2)) as url:
        yield url


def client(url: str, key: str = "alice-key") -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from strings(child)
    elif isinstance(value, list):
        for child in value:
            yield from strings(child)


def assert_no_server_paths(body: Any, home: Path) -> None:
    text = json.dumps(body, ensure_ascii=False)
    assert str(home) not in text and str(home.resolve()) not in text
    assert "/artifacts/" not in text and "image_path" not in text
    for value in strings(body):
        assert not ABSOLUTE.search(value), value


def resources_in(body: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            resource = value.get("resource")
            if isinstance(resource, dict):
                found.append(resource)
            for r in value.get("resources") or []:
                found.append(r)
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(body)
    return found


def answers(url: str, document_id: str) -> list[dict[str, Any]]:
    """Classic search, read of the whole document and agentic search over the document."""
    c = client(url)
    out = []
    for query in ("cute duckling cartoon", "calories berries grain"):
        classic = c.post("/v1/search", json={"query": query, "top_k": 10})
        assert classic.status_code == 200, classic.text
        out.append(classic.json())
        agentic = c.post(
            "/v1/search",
            json={"mode": "agentic", "query": query, "token_budget": 8000, "top_k": 10},
        )
        assert agentic.status_code == 200, agentic.text
        out.append(agentic.json())
    read = c.post("/v1/read", json={"refs": [{"document_id": document_id}]})
    assert read.status_code == 200, read.text
    out.append(read.json())
    return out


def test_no_answer_carries_a_server_path(service: str, corpus: tuple[CorpusSettings, str]) -> None:
    settings, document_id = corpus
    bodies = answers(service, document_id)
    for body in bodies:
        assert_no_server_paths(body, settings.home)
    agentic = [b for b in bodies if b.get("mode") == "agentic"]
    assert agentic and all(b["evidence_text"] for b in agentic)
    read = bodies[-1]
    text = " ".join(c["content"] for c in read["items"][0]["chunks"])
    image_ref = next(r["ref"] for r in resources_in(read) if r["kind"] == "image")
    assert f"[image {image_ref} (document {document_id}): Figure 1" in text
    evidence = " ".join(b["evidence_text"] for b in agentic)
    assert f"[image {image_ref} (document {document_id})" in evidence


def test_resources_are_addressed_by_document_and_relative_ref(
    service: str, corpus: tuple[CorpusSettings, str]
) -> None:
    _, document_id = corpus
    resources = resources_in(answers(service, document_id))
    assert {r["kind"] for r in resources} == {"image", "table"}
    for r in resources:
        assert r["document_id"] == document_id
        assert re.fullmatch(r"(images/[0-9a-f]+\.png|tables/table-\d{4}\.html)", r["ref"])
        assert r["url"] == f"/v1/documents/{document_id}/resources/{r['ref']}?namespace=default"
        assert set(r) == {"kind", "document_id", "ref", "url", "html", "description"}


def test_the_resource_url_downloads_the_stored_bytes(
    service: str, corpus: tuple[CorpusSettings, str]
) -> None:
    settings, document_id = corpus
    resources = {r["ref"]: r for r in resources_in(answers(service, document_id))}
    types = {".png": "image/png", ".html": "text/html; charset=utf-8"}
    c = client(service)
    for ref, resource in resources.items():
        response = c.get(resource["url"])
        assert response.status_code == 200, response.text
        stored = (settings.artifacts_dir / document_id / ref).read_bytes()
        assert response.content == stored
        assert response.headers["content-type"] == types[Path(ref).suffix]
        assert response.headers["x-content-type-options"] == "nosniff"
        assert int(response.headers["x-corpus-revision"]) >= 1
    assert len(resources) == 2


def test_another_namespace_key_gets_the_answer_of_a_missing_document(
    service: str, corpus: tuple[CorpusSettings, str]
) -> None:
    _, document_id = corpus
    url = next(r["url"] for r in resources_in(answers(service, document_id)))
    bob = client(service, "bob-key")
    forbidden = bob.get(url)
    missing_document = bob.get(url.replace(document_id, "no-such-document"))
    missing_namespace = bob.get(url.replace("namespace=default", "namespace=nowhere"))
    assert forbidden.status_code == missing_document.status_code == 404
    assert forbidden.content == missing_document.content
    assert forbidden.json()["detail"].replace("default", "X") == missing_namespace.json()[
        "detail"
    ].replace("nowhere", "X")
    own_missing = bob.get(
        f"/v1/documents/{document_id}/resources/images/x.png", params={"namespace": "team"}
    )
    assert own_missing.status_code == 404
    assert own_missing.json() == {
        "detail": f"document '{document_id}' not found",
        "field": "document_id",
    }


def raw_get(base: str, path: str, key: str = "alice-key") -> tuple[int, bytes]:
    """A request whose path is sent byte for byte (httpx would normalise dot segments)."""
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {key}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize(
    "ref",
    [
        "../manifest.json",
        "images/../../manifest.json",
        "%2e%2e/manifest.json",
        "%2E%2E%2Fmanifest.json",
        "images/%2e%2e/%2e%2e/chunks.json",
        "..%5Cmanifest.json",
        "images\\..\\..\\manifest.json",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "./tables/table-0001.html",
        "tables//table-0001.html",
        "manifest.json",
        "chunks.json",
        "source/word_sample.docx",
        "images/unknown.png",
        "tables/table-0002.html",
        "tables/table-0001.html%00.png",
        "",
    ],
)
def test_refs_that_are_not_resources_of_the_document_get_404(
    service: str, corpus: tuple[CorpusSettings, str], ref: str
) -> None:
    settings, document_id = corpus
    status, body = raw_get(service, f"/v1/documents/{document_id}/resources/{ref}")
    assert status == 404, body
    secret = (settings.artifacts_dir / document_id / "manifest.json").read_bytes()
    assert secret[:40] not in body
    answer = json.loads(body)
    assert answer["field"] == "ref" and answer["detail"].startswith("resource ")


def test_a_resource_of_one_document_is_not_served_under_another(
    service: str, corpus: tuple[CorpusSettings, str]
) -> None:
    _, document_id = corpus
    c = client(service)
    geese = c.get("/v1/documents", params={"namespace": "team"}).json()["items"][0]
    response = c.get(
        f"/v1/documents/{geese['document_id']}/resources/tables/table-0001.html",
        params={"namespace": "team"},
    )
    assert response.status_code == 404 and response.json()["field"] == "ref"
    assert c.get(f"/v1/documents/{document_id}/resources/tables/table-0001.html").status_code == 200


def test_the_mcp_tools_return_no_server_paths(
    service: str, corpus: tuple[CorpusSettings, str]
) -> None:
    from .test_mcp import run_with_client, structured

    settings, document_id = corpus
    bodies: list[dict[str, Any]] = []

    async def body(mcp: Any) -> None:
        bodies.append(structured(await mcp.call_tool("search", {"query": "cute duckling"})))
        bodies.append(
            structured(await mcp.call_tool("agentic_search", {"query": "calories berries"}))
        )
        bodies.append(
            structured(await mcp.call_tool("read", {"refs": [{"document_id": document_id}]}))
        )
        bodies.append(structured(await mcp.call_tool("outline", {"document_id": document_id})))

    run_with_client(service, "alice-key", body)
    for answer in bodies:
        assert_no_server_paths(answer, settings.home)
    assert {r["kind"] for r in resources_in(bodies)} == {"image", "table"}


@pytest.mark.parametrize(
    "ref", ["/abs/images/x.png", "../x.png", "images\\x.png", "a//b", "C:x", ""]
)
def test_the_contract_refuses_refs_that_are_not_relative(ref: str) -> None:
    with pytest.raises(ValueError, match="relative"):
        Resource(kind="image", document_id="d", ref=ref, url="/v1/documents/d/resources/x")


# Same section title in both documents: a table chunk opens with it, so the tables are one chunk.
TABLE_DOC = "# Counts\n\n{title}: shared counts follow.\n\n| bird | count |\n| --- | --- |\n| teal | 4 |\n| smew | 2 |\n"


def test_a_shared_table_is_served_by_a_document_that_still_holds_it(tmp_path: Path) -> None:
    """Identical tables in two documents are one chunk naming one document's resource; when
    that document leaves the namespace the chunk names the other's."""
    from corpus_pipeline.publish.publisher import publish_items_for, publish_namespace
    from corpus_pipeline.storage.store import ObjectStore, SourceRegistry
    from query_service.retrieval.classic import classic_search
    from query_service.snapshot import store
    from query_service.snapshot.revision import open_revision

    settings = load_settings(home=tmp_path)
    records = build_documents(
        settings,
        {"a.md": TABLE_DOC.format(title="Alpha"), "b.md": TABLE_DOC.format(title="Beta")},
    )
    items = publish_items_for(
        settings.artifacts_dir,
        SourceRegistry(ObjectStore(settings.object_store)).records(),
        "default",
    )

    def table_resource() -> tuple[Any, Resource]:
        revision = open_revision(settings.published_dir, "default")
        request = SearchRequest(query="teal smew", chunk_types=["table"], top_k=5)
        results = classic_search(revision, request).results
        assert len(results) == 1 and results[0].resource is not None
        return revision, results[0].resource

    publish_namespace(settings.published_dir, "default", items)
    _, first = table_resource()
    keep = next(r for r in records.values() if r.document_id != first.document_id)
    publish_namespace(
        settings.published_dir,
        "default",
        [i for i in items if i.record.document_id == keep.document_id],
    )
    revision, resource = table_resource()
    assert resource.document_id == keep.document_id
    assert (
        resource.url
        == f"/v1/documents/{keep.document_id}/resources/{resource.ref}?namespace=default"
    )
    served = store.resource_file(revision, keep.document_id, resource.ref)
    assert served.data == (settings.artifacts_dir / keep.document_id / resource.ref).read_bytes()
    with pytest.raises(store.DocumentNotFound):
        store.resource_file(revision, first.document_id, first.ref)


def test_a_revision_published_without_resources_is_republished_whole(tmp_path: Path) -> None:
    from corpus_pipeline.contracts.published import CURRENT
    from query_service.snapshot import store
    from query_service.snapshot.revision import open_revision

    settings = load_settings(home=tmp_path)
    records = build_documents(settings, {"a.md": TABLE_DOC.format(title="Alpha")})
    document_id = records["a.md"].document_id
    publish_namespaces(settings)
    pointer_file = settings.published_dir / "default" / CURRENT
    old = json.loads(pointer_file.read_text())
    del old["lance_versions"]["resources"]
    pointer_file.write_text(json.dumps(old))
    with pytest.raises(store.ResourceNotFound):  # the reader of an older revision: a plain 404
        store.resource_file(
            open_revision(settings.published_dir, "default"), document_id, "tables/table-0001.html"
        )
    (report,) = publish(settings)
    assert report.published == [document_id] and "resources" in report.pointer.lance_versions
    served = store.resource_file(
        open_revision(settings.published_dir, "default"), document_id, "tables/table-0001.html"
    )
    assert served.media_type == "text/html; charset=utf-8" and served.data.startswith(b"<table")
