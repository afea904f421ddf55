"""The durable record of a delivered file (the 'job recorded' at ingest)."""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum

from pydantic import Field

from corpus_pipeline.contracts.base import FrozenModel


class SourceKind(StrEnum):
    """How the file reached us; a search filter later."""

    UPLOAD = "upload"
    FOLDER = "folder"
    S3 = "s3"
    CLI = "cli"


class SourceRecord(FrozenModel):
    """Identity and storage location of one document's current source object."""

    document_id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,127}$")
    namespace: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    source_file_name: str = Field(
        min_length=1, description="Name as delivered (relative path for folders)."
    )
    object_key: str = Field(description="Key of the stored bytes inside the object store.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size_bytes: int = Field(ge=0)
    source_kind: SourceKind = SourceKind.CLI
    organizational_unit: str | None = None
    document_date: date | None = None
    received_at: datetime
    attached_to: str | None = Field(
        default=None,
        description="The document id of the e-mail this file was attached to (the published "
        "graph links the two); None for a file delivered on its own.",
    )
