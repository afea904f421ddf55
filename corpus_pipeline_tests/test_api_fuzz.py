"""Fuzzing the HTTP API of the real server: schemathesis over /openapi.json, hypothesis over the
request models. Whatever a client sends, the service answers with a 2xx/4xx, never a 5xx."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import date
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err, Ok

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts.api import ReadRef, ReadRequest, ReadResponse
from corpus_pipeline.contracts.artifacts import ChunkType
from corpus_pipeline.contracts.search import (
    CHANNELS,
    SearchFilters,
    SearchRequest,
    SearchResponse,
)
from corpus_pipeline.publish.service import publish
from query_service.config import ServiceSettings

from .http_service import running_service, write_api_keys
from .support import build_documents

pytestmark = pytest.mark.slow

KEY = "fuzz-key"
AUTH = {"Authorization": f"Bearer {KEY}", "X-API-Key": KEY}
FUZZ = settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
MODEL_FUZZ = settings(FUZZ, max_examples=100)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusSettings:
    home = tmp_path_factory.mktemp("fuzz")
    corpus_settings = load_settings(home=home)
    build_documents(
        corpus_settings,
        {
            "ducks.md": "# Ducks\n\n## Diving\n\nTufted ducks dive for mussels.\n\n"
            "## Dabbling\n\nMallards dabble.\n"
        },
        organizational_unit="Field",
        document_date=date(2024, 3, 1),
    )
    build_documents(corpus_settings, {"notes/swans.md": "# Swans\n\nMute swans nest.\n"})
    build_documents(corpus_settings, {"geese.md": "# Geese\n\nGeese graze.\n"}, namespace="team")
    publish(corpus_settings)
    write_api_keys(home, {KEY: ("fuzz", ["*"])})
    return corpus_settings


@pytest.fixture(scope="module")
def base_url(corpus: CorpusSettings) -> Iterator[str]:
    with running_service(ServiceSettings(home=corpus.home, reload_seconds=0.5)) as url:
        yield url


@pytest.fixture(scope="module")
def http(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, headers=AUTH, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def document_ids(http: httpx.Client) -> list[str]:
    items = http.get("/v1/documents", params={"limit": 100}).json()["items"]
    return [d["document_id"] for d in items]


# --- schemathesis: every operation of the published OpenAPI schema -----------------------------


# The lazy `schemathesis.pytest.from_fixture` integration of schemathesis 4.32 fails under pytest 9
# (it rewrites the private `Function._nodeid`), so the operations are driven by hand: for each
# operation of the live /openapi.json and each generation mode, one bounded hypothesis run.


def test_no_operation_answers_with_a_server_error(base_url: str) -> None:
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    results = list(schema.get_all_operations())
    assert not [r.err() for r in results if isinstance(r, Err)]  # the schema itself is valid
    operations = [r.ok() for r in results if isinstance(r, Ok)]
    assert len(operations) >= 10, [op.label for op in operations]
    calls: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    failures: dict[str, str] = {}
    for operation in operations:
        # Negative cases need something that can be invalid: a path or query parameter, or a body
        # (a string header such as X-API-Key cannot be made to violate its schema).
        invalidable = bool(
            len(operation.path_parameters) or len(operation.query) or len(operation.body)
        )
        for mode in GenerationMode if invalidable else [GenerationMode.POSITIVE]:

            @FUZZ
            @given(case=operation.as_strategy(generation_mode=mode))
            def run(case: schemathesis.Case[Any]) -> None:
                response = case.call_and_validate(
                    base_url=base_url, headers=AUTH, checks=[not_a_server_error]
                )
                calls[case.operation.label] += 1
                statuses[response.status_code] += 1

            try:
                run()
            except Exception as exc:  # every operation runs; all failures are reported together
                failures[f"{operation.label} ({mode})"] = f"{type(exc).__name__}: {exc}"
    print(  # the run summary (pytest -s)
        f"schemathesis: {sum(calls.values())} calls over {len(calls)} operations, "
        f"statuses {dict(sorted(statuses.items()))}"
    )
    assert not failures, failures
    assert set(calls) == {op.label for op in operations}, calls
    assert statuses[200] > 0 and 401 not in statuses, statuses  # fuzzed with a valid key


# --- hypothesis: request models, valid and arbitrary ------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(
        allow_nan=False, allow_infinity=False
    )  # non-finite: see test_non_finite_weights_are_refused
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
NAMESPACES = st.sampled_from(["default", "default", "team", "nowhere"])
# JSON escapes can carry what st.text() never generates: lone surrogates ("\ud800"), NUL.
ODD_TEXTS = st.lists(
    st.sampled_from(["\ud800", "\udfff", "\x00", "a", "é", " ", "'", "%", "/", "*"]), max_size=4
).map("".join)
TEXTS = st.one_of(st.text(max_size=40), ODD_TEXTS)
TEXT_LISTS = st.lists(TEXTS, max_size=3)
CLEAN_TEXT_LISTS = st.lists(st.text(max_size=40), max_size=3)  # what a valid model may hold


@st.composite
def bodies(
    draw: st.DrawFn,
    required: dict[str, st.SearchStrategy[Any]],
    optional: dict[str, st.SearchStrategy[Any]],
) -> dict[str, Any]:
    """A plausible JSON object (so that it often gets past validation to the work itself),
    sometimes with one field, or an unknown one, replaced by any JSON value at all."""
    body: dict[str, Any] = draw(st.fixed_dictionaries(required, optional=optional))
    if draw(st.integers(min_value=0, max_value=4)) == 3:  # not 0: hypothesis favours 0
        key = draw(st.sampled_from(["unknown", *required, *optional]))
        body[key] = draw(JSON_VALUES)
    return body


FILTER_DICTS = bodies(
    {},
    {
        "document_type": st.lists(st.sampled_from(["markdown", "docx", "pdf"]), min_size=1),
        "source": st.lists(TEXTS, min_size=1, max_size=2),
        "organizational_unit": st.lists(st.sampled_from(["Field", "field", "x"]), min_size=1),
        "date_from": st.dates().map(str),
        "date_to": st.dates().map(str),
        "document_ids": st.lists(TEXTS, min_size=1, max_size=2),
        "path_prefix": st.lists(
            st.sampled_from(["notes/", "notes", "/", "x/"]) | TEXTS, min_size=1
        ),
    },
)
SEARCH_DICTS = bodies(
    {"query": st.sampled_from(["ducks", "mallard dabble", "*", "\x00 ducks"]) | TEXTS},
    {
        "mode": st.just("classic"),
        "namespace": NAMESPACES,
        "top_k": st.integers(min_value=-3, max_value=300),
        "chunk_types": st.lists(st.sampled_from([*ChunkType, "bogus"]), min_size=1, max_size=3),
        "exclude_document_ids": TEXT_LISTS,
        "exclude_section_paths": st.lists(TEXT_LISTS, max_size=3),
        "filters": FILTER_DICTS,
        "weights": st.dictionaries(
            st.sampled_from([*CHANNELS, "bogus"]),
            st.floats(
                min_value=-1, max_value=1e300
            ),  # non-finite: see test_non_finite_weights_are_refused
        ),
    },
)
REF_DICTS = st.one_of(
    bodies({"chunk_id": st.sampled_from(["c" + "0" * 32, ""]) | TEXTS}, {}),
    bodies({"document_id": TEXTS}, {"section_path": TEXT_LISTS}),
    bodies({}, {"chunk_id": TEXTS, "document_id": TEXTS, "section_path": TEXT_LISTS}),
)
READ_DICTS = bodies(
    {"refs": st.lists(REF_DICTS, min_size=1, max_size=4)},
    {
        "namespace": NAMESPACES,
        "max_chunks_per_ref": st.integers(min_value=-2, max_value=600),
    },
)


def post_json(http: httpx.Client, path: str, body: Any) -> httpx.Response:
    """Post like a lenient JSON encoder would: NaN and Infinity are sent as such."""
    return http.post(path, content=json.dumps(body), headers={"Content-Type": "application/json"})


def assert_handled(
    response: httpx.Response, allowed: set[int], model: type[SearchResponse | ReadResponse]
) -> None:
    assert response.status_code in allowed, (response.status_code, response.text)
    body = response.json()
    if response.status_code == 200:
        model.model_validate_json(response.content)  # the answer keeps its own contract
    if response.status_code == 422:
        assert isinstance(body["detail"], str) and body["detail"], body
        assert "field" in body, body
        assert body["field"] is None or isinstance(body["field"], str), body


@MODEL_FUZZ
@given(body=SEARCH_DICTS)
def test_search_answers_arbitrary_bodies_with_200_404_or_422(
    http: httpx.Client, body: dict[str, Any]
) -> None:
    assert_handled(post_json(http, "/v1/search", body), {200, 404, 422}, SearchResponse)


@MODEL_FUZZ
@given(body=READ_DICTS)
def test_read_answers_arbitrary_bodies_with_200_404_or_422(
    http: httpx.Client, body: dict[str, Any]
) -> None:
    assert_handled(post_json(http, "/v1/read", body), {200, 404, 422}, ReadResponse)


def valid_filters() -> st.SearchStrategy[SearchFilters]:
    values = st.lists(st.text(min_size=1, max_size=10).filter(str.strip), min_size=1, max_size=2)
    dates = st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 1, 1))
    return st.builds(
        SearchFilters,
        document_type=st.none() | values,
        source=st.none() | values,
        organizational_unit=st.none() | st.just(["Field"]) | values,
        date_from=st.none() | dates,
        date_to=st.none(),
        document_ids=st.none() | values,
        path_prefix=st.none() | st.just(["notes/"]) | values,
    )


VALID_SEARCHES = st.builds(
    SearchRequest,
    query=st.text(min_size=1, max_size=60).filter(str.strip),
    namespace=st.sampled_from(["default", "team", "nowhere"]),
    top_k=st.integers(min_value=1, max_value=200),
    chunk_types=st.lists(st.sampled_from(list(ChunkType)), min_size=1, max_size=3),
    exclude_document_ids=CLEAN_TEXT_LISTS,
    exclude_section_paths=st.lists(CLEAN_TEXT_LISTS, max_size=2),
    filters=valid_filters(),
    weights=st.none()
    | st.dictionaries(
        st.sampled_from(CHANNELS), st.floats(min_value=0, max_value=1e6, allow_nan=False)
    ),
)
VALID_REFS = st.one_of(
    st.builds(ReadRef, chunk_id=st.text(max_size=64)),
    st.builds(
        ReadRef,
        document_id=st.text(max_size=200),
        section_path=st.none() | st.lists(st.text(max_size=20), max_size=4),
    ),
)


@MODEL_FUZZ
@given(request=VALID_SEARCHES)
def test_a_valid_search_request_is_answered_200_or_404(
    http: httpx.Client, request: SearchRequest
) -> None:
    response = http.post("/v1/search", json=request.model_dump(mode="json"))
    assert_handled(response, {200, 404}, SearchResponse)
    if response.status_code == 404:
        assert request.namespace == "nowhere"


@MODEL_FUZZ
@given(
    namespace=st.sampled_from(["default", "team", "nowhere"]),
    refs=st.lists(VALID_REFS, min_size=1, max_size=5),
    known=st.lists(st.integers(min_value=0, max_value=10), max_size=2),
)
def test_a_valid_read_request_is_answered_200_or_404_with_a_status_per_ref(
    http: httpx.Client,
    document_ids: list[str],
    namespace: str,
    refs: list[ReadRef],
    known: list[int],
) -> None:
    refs = refs + [ReadRef(document_id=document_ids[i % len(document_ids)]) for i in known]
    request = ReadRequest(namespace=namespace, refs=refs)
    response = http.post("/v1/read", json=request.model_dump(mode="json"))
    assert_handled(response, {200, 404}, ReadResponse)
    if response.status_code == 404:
        assert namespace == "nowhere"
    else:
        items = response.json()["items"]
        assert len(items) == len({ref.model_dump_json() for ref in refs})  # each ref read once
        assert all(item["status"] in ("ok", "not_found") for item in items)


@pytest.mark.parametrize("weight", ["NaN", "Infinity", "1e400"])
def test_non_finite_weights_are_refused(http: httpx.Client, weight: str) -> None:
    body = '{"query": "ducks", "weights": {"path": ' + weight + ', "content": 1}}'
    response = http.post("/v1/search", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["field"].startswith("weights")


LONE_SURROGATE = "\\ud800"  # as sent on the wire: a JSON escape, not UTF-8


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/search", '{"query": "q\\ud800"}', "query"),
        (
            "/v1/search",
            '{"query": "ducks", "filters": {"document_ids": ["%s"]}}',
            "filters.document_ids.0",
        ),
        (
            "/v1/search",
            '{"query": "ducks", "filters": {"path_prefix": ["%s"]}}',
            "filters.path_prefix.0",
        ),
        ("/v1/search", '{"query": "ducks", "filters": {"source": ["%s"]}}', "filters.source.0"),
        (
            "/v1/search",
            '{"query": "ducks", "exclude_document_ids": ["%s"]}',
            "exclude_document_ids.0",
        ),
        (
            "/v1/search",
            '{"query": "ducks", "exclude_section_paths": [["a", "%s"]]}',
            "exclude_section_paths.0.1",
        ),
        ("/v1/read", '{"refs": [{"chunk_id": "%s"}]}', "refs.0.chunk_id"),
        (
            "/v1/read",
            '{"refs": [{"document_id": "d", "section_path": ["%s"]}]}',
            "refs.0.section_path.0",
        ),
    ],
)
def test_lone_surrogates_are_refused_with_422_naming_the_field(
    http: httpx.Client, path: str, body: str, field: str
) -> None:
    """A regression found by the fuzzers: unconstrained str fields used to carry a lone surrogate
    into the service, where encoding it failed with a 500."""
    content = body.replace("%s", LONE_SURROGATE) if "%s" in body else body
    response = http.post(path, content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
