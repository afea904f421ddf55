"""Answers that name their revision (in the body and the `X-Corpus-Revision` header)."""

from __future__ import annotations

from fastapi.responses import Response
from pydantic import BaseModel


def revision_json(model: BaseModel, revision: int) -> Response:
    return Response(
        content=model.model_dump_json(),
        media_type="application/json",
        headers={"X-Corpus-Revision": str(revision)},
    )
