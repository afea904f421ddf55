"""The query service through real HTTP: uvicorn on a loopback port, httpx as the client."""

from __future__ import annotations

import json
import threading
from datetime import date

import httpx
import pytest

from corpus_pipeline.common.settings import load_settings
from query_service.config import ServiceSettings

from .http_service import running_service, write_api_keys
from .support import DOCS, build_documents, publish_namespaces

pytestmark = pytest.mark.slow

KEYS = {"alice-key": ("alice", ["default", "team"]), "bob-key": ("bob", ["team"])}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    home = tmp_path_factory.mktemp("http")
    settings = load_settings(home=home)
    build_documents(
        settings,
        {
            "ducks.md": "# Ducks\n\n## Diving\n\nTufted ducks dive for mussels.\n\n## Dabbling\n\nMallards dabble.\n"
        },
        organizational_unit="Field",
        document_date=date(2024, 3, 1),
    )
    build_documents(settings, {"word_tables.docx": (DOCS / "word_tables.docx").read_bytes()})
    build_documents(settings, {"geese.md": "# Geese\n\nGeese graze on grass.\n"}, namespace="team")
    for i in range(12):
        build_documents(
            settings,
            {f"notes/{i}.md": f"# Note {i}\n\nMallard observation number {i} near the pond.\n"},
        )
    publish_namespaces(settings)
    return settings


@pytest.fixture(scope="module")
def service(corpus):
    write_api_keys(corpus.home, KEYS)
    settings = ServiceSettings(home=corpus.home, reload_seconds=0.2)
    with running_service(settings) as url:
        yield url


def client(url: str, key: str | None = "alice-key") -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {key}"} if key else {}, timeout=30
    )


def test_search_returns_results_with_citations_and_names_the_revision(service):
    response = client(service).post("/v1/search", json={"query": "tufted ducks dive", "top_k": 3})
    assert response.status_code == 200
    body = response.json()
    top = body["results"][0]
    assert top["content"] == "Ducks\n\nDiving\n\nTufted ducks dive for mussels."
    assert (top["source_file_name"], top["section_path"]) == ("ducks.md", ["Ducks", "Diving"])
    assert top["chunk_id"] and top["document_id"] and top["score"] > 0
    assert response.headers["X-Corpus-Revision"] == str(body["revision"])


def test_filters_and_exclusions_apply_over_http(service):
    c = client(service)
    filtered = c.post(
        "/v1/search",
        json={"query": "mallard", "top_k": 5, "filters": {"organizational_unit": ["field"]}},
    ).json()
    assert [r["source_file_name"] for r in filtered["results"]] == ["ducks.md"]
    excluded = c.post(
        "/v1/search",
        json={"query": "mallard", "top_k": 20, "exclude_section_paths": [["Ducks", "Dabbling"]]},
    ).json()
    assert all(r["section_path"] != ["Ducks", "Dabbling"] for r in excluded["results"])
    empty = c.post("/v1/search", json={"query": "mallard", "filters": {"document_type": []}})
    assert empty.status_code == 422 and empty.json()["field"] == "filters.document_type"


def test_missing_or_wrong_keys_are_refused(service):
    assert client(service, key=None).post("/v1/search", json={"query": "x"}).status_code == 401
    assert client(service, key="nope").get("/v1/namespaces").status_code == 401


def test_a_forbidden_namespace_answers_exactly_like_a_missing_one(service):
    forbidden = client(service, "bob-key").post(
        "/v1/search", json={"query": "ducks", "namespace": "default"}
    )
    missing = client(service, "bob-key").post(
        "/v1/search", json={"query": "ducks", "namespace": "nowhere"}
    )
    assert forbidden.status_code == missing.status_code == 404
    assert forbidden.json()["detail"].replace("default", "X") == missing.json()["detail"].replace(
        "nowhere", "X"
    )
    assert [
        n["namespace"]
        for n in client(service, "bob-key").get("/v1/namespaces").json()["namespaces"]
    ] == ["team"]


def test_read_mixes_good_and_bad_refs_each_with_its_own_status(service):
    c = client(service)
    docs = {
        d["source_file_name"]: d["document_id"]
        for d in c.get("/v1/documents", params={"limit": 100}).json()["items"]
    }
    refs = [
        {"document_id": docs["ducks.md"], "section_path": ["Ducks", "Diving"]},
        {"chunk_id": "c" + "0" * 32},
        {"document_id": docs["ducks.md"], "section_path": ["Ducks", "No such section"]},
        {"document_id": docs["word_tables.docx"]},
    ]
    items = c.post("/v1/read", json={"refs": refs}).json()["items"]
    assert [i["status"] for i in items] == ["ok", "not_found", "not_found", "ok"]
    assert items[0]["chunks"][0]["content"] == "Ducks\n\nDiving\n\nTufted ducks dive for mussels."
    table_text = " ".join(ch["content"] for ch in items[3]["chunks"])
    assert "<table>" in table_text and 'rowspan="2"' in table_text, "tables are embedded as HTML"
    assert "[table:" not in table_text


def test_documents_outline_and_neighbors(service):
    c = client(service)
    page = c.get("/v1/documents", params={"limit": 5, "offset": 0}).json()
    assert page["total"] == 14 and len(page["items"]) == 5
    second = c.get("/v1/documents", params={"limit": 5, "offset": 5}).json()
    assert not {d["document_id"] for d in page["items"]} & {
        d["document_id"] for d in second["items"]
    }
    ducks = next(
        d
        for d in c.get("/v1/documents", params={"limit": 100}).json()["items"]
        if d["source_file_name"] == "ducks.md"
    )
    detail = c.get(f"/v1/documents/{ducks['document_id']}").json()
    assert (
        detail["manifest"]["source_file_name"] == "ducks.md" and detail["nav"]["title"] == "Ducks"
    )
    outline = c.get(f"/v1/documents/{ducks['document_id']}/outline").json()
    assert [s["title"] for s in outline["sections"][0]["children"]] == ["Diving", "Dabbling"]
    neighbors = c.get(f"/v1/documents/{ducks['document_id']}/neighbors").json()
    assert neighbors["document_id"] == ducks["document_id"] and isinstance(
        neighbors["neighbors"], list
    )
    assert c.get("/v1/documents/nope").status_code == 404


def test_filter_values_report_what_occurs(service):
    values = client(service).get("/v1/namespaces/default/filter-values").json()
    assert values["document_type"] == ["docx", "markdown"]
    assert values["organizational_unit"] == ["Field"]
    # ducks.md was uploaded with a date; word_tables.docx is filed under its core `created` date.
    assert (values["date_min"], values["date_max"]) == ("2024-03-01", "2025-01-31")
    assert values["path_prefix"] == ["notes/"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", "body"),
        (json.dumps({"query": "x", "top_k": 10**9}).encode(), "top_k"),
        (json.dumps({"query": "x" * 100_000}).encode(), "query"),
        (json.dumps({"query": "x", "namespace": "../etc"}).encode(), "namespace"),
        (json.dumps({"query": "x", "unknown": 1}).encode(), "unknown"),
        (json.dumps({"query": "   "}).encode(), "query"),
    ],
)
def test_bad_requests_get_a_4xx_naming_the_field(service, body, field):
    response = client(service).post(
        "/v1/search", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["field"] == field


def test_control_characters_in_a_query_are_searched_not_fatal(service):
    response = client(service).post("/v1/search", json={"query": "ducks\x00\x07\u202e dive"})
    assert response.status_code == 200


def _cached(c: httpx.Client, namespace: str = "default") -> dict[str, int]:
    """This namespace's counters of the answer cache."""
    [counts] = [n for n in c.get("/v1/cache").json()["namespaces"] if n["namespace"] == namespace]
    return dict(counts)


def test_cache_keys_include_filters_and_principal(service):
    c = client(service)
    before = _cached(c)
    plain = c.post("/v1/search", json={"query": "mallard pond", "top_k": 3}).json()
    again = c.post("/v1/search", json={"query": "mallard pond", "top_k": 3}).json()
    filtered = c.post(
        "/v1/search",
        json={"query": "mallard pond", "top_k": 3, "filters": {"organizational_unit": ["Field"]}},
    ).json()
    after = _cached(c)
    assert plain == again
    assert filtered != plain and {r["source_file_name"] for r in filtered["results"]} == {
        "ducks.md"
    }
    assert after["hits"] - before["hits"] == 1
    assert after["misses"] - before["misses"] == 2


def test_failed_answers_are_not_cached(service):
    c = client(service)
    before = c.get("/v1/cache").json()
    for _ in range(2):
        assert c.post("/v1/search", json={"query": "x", "namespace": "nowhere"}).status_code == 404
    after = c.get("/v1/cache").json()
    assert after == before, "nothing counted, and no entry for the missing namespace"


def test_health_and_readiness(service):
    c = client(service, key=None)
    assert c.get("/healthz").json() == {"status": "ok"}
    ready = c.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ok"}
    assert c.get("/docs").status_code == 200 and c.get("/openapi.json").json()["info"]["title"]


def test_access_statistics_are_recorded_off_the_request_path(service, corpus):
    import time

    from query_service.snapshot.stats import AccessStats

    c = client(service)
    top = c.post(
        "/v1/search", json={"query": "geese graze grass", "namespace": "team", "top_k": 1}
    ).json()["results"][0]
    stats = AccessStats(corpus.published_dir)
    deadline = time.monotonic() + 10
    while top["chunk_id"] not in stats.chunk_hits("team") and time.monotonic() < deadline:
        time.sleep(0.1)
    hits, last = stats.chunk_hits("team")[top["chunk_id"]]
    assert hits >= 1 and last


def test_a_new_revision_is_swapped_in_during_a_stream_of_queries(tmp_path):
    settings = load_settings(home=tmp_path / "home")
    build_documents(settings, {"v.md": "# V\n\nThe marker word is alpha.\n"})
    for i in range(12):
        build_documents(settings, {f"f{i}.md": f"# F{i}\n\nFiller marker text {i}.\n"})
    publish_namespaces(settings)
    errors: list[str] = []
    seen: list[tuple[int, str]] = []
    stop = threading.Event()
    local = ServiceSettings(home=settings.home, reload_seconds=0.1, open_access=True)
    with running_service(local) as url:

        def hammer() -> None:
            with httpx.Client(base_url=url, timeout=30) as c:
                while not stop.is_set():
                    r = c.post("/v1/search", json={"query": "marker word", "top_k": 1})
                    if r.status_code != 200:
                        errors.append(r.text)
                        continue
                    body = r.json()
                    seen.append((body["revision"], body["results"][0]["content"]))

        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for th in threads:
            th.start()
        build_documents(settings, {"v.md": "# V\n\nThe marker word is omega.\n"})
        publish_namespaces(settings)
        import time

        deadline = time.monotonic() + 20
        while not any(rev == 2 for rev, _ in seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        stop.set()
        for th in threads:
            th.join()
    assert errors == []
    assert {rev for rev, _ in seen} == {1, 2}
    for rev, content in seen:
        assert content == (
            "V\n\nThe marker word is alpha." if rev == 1 else "V\n\nThe marker word is omega."
        ), "no mixed revision"


def test_agentic_mode_returns_cited_evidence_within_the_budget(service):
    from corpus_pipeline.enrich.tokens import count_tokens

    response = client(service).post(
        "/v1/search",
        json={"mode": "agentic", "query": "What do tufted ducks dive for?", "token_budget": 2000},
    )
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "agentic" and body["answer_text"] == ""
    assert body["evidence_text"].startswith("[1] ducks.md · Ducks > Diving\n")
    first = body["results"][0]
    assert "mussels" in body["evidence_text"][first["span"][0] : first["span"][1]]
    assert first["score"] > 0 and body["plan"][0]["status"] == "done"
    assert count_tokens(response.text) <= 2000 and body["budget"]["used"] <= 2000
    small = client(service).post(
        "/v1/search", json={"mode": "agentic", "query": "x", "token_budget": 5}
    )
    assert small.status_code == 422 and small.json()["field"] == "token_budget"
