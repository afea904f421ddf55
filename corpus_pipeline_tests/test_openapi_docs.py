"""The OpenAPI documents of both HTTP apps (the query service and the upload API) work in the
browser: both key headers are security schemes Swagger UI can authorise with, every keyed
route says so and no public one does, every route has examples that validate against its
schemas, and the refusals and answers the routes really give match what is documented.

Which routes need a key is found by calling each one without a key (401), never read from the
document it is checked against. The apps run in process (`TestClient`), over a published
namespace and a key file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.api import ReadRequest
from corpus_pipeline.contracts.jobs import UploadFields
from corpus_pipeline.upload_api.app import create_ingest_app
from query_service.api.app import create_app
from query_service.api.routes.search import SearchBody
from query_service.config import ServiceSettings

from .http_service import write_api_keys
from .support import published_home

KEY = "docs-writer"  # reads and writes "default"
READER = "docs-reader"  # only reads it
BEARER = {"Authorization": f"Bearer {KEY}"}
BOTH_SCHEMES: list[dict[str, list[str]]] = [{"bearerAuth": []}, {"apiKeyAuth": []}]
DUCKS = (
    "# Ducks\n\n## Diving\n\nTufted ducks dive for mussels.\n\n## Dabbling\n\nMallards dabble.\n"
)
# A keyed GET of each app, answered 200 to the writer.
PROBES = {"query": "/v1/namespaces", "upload": "/v1/namespaces/{namespace}/ingestion"}
# The models the request examples must parse with, by (app, path).
REQUEST_MODELS: dict[tuple[str, str], TypeAdapter[Any]] = {
    ("query", "/v1/search"): TypeAdapter(SearchBody),
    ("query", "/v1/read"): TypeAdapter(ReadRequest),
    ("upload", "/v1/documents"): TypeAdapter(UploadFields),
}


def _write_keys(home: Path) -> None:
    write_api_keys(
        home, {KEY: ("writer", ["default"]), READER: ("reader", ["default"])}, {KEY: ["default"]}
    )


@pytest.fixture(scope="module")
def query_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A home with one published document and the key file; the document's id."""
    home = tmp_path_factory.mktemp("openapi-query")
    _, records = published_home(home, {"ducks.md": DUCKS})
    _write_keys(home)
    return home, records["ducks.md"].document_id


@pytest.fixture(scope="module")
def query(query_home: tuple[Path, str]) -> Iterator[TestClient]:
    with TestClient(create_app(ServiceSettings(home=query_home[0]))) as client:
        yield client


@pytest.fixture(scope="module")
def upload(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The upload API with its worker off (jobs stay queued) and 1 MiB request limits."""
    home = tmp_path_factory.mktemp("openapi-upload")
    _write_keys(home)
    settings = load_settings(home=home, max_request_mb=1, max_upload_mb=1)
    with TestClient(create_ingest_app(settings, worker=False)) as client:
        yield client


@pytest.fixture(params=["query", "upload"])
def app_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(app_name: str, request: pytest.FixtureRequest) -> TestClient:
    found: TestClient = request.getfixturevalue(app_name)
    return found


def _spec(client: TestClient) -> dict[str, Any]:
    spec: dict[str, Any] = client.get("/openapi.json").json()
    return spec


def _operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            yield method, path, operation


def _examples(media: dict[str, Any]) -> list[Any]:
    """The examples of a media type object: its `example` and every named one."""
    single = [media["example"]] if "example" in media else []
    return single + [named["value"] for named in media.get("examples", {}).values()]


def _success(operation: dict[str, Any]) -> str:
    return next(str(status) for status in operation["responses"] if status.startswith("2"))


def _validator(spec: dict[str, Any], *location: str) -> Draft202012Validator:
    """A validator of the schema at `location` in the document, its `$ref`s resolved in the
    document itself (a referencing registry holding it)."""
    registry: Registry[Any] = Registry().with_resource(
        "urn:openapi", DRAFT202012.create_resource(spec)
    )
    pointer = "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in location)
    return Draft202012Validator({"$ref": f"urn:openapi#{quote(pointer)}"}, registry=registry)


def _mismatches(spec: dict[str, Any], method: str, path: str, answer: httpx2.Response) -> list[str]:
    """How a JSON answer departs from the schema its operation documents for its status (a
    status it does not document is a departure too)."""
    responses = spec["paths"][path][method]["responses"]
    status = str(answer.status_code)
    if status not in responses:
        return [f"{status} is not documented (only {sorted(responses)})"]
    location = ("paths", path, method, "responses", status, "content", "application/json")
    return [e.message for e in _validator(spec, *location, "schema").iter_errors(answer.json())]


def _url(path: str, document_id: str = "nope") -> str:
    return (
        path.replace("{namespace}", "default")
        .replace("{document_id}", document_id)
        .replace("{ref}", "tables/table-0001.html")
        .replace("{job_id}", "nope")
    )


def _request_example(operation: dict[str, Any]) -> Any:
    """The first example of the operation's JSON body (None without one)."""
    media = operation.get("requestBody", {}).get("content", {}).get("application/json")
    return _examples(media)[0] if media else None


def _call(client: TestClient, method: str, path: str, headers: dict[str, str]) -> httpx2.Response:
    """One operation called with `headers` and its first JSON request example, if any."""
    operation = _spec(client)["paths"][path][method]
    return client.request(method, _url(path), json=_request_example(operation), headers=headers)


# -- security schemes ------------------------------------------------------------------------


def test_both_apps_declare_the_bearer_and_the_api_key_scheme(client: TestClient):
    schemes = _spec(client)["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["type"] == "http"
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    assert (schemes["apiKeyAuth"]["type"], schemes["apiKeyAuth"]["in"]) == ("apiKey", "header")
    assert schemes["apiKeyAuth"]["name"] == "X-API-Key"


def test_the_operations_refused_without_a_key_are_exactly_those_listing_both_schemes(
    client: TestClient,
):
    spec = _spec(client)
    refused, listed = set(), set()
    for method, path, operation in _operations(spec):
        answer = _call(client, method, path, {})
        if answer.status_code == 401:
            refused.add((method, path))
        else:
            assert answer.status_code == 200, (method, path, answer.text)  # health, readiness
        if "security" in operation:
            assert operation["security"] == BOTH_SCHEMES, (method, path)
            listed.add((method, path))
    assert refused == listed
    every = {(method, path) for method, path, _ in _operations(spec)}
    assert {path for _, path in every - refused} == {"/healthz", "/readyz"}


def test_without_a_key_file_every_keyed_operation_answers_the_documented_503(
    app_name: str, tmp_path: Path
):
    home = tmp_path / "home"
    app = (
        create_app(ServiceSettings(home=home))
        if app_name == "query"
        else create_ingest_app(load_settings(home=home), worker=False)
    )
    with TestClient(app) as client:
        spec = _spec(client)
        for method, path, operation in _operations(spec):
            if "security" in operation:
                answer = _call(client, method, path, BEARER)
                documented = operation["responses"]["503"]["content"]["application/json"]
                assert (answer.status_code, answer.json()) == (503, documented["example"])


def test_a_bearer_header_wins_over_x_api_key_as_before_the_schemes(query: TestClient):
    """The schemes declare the headers; the key is still read by the one rule MCP uses too."""
    wrong_bearer = {"Authorization": "Bearer nope", "X-API-Key": KEY}
    other_scheme = {"Authorization": "Basic eDp5", "X-API-Key": KEY}
    assert query.get("/v1/namespaces", headers=wrong_bearer).status_code == 401
    assert query.get("/v1/namespaces", headers=other_scheme).status_code == 200


# -- examples ----------------------------------------------------------------------------------


def test_every_operation_has_examples_of_its_body_and_its_success_answer(client: TestClient):
    for method, path, operation in _operations(_spec(client)):
        for media in operation.get("requestBody", {}).get("content", {}).values():
            assert _examples(media), (method, path, "request")
        answer = operation["responses"][_success(operation)]
        assert any(_examples(m) for m in answer["content"].values()), (method, path)


def test_every_example_validates_against_its_schema(client: TestClient):
    spec = _spec(client)
    checked = 0
    for method, path, operation in _operations(spec):
        places = [(("requestBody",), operation.get("requestBody", {}))] + [
            (("responses", status), answer) for status, answer in operation["responses"].items()
        ]
        for where, part in places:
            for media_type, media in part.get("content", {}).items():
                validator = _validator(
                    spec, "paths", path, method, *where, "content", media_type, "schema"
                )
                for example in _examples(media):
                    errors = [e.message for e in validator.iter_errors(example)]
                    assert not errors, (method, path, where, errors)
                    checked += 1
    assert checked >= 3 * len(list(_operations(spec)))


def test_request_examples_parse_with_their_request_models(app_name: str, client: TestClient):
    bodies = {
        path: operation["requestBody"]
        for _, path, operation in _operations(_spec(client))
        if "requestBody" in operation
    }
    assert {(app_name, path) for path in bodies} == {k for k in REQUEST_MODELS if k[0] == app_name}
    for path, body in bodies.items():
        for media_type, media in body["content"].items():
            for example in _examples(media):
                fields = {k: v for k, v in example.items() if k != "files"}
                REQUEST_MODELS[app_name, path].validate_python(
                    fields if media_type == "multipart/form-data" else example
                )


# -- answers and refusals, as the routes give them ----------------------------------------------

# (app, method, operation path, URL, request arguments, status): refusals the routes give.
REFUSALS = [
    ("query", "get", "/v1/namespaces", "/v1/namespaces", {"headers": {}}, 401),
    ("query", "post", "/v1/search", "/v1/search", {"json": {"query": ""}}, 422),
    ("query", "post", "/v1/search", "/v1/search", {"json": {"query": "x", "namespace": "no"}}, 404),
    ("query", "post", "/v1/read", "/v1/read", {"json": {"refs": []}}, 422),
    ("query", "get", "/v1/documents", "/v1/documents?limit=0", {}, 422),
    ("query", "get", "/v1/documents/{document_id}", "/v1/documents/nope", {}, 404),
    (
        "query",
        "get",
        "/v1/documents/{document_id}/resources/{ref}",
        "/v1/documents/nope/resources/images/x.png",
        {},
        404,
    ),
    (
        "query",
        "get",
        "/v1/namespaces/{namespace}/filter-values",
        "/v1/namespaces/nowhere/filter-values",
        {},
        404,
    ),
    ("upload", "get", "/v1/jobs/{job_id}", "/v1/jobs/nope", {"headers": {}}, 401),
    ("upload", "get", "/v1/jobs/{job_id}", "/v1/jobs/nope", {}, 404),
    ("upload", "post", "/v1/jobs/{job_id}/retry", "/v1/jobs/nope/retry", {}, 404),
    ("upload", "delete", "/v1/documents/{document_id}", "/v1/documents/nope", {}, 404),
    (
        "upload",
        "post",
        "/v1/documents",
        "/v1/documents",
        {"files": {"files": ("a.md", b"# A\n")}, "headers": {"X-API-Key": READER}},
        403,
    ),
    ("upload", "post", "/v1/documents", "/v1/documents", {"data": {"namespace": "x"}}, 400),
    ("upload", "post", "/v1/documents", "/v1/documents", {"files": {"files": ("a.md", b"")}}, 400),
    (
        "upload",
        "post",
        "/v1/documents",
        "/v1/documents",
        {"files": {"files": ("a.md", b"# A\n")}, "data": {"document_date": "soon"}},
        422,
    ),
    (
        "upload",
        "post",
        "/v1/documents",
        "/v1/documents",
        {"files": {"files": ("a.bin", bytes(range(256)) * 4)}},
        415,
    ),
    (
        "upload",
        "post",
        "/v1/documents",
        "/v1/documents",
        {"files": {"files": ("big.md", b"#" * (2 * 1024 * 1024))}},
        413,
    ),
    (
        "upload",
        "get",
        "/v1/namespaces/{namespace}/ingestion",
        "/v1/namespaces/fish/ingestion",
        {},
        404,
    ),
]


@pytest.mark.parametrize(
    ("app_name", "method", "path", "url", "arguments", "status"),
    REFUSALS,
    ids=[f"{case[0]}-{case[1]}-{case[3]}-{case[5]}" for case in REFUSALS],
)
def test_a_refusal_is_documented_for_its_route_and_has_the_documented_shape(
    client: TestClient,
    method: str,
    path: str,
    url: str,
    arguments: dict[str, Any],
    status: int,
):
    answer = client.request(method, url, **{"headers": BEARER, **arguments})
    assert answer.status_code == status, answer.text
    assert _mismatches(_spec(client), method, path, answer) == []


def test_a_name_uploaded_twice_is_the_documented_409(upload: TestClient):
    def send() -> httpx2.Response:
        return upload.post("/v1/documents", files={"files": ("twice.md", b"# T\n")}, headers=BEARER)

    assert send().status_code == 202
    again = send()
    assert again.status_code == 409
    assert _mismatches(_spec(upload), "post", "/v1/documents", again) == []


def test_a_missing_key_answers_exactly_the_documented_401(app_name: str, client: TestClient):
    refused = client.get(_url(PROBES[app_name]))
    documented = _spec(client)["paths"][PROBES[app_name]]["get"]["responses"]["401"]
    assert refused.json() == documented["content"]["application/json"]["example"]
    assert list(documented["headers"]) == ["WWW-Authenticate"]
    assert refused.headers["WWW-Authenticate"] == "Bearer"


def test_the_query_services_answers_validate_against_their_documented_schemas(
    query: TestClient, query_home: tuple[Path, str]
):
    spec = _spec(query)
    document_id = query_home[1]
    validated = []
    for method, path, operation in _operations(spec):
        media_type = next(iter(operation["responses"]["200"]["content"]))
        if media_type != "application/json":
            continue  # the stored file itself (`resources`)
        answer = query.request(
            method, _url(path, document_id), json=_request_example(operation), headers=BEARER
        )
        assert answer.status_code == 200, (path, answer.text)
        assert _mismatches(spec, method, path, answer) == [], path
        validated.append(path)
    assert "/v1/documents/{document_id}" in validated and "/v1/search" in validated


def test_the_upload_apis_answers_validate_against_their_documented_schemas(upload: TestClient):
    spec = _spec(upload)
    queued = upload.post(
        "/v1/documents", files={"files": ("answers.md", b"# Answers\n")}, headers=BEARER
    )
    [entry] = queued.json()["files"]
    answers = {
        ("post", "/v1/documents"): queued,
        ("get", "/v1/jobs/{job_id}"): upload.get(f"/v1/jobs/{entry['job_id']}", headers=BEARER),
        ("get", "/v1/namespaces/{namespace}/ingestion"): upload.get(
            "/v1/namespaces/default/ingestion", headers=BEARER
        ),
        ("delete", "/v1/documents/{document_id}"): upload.delete(
            f"/v1/documents/{entry['document_id']}", headers=BEARER
        ),
    }
    for (method, path), answer in answers.items():
        assert answer.is_success, answer.text
        assert _mismatches(spec, method, path, answer) == [], path


# -- Swagger UI ----------------------------------------------------------------------------------


def test_swagger_ui_is_served_at_docs_over_the_openapi_document(client: TestClient):
    page = client.get("/docs")
    assert page.status_code == 200
    assert "swagger-ui" in page.text and "'/openapi.json'" in page.text
    assert '"persistAuthorization": true' in page.text  # the key survives a reload


@pytest.mark.parametrize("headers", [BEARER, {"X-API-Key": KEY}], ids=["bearer", "x-api-key"])
def test_an_authorised_call_works_with_either_header(
    app_name: str, client: TestClient, headers: dict[str, str]
):
    answer = client.get(_url(PROBES[app_name]), headers=headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    namespaces = [n["namespace"] for n in body["namespaces"]] if "namespaces" in body else []
    assert "default" in namespaces or body["namespace"] == "default"
