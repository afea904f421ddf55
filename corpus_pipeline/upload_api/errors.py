"""The upload API's refusals at the door: `{"detail", "field": "files"}` with the door's status
(400, 413, 415, 422)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from corpus_pipeline.intake.door import Refused


def install_error_handlers(app: FastAPI) -> None:
    async def _refused(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Refused)
        return JSONResponse(status_code=exc.status, content={"detail": str(exc), "field": "files"})

    app.add_exception_handler(Refused, _refused)
