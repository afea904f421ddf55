"""What both HTTP apps (the query service and the upload API) declare in their OpenAPI documents
about keys and refusals, in one place: the two security schemes a key may be presented with
(so Swagger UI at `/docs` can authorise), and the error answers, all one shape (`ErrorBody`),
each with when it happens and an example.

`keys.require_principal` depends on both schemes, so every route that needs a key lists them
as alternatives (`security`) and every route that needs none (health, readiness) lists none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from fastapi.security import APIKeyHeader, HTTPBearer
from pydantic import BaseModel

from corpus_pipeline.contracts.api import ErrorBody, Health

BEARER = HTTPBearer(
    scheme_name="bearerAuth",
    description="`Authorization: Bearer <key>`: a key from `corpus keys create`.",
    auto_error=False,
)
API_KEY = APIKeyHeader(
    name="X-API-Key",
    scheme_name="apiKeyAuth",
    description="`X-API-Key: <key>`: the same keys, for clients that cannot set Authorization "
    "(Bearer wins when both are sent).",
    auto_error=False,
)

Responses = dict[int | str, dict[str, Any]]
# Swagger UI (`/docs`) keeps the key given to Authorize across reloads of the page.
SWAGGER_UI: dict[str, Any] = {"persistAuthorization": True}


@dataclass(frozen=True)
class Refusal:
    """One documented error answer: when a route gives it, an example body, and the headers
    it carries (name → what it says)."""

    description: str
    example: ErrorBody
    headers: Mapping[str, str] = field(default_factory=dict)


# What every keyed route of both apps may answer before it runs (`keys.install` answers so).
KEY_REFUSALS: dict[int, Refusal] = {
    401: Refusal(
        "No key, or one the key file does not hold.",
        ErrorBody(detail="missing or invalid API key", field="authorization"),
        {"WWW-Authenticate": "Bearer"},
    ),
    503: Refusal(
        "No usable key file (missing, without keys, unreadable or malformed): every request is "
        "refused until there is one. The answer names the file and the fix.",
        ErrorBody(
            detail="no API keys: $CORPUS_HOME/service/api_keys.json does not exist; create a "
            "key with `corpus keys create NAME --read NAMESPACE`",
            field="authorization",
        ),
    ),
}


def error_responses(refusals: Mapping[int, Refusal], *, keyed: bool = True) -> Responses:
    """`responses=` entries for a route's refusals (plus the key's 401 and 503 when `keyed`),
    each with `ErrorBody` as its schema, its description and its example."""
    chosen = {**(KEY_REFUSALS if keyed else {}), **refusals}
    return {
        status: {
            "model": ErrorBody,
            "description": refusal.description,
            "content": {"application/json": {"example": refusal.example.model_dump(mode="json")}},
            **({"headers": header_docs(refusal.headers)} if refusal.headers else {}),
        }
        for status, refusal in sorted(chosen.items())
    }


def example_response(
    example: BaseModel | Mapping[str, tuple[str, BaseModel]],
    *,
    status: int = 200,
    description: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Responses:
    """A `responses=` entry giving the success answer its example, or its named examples
    (name → (summary, answer)); the schema comes from the route's `response_model`. Examples
    are model instances, so they are valid by construction."""
    media: dict[str, Any] = (
        {"example": example.model_dump(mode="json")}
        if isinstance(example, BaseModel)
        else {
            "examples": {
                name: {"summary": summary, "value": model.model_dump(mode="json")}
                for name, (summary, model) in example.items()
            }
        }
    )
    entry: dict[str, Any] = {"content": {"application/json": media}}
    if description is not None:
        entry["description"] = description
    if headers:
        entry["headers"] = header_docs(headers)
    return {status: entry}


def request_examples(**examples: tuple[str, BaseModel]) -> dict[str, dict[str, Any]]:
    """`openapi_examples=` of a JSON body: name → (summary, the request as a model instance),
    sent as the client would send it (unset fields left out)."""
    return {
        name: {"summary": summary, "value": model.model_dump(mode="json", exclude_unset=True)}
        for name, (summary, model) in examples.items()
    }


def header_docs(headers: Mapping[str, str]) -> dict[str, Any]:
    """OpenAPI `headers` of a response: name → what it says."""
    return {
        name: {"description": text, "schema": {"type": "string"}} for name, text in headers.items()
    }


def amend_openapi(app: FastAPI, amend: Callable[[dict[str, Any]], None]) -> None:
    """`app`'s OpenAPI document as FastAPI generates it, changed by `amend` once (FastAPI
    caches the document on the app, so later requests serve the amended one)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            amend(generate())
        return generate()

    app.openapi = openapi  # type: ignore[method-assign]


def probe_router(ready: Callable[[Request], bool], not_ready: str, readiness_doc: str) -> APIRouter:
    """`/healthz` and `/readyz`, to anyone (everything else is for keys): liveness is always
    ok; readiness is `ready(request)`, 503 `loading` (and `not_ready` in the docs) otherwise.
    `ready` must answer at once: a probe never waits on a busy store."""
    router = APIRouter(tags=["health"])

    @router.get("/healthz", response_model=Health, responses=example_response(Health(status="ok")))
    async def healthz() -> Health:
        """Ok or not, to anyone."""
        return Health(status="ok")

    responses: Responses = {
        **example_response(Health(status="ok")),
        503: {
            "model": Health,
            "description": f"Not ready: {not_ready}",
            "content": {"application/json": {"example": {"status": "loading"}}},
        },
    }

    @router.get("/readyz", response_model=Health, responses=responses, description=readiness_doc)
    async def readyz(request: Request) -> Response:
        is_ready = ready(request)
        body = Health(status="ok" if is_ready else "loading").model_dump_json()
        return Response(body, status_code=200 if is_ready else 503, media_type="application/json")

    return router
