"""`/v1/documents`: the documents of a namespace, one document's detail, outline and
neighbours, and the tables and images it holds (`resources`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response
from pydantic import BaseModel

from corpus_pipeline.access.openapi import Responses, header_docs
from corpus_pipeline.contracts.api import DocumentDetail, DocumentList, Neighbors, Outline
from query_service.api.deps import (
    DocumentIdParam,
    NamespaceParam,
    PrincipalDep,
    ServiceDep,
    run_blocking,
)
from query_service.api.errors import DOCUMENT, LISTED, RESOURCE
from query_service.api.examples import (
    DOCUMENT_DETAIL,
    DOCUMENT_LIST,
    NEIGHBORS,
    OUTLINE,
    TABLE_HTML,
)
from query_service.api.responses import REVISION_HEADER, answers, revision_json

router = APIRouter(tags=["documents"])


@router.get("/v1/documents", response_model=DocumentList, responses=answers(DOCUMENT_LIST, LISTED))
async def documents(
    svc: ServiceDep,
    principal: PrincipalDep,
    namespace: NamespaceParam = "default",
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Response:
    response = await run_blocking(svc, svc.documents, principal, namespace, offset, limit)
    return revision_json(response, response.revision)


def _document_view(path: str, model: type[BaseModel], name: str, example: BaseModel) -> None:
    """`GET path`: one document's view, `QueryService.<name>(principal, namespace, document_id)`
    (the detail, the outline, the neighbours), answered with its revision."""

    async def view(
        document_id: DocumentIdParam,
        svc: ServiceDep,
        principal: PrincipalDep,
        namespace: NamespaceParam = "default",
    ) -> Response:
        response = await run_blocking(svc, getattr(svc, name), principal, namespace, document_id)
        return revision_json(response, response.revision)

    view.__name__ = view.__qualname__ = name
    router.get(path, response_model=model, responses=answers(example, DOCUMENT), name=name)(view)


_document_view("/v1/documents/{document_id}", DocumentDetail, "document", DOCUMENT_DETAIL)
_document_view("/v1/documents/{document_id}/outline", Outline, "outline", OUTLINE)
_document_view("/v1/documents/{document_id}/neighbors", Neighbors, "neighbors", NEIGHBORS)

# The stored file as it is served: an image's bytes, or a table's HTML.
RESOURCE_ANSWERS: Responses = {
    200: {
        "description": "The stored file: image/png, image/jpeg, … or table HTML.",
        "headers": header_docs({**REVISION_HEADER, "ETag": "The file's SHA-256, quoted."}),
        "content": {
            "image/png": {"schema": {"type": "string", "format": "binary"}},
            "image/jpeg": {"schema": {"type": "string", "format": "binary"}},
            "text/html": {"schema": {"type": "string"}, "example": TABLE_HTML},
        },
    },
    **RESOURCE,
}


@router.get(
    "/v1/documents/{document_id}/resources/{ref:path}",
    response_class=Response,
    responses=RESOURCE_ANSWERS,
)
async def resource(
    document_id: DocumentIdParam,
    ref: Annotated[str, Path(description="Relative ref, e.g. images/<phash>.png.")],
    svc: ServiceDep,
    principal: PrincipalDep,
    namespace: NamespaceParam = "default",
) -> Response:
    """A table or image of a document, by the relative ref its results name (`url`)."""
    found = await run_blocking(svc, svc.resource, principal, namespace, document_id, ref)
    return Response(
        content=found.data,
        media_type=found.media_type,
        headers={
            "X-Corpus-Revision": str(found.revision),
            "ETag": f'"{found.sha256}"',
            # Document content: never sniffed or run as active content of this origin.
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
        },
    )
