"""Answers that name their revision (in the body and the `X-Corpus-Revision` header), and how
the OpenAPI document describes a route's answers."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi.responses import Response
from pydantic import BaseModel

from corpus_pipeline.access.openapi import Responses, example_response

REVISION_HEADER = {"X-Corpus-Revision": "The published revision that answered (as in the body)."}


def revision_json(model: BaseModel, revision: int) -> Response:
    return Response(
        content=model.model_dump_json(),
        media_type="application/json",
        headers={"X-Corpus-Revision": str(revision)},
    )


def answers(
    example: BaseModel | Mapping[str, tuple[str, BaseModel]],
    errors: Responses,
    *,
    revision: bool = True,
) -> Responses:
    """`responses=` of a route: its success answer's example (with the revision header when
    it names one) and its error answers."""
    return {**example_response(example, headers=REVISION_HEADER if revision else None), **errors}
