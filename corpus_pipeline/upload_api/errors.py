"""The upload API's refusals: at the door `{"detail", "field": "files"}` with the door's status
(400, 409, 413, 415), elsewhere `{"detail"}` (403, 404, 422, 429, from `HTTPException`), and
the key's 401 and 503 as `{"detail", "field": "authorization"}` (`access.keys.install`) — one
shape, `ErrorBody`, which the OpenAPI document declares per route (`UPLOAD`, `DELETE`, ...)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from corpus_pipeline.access.openapi import Refusal, error_responses
from corpus_pipeline.contracts.api import ErrorBody
from corpus_pipeline.intake.door import Refused
from corpus_pipeline.upload_api.examples import DOCUMENT_ID, JOB_ID


def install_error_handlers(app: FastAPI) -> None:
    async def _refused(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Refused)
        return JSONResponse(status_code=exc.status, content={"detail": str(exc), "field": "files"})

    app.add_exception_handler(Refused, _refused)


def _door(detail: str) -> ErrorBody:
    return ErrorBody(detail=detail, field="files")


NOT_WRITABLE = Refusal(
    "The key may not write here: to no namespace at all (said before the body is read), or "
    "only reads this one.",
    ErrorBody(detail="this key may not write to namespace 'birds'"),
)
# The refusals of an upload, in the order they can happen.
UPLOAD = error_responses(
    {
        403: NOT_WRITABLE,
        429: Refusal(
            "The key has `CORPUS_MAX_UPLOADS_PER_KEY` uploads in flight already.",
            ErrorBody(detail="this key has 4 uploads in flight already; retry when one is done"),
            {"Retry-After": "Seconds to wait before trying again."},
        ),
        413: Refusal(
            "Too large: the request (by Content-Length, before the body is read, or while "
            "reading), a file, or too many files or fields.",
            _door("'report.pdf' is above the limit of 50 MiB"),
        ),
        400: Refusal(
            "Not a multipart form with files, or a file the door refuses: empty, corrupt, "
            "encrypted without the `password`, sent twice.",
            _door("'notes.md' is empty"),
        ),
        422: Refusal(
            "A form field breaks its schema (`UploadFields`), or is unknown.",
            ErrorBody(detail="form field 'document_date': Input should be a valid date"),
        ),
        404: Refusal(
            "The key cannot read the namespace (it is told it does not exist), or "
            "`replace_document_id` names no document of it.",
            ErrorBody(detail="namespace 'fish' does not exist"),
        ),
        415: Refusal(
            "A file is in no supported format, or its bytes contradict its extension.",
            _door(
                "'a.bin': unsupported format 'unknown': binary content without a known signature"
            ),
        ),
        409: Refusal(
            "A file's name is already a document of the namespace: replacing is explicit.",
            _door(
                f"'ducks.md' is already document '{DOCUMENT_ID}' in namespace 'birds': send "
                f"replace_document_id={DOCUMENT_ID} to replace it, or upload it under another "
                "name"
            ),
        ),
    }
)
NO_DOCUMENT = Refusal(
    "No such document, or none the key can read.", ErrorBody(detail=f"no document '{DOCUMENT_ID}'")
)
NO_JOB = Refusal(
    "No such job, or none in a namespace the key can read.",
    ErrorBody(detail=f"no job '{JOB_ID}'"),
)
DELETE = error_responses({403: NOT_WRITABLE, 404: NO_DOCUMENT})
JOB = error_responses({404: NO_JOB})
RETRY = error_responses(
    {
        400: Refusal(
            "The job did not fail, or the original of its document is gone.",
            ErrorBody(detail=f"job '{JOB_ID}' did not fail (it is queued)"),
        ),
        403: NOT_WRITABLE,
        404: NO_JOB,
    }
)
INGESTION = error_responses(
    {
        404: Refusal(
            "The key cannot read the namespace (it is told it does not exist).",
            ErrorBody(detail="namespace 'fish' does not exist"),
        )
    }
)
