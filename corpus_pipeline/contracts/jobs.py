"""Contracts of the upload API: its jobs and its answers (shared by the API, its job store and
any client; no FastAPI or Dagster here)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

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


class QueuedFile(BaseModel):
    source_file_name: str
    job_id: str | None = None
    document_id: str | None = None
    status: str = Field(description="queued, or skipped (an archive member that is no document)")
    detail: str | None = None


class UploadResponse(BaseModel):
    namespace: str
    files: list[QueuedFile]


class IngestionStatus(BaseModel):
    namespace: str
    state: str = Field(description="indexing while anything is queued or processing, else complete")
    counts: dict[str, int]
