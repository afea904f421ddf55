"""Contracts of the upload API: its jobs and its answers (shared by the API, its job store and
any client; no FastAPI or Dagster here)."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

JobStatus = Literal["queued", "processing", "done", "error"]
JobKind = Literal["document", "delete"]


class Job(BaseModel):
    job_id: str
    kind: JobKind = "document"
    document_id: str
    namespace: str
    source_file_name: str
    status: JobStatus
    error_message: str | None = None
    revision: int | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    # The lease of a `processing` job: who holds it (an opaque token per claim) and until when;
    # `attempts` counts the claims, so interrupted ones too.
    attempts: int = 0
    lease_owner: str | None = None
    lease_expires_at: str | None = None


class QueuedFile(BaseModel):
    source_file_name: str
    job_id: str | None = None
    document_id: str | None = None
    status: str = Field(description="queued, or skipped (an archive member that is no document)")
    detail: str | None = None


class UploadFields(BaseModel):
    """The form fields of `POST /v1/documents` besides its `files`."""

    model_config = ConfigDict(extra="forbid")

    namespace: str = Field(default="default", pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    organizational_unit: str | None = None
    document_date: date | None = Field(default=None, description="ISO date, e.g. 2023-07-01")
    replace_document_id: str | None = Field(
        default=None, description="The document these bytes replace (exactly one file)"
    )
    password: str | None = Field(
        default=None,
        repr=False,
        description="Opens the encrypted PDFs of this request (memory only, never stored)",
    )


def upload_form_schema() -> dict[str, Any]:
    """The multipart form of `POST /v1/documents` as OpenAPI shows it (the body is read as a
    stream, not declared as FastAPI parameters)."""
    schema = UploadFields.model_json_schema()
    schema["properties"] = {
        "files": {
            "type": "array",
            "items": {"type": "string", "format": "binary"},
            "description": "One or more documents or archives",
        },
        **schema["properties"],
    }
    schema["required"] = ["files"]
    return schema


class UploadResponse(BaseModel):
    namespace: str
    files: list[QueuedFile]


class IngestionStatus(BaseModel):
    namespace: str
    state: str = Field(description="indexing while anything is queued or processing, else complete")
    counts: dict[str, int]
