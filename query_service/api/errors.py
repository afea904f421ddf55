"""How the query API answers what it refuses: `{"detail", "field"}` with the status, the same
shape for every route (refused keys answer so too: `access.keys.install`)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from corpus_pipeline.access.openapi import Refusal, error_responses
from corpus_pipeline.contracts.api import ErrorBody
from query_service.retrieval.agentic import BudgetTooSmall
from query_service.snapshot.revision import NamespaceNotFound
from query_service.snapshot.store import DocumentNotFound, ResourceNotFound

# The refusals of the routes, for the OpenAPI description (the handlers below give them).
NO_NAMESPACE = Refusal(
    "The namespace has no published revision, or the key may not read it (both answer alike).",
    ErrorBody(detail="namespace 'nowhere' has no published revision", field="namespace"),
)
NO_DOCUMENT = Refusal(
    "No such document in the namespace's revision (or no such namespace, as above).",
    ErrorBody(detail="document 'nope' not found", field="document_id"),
)
NO_RESOURCE = Refusal(
    "No such table or image in the document (or no such document or namespace, as above).",
    ErrorBody(
        detail="resource 'images/x.png' not found in document 'ducks-field-notes-txt-7f4f0fb9edeb'",
        field="ref",
    ),
)


def _breaks_schema(field: str, message: str, also: str = "") -> Refusal:
    """The 422 of a request that breaks its schema (`_invalid` below answers it)."""
    return Refusal(
        "The request breaks its schema: the first problem, as `field: message`." + also,
        ErrorBody(detail=f"{field}: {message}", field=field),
    )


BAD_NAMESPACE = _breaks_schema(
    "namespace", "String should match pattern '^[a-z0-9][a-z0-9_-]{0,63}$'"
)
BAD_DOCUMENT_ID = _breaks_schema("document_id", "String should have at most 200 characters")
# The error answers of each kind of keyed route: what it may refuse, besides the key.
KEYED = error_responses({})
NAMESPACED = error_responses({404: NO_NAMESPACE, 422: BAD_NAMESPACE})
LISTED = error_responses(
    {404: NO_NAMESPACE, 422: _breaks_schema("limit", "Input should be less than or equal to 500")}
)
SEARCHED = error_responses(
    {
        404: NO_NAMESPACE,
        422: _breaks_schema(
            "query",
            "String should have at least 1 character",
            " Agentic search answers so too when `token_budget` cannot hold even an answer "
            "without evidence.",
        ),
    }
)
READ = error_responses(
    {
        404: NO_NAMESPACE,
        422: _breaks_schema("refs", "List should have at least 1 item after validation, not 0"),
    }
)
DOCUMENT = error_responses({404: NO_DOCUMENT, 422: BAD_DOCUMENT_ID})
RESOURCE = error_responses({404: NO_RESOURCE, 422: BAD_DOCUMENT_ID})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(NamespaceNotFound, _no_namespace)
    app.add_exception_handler(BudgetTooSmall, _budget)
    app.add_exception_handler(DocumentNotFound, _no_document)
    app.add_exception_handler(ResourceNotFound, _no_resource)
    app.add_exception_handler(RequestValidationError, _invalid)


async def _no_namespace(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": str(exc), "field": "namespace"})


async def _budget(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(
        status_code=422, content={"detail": f"token_budget: {exc}", "field": "token_budget"}
    )


async def _no_document(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": str(exc), "field": "document_id"})


async def _no_resource(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": str(exc), "field": "ref"})


async def _invalid(_: Request, exc: Exception) -> JSONResponse:
    """The first problem, as `field: message` (the field without its location or the search
    mode's union tag)."""
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    if first.get("type") == "json_invalid":
        return JSONResponse(
            status_code=422, content={"detail": "body: malformed JSON", "field": "body"}
        )
    loc = [str(p) for p in first.get("loc", ())]
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]  # the location (body, query string, ...), not the field
    if loc and loc[0] in ("classic", "agentic"):
        loc = loc[1:]  # the search mode's union tag, not the field
    field = ".".join(loc) or None
    message = str(first.get("msg", "invalid request"))
    return JSONResponse(
        status_code=422,
        content={"detail": f"{field}: {message}" if field else message, "field": field},
    )


def require_unicode(request: BaseModel) -> None:
    """A JSON escape such as "\\ud800" puts a lone surrogate into a str field that has no length
    or pattern constraint (pydantic only checks those); nothing downstream can encode it, so
    it is refused here as a 422 naming the field, like the constrained fields already are."""

    def find(value: Any, loc: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return loc
            return None
        if isinstance(value, dict | list):
            for key, child in value.items() if isinstance(value, dict) else enumerate(value):
                found = find(child, (*loc, key))
                if found is not None:
                    return found
        return None

    loc = find(request.model_dump(), ())
    if loc is not None:
        raise RequestValidationError(
            [
                {
                    "type": "string_unicode",
                    "loc": ("body", *loc),
                    "msg": "Input should be a valid string, unable to parse raw data as a unicode string",
                }
            ]
        )
