"""Examples of the upload API's requests and answers, for its OpenAPI document (Swagger UI shows
them at `/docs`). The answers are contract instances, so they are valid by construction; the
values are what the API answers to an upload of a small Markdown file."""

from __future__ import annotations

from datetime import date
from typing import Any

from corpus_pipeline.contracts.jobs import (
    IngestionStatus,
    Job,
    QueuedFile,
    UploadFields,
    UploadResponse,
)

DOCUMENT_ID = "ducks-md-3d2d743166dc"
JOB_ID = "7e144ad5c870405db7dc6c61a0f02f51"
FILE_TEXT = "# Ducks\n\nTufted ducks dive for mussels.\n"


def _form(fields: UploadFields) -> dict[str, Any]:
    """A multipart form as OpenAPI shows it: the files (here one Markdown file's text) and the
    fields that were set."""
    return {"files": [FILE_TEXT], **fields.model_dump(mode="json", exclude_unset=True)}


UPLOAD_FORMS: dict[str, dict[str, Any]] = {
    "new": {
        "summary": "New documents, filed under a unit and a date",
        "value": _form(
            UploadFields(
                namespace="birds", organizational_unit="Field team", document_date=date(2024, 3, 1)
            )
        ),
    },
    "replace": {
        "summary": "New bytes for a document already uploaded (exactly one file)",
        "value": _form(UploadFields(namespace="birds", replace_document_id=DOCUMENT_ID)),
    },
}
UPLOADED = UploadResponse(
    namespace="birds",
    files=[
        QueuedFile(
            source_file_name="ducks.md", job_id=JOB_ID, document_id=DOCUMENT_ID, status="queued"
        ),
        QueuedFile(
            source_file_name="field-notes.zip/readme.bin",
            status="skipped",
            detail="unsupported format 'unknown': binary content without a known signature",
        ),
    ],
)
QUEUED = Job(
    job_id=JOB_ID,
    document_id=DOCUMENT_ID,
    namespace="birds",
    source_file_name="ducks.md",
    status="queued",
    created_at="2025-03-01T09:30:00.000+00:00",
)
DONE = QUEUED.model_copy(
    update={
        "status": "done",
        "revision": 4,
        "started_at": "2025-03-01T09:30:01.250+00:00",
        "finished_at": "2025-03-01T09:30:06.900+00:00",
        "attempts": 1,
    }
)
FAILED = QUEUED.model_copy(
    update={
        "status": "error",
        "error_message": "'ducks.md': the parser stopped: no text could be read",
        "started_at": "2025-03-01T09:30:01.250+00:00",
        "finished_at": "2025-03-01T09:30:02.100+00:00",
        "attempts": 1,
    }
)
REMOVAL = Job(
    job_id="4bbc3ab6e0624d67ac1e686b268a9979",
    kind="delete",
    document_id=DOCUMENT_ID,
    namespace="birds",
    source_file_name="ducks.md",
    status="queued",
    created_at="2025-03-02T10:00:00.000+00:00",
)
INGESTING = IngestionStatus(namespace="birds", state="indexing", counts={"queued": 1, "done": 7})
