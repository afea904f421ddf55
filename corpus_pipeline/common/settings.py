"""Settings: one `CORPUS_HOME` roots every runtime folder; every setting has a `CORPUS_` variable.

No Dagster import here: the CLI's `debug` path and the query service read the same settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, overload

from pydantic import AfterValidator, BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from corpus_pipeline.common.keypool import split_keys


class LLMRole(BaseModel):
    """Model settings of one LLM role; a role is enabled only when its model is set."""

    model: str = ""
    base_url: str = ""
    api_key: SecretStr = SecretStr("")

    @property
    def enabled(self) -> bool:
        return bool(self.model)

    def keys(self) -> list[str]:
        """The role's API keys, comma-separated in `api_key` (one empty key when none is set: a
        local endpoint needs none). The chat roles use the first."""
        return split_keys(self.api_key.get_secret_value()) or [""]


class EmbeddingsRole(LLMRole):
    """The embeddings endpoint: its keys are rotated, each under `requests_per_minute`."""

    requests_per_minute: int = Field(default=60, ge=1)


def _absolute(path: Path) -> Path:
    return path.expanduser().resolve()


# CORPUS_HOME as both services read it: absolute (`~` expanded, links resolved).
HomePath = Annotated[Path, AfterValidator(_absolute)]


class _Rooted(Protocol):
    @property
    def home(self) -> Path: ...


class BelowHome:
    """A folder below CORPUS_HOME, read as an attribute of the settings (`settings.work_dir`),
    so that the layouts below list the folders as a table."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    @overload
    def __get__(self, settings: None, owner: type[Any]) -> BelowHome: ...
    @overload
    def __get__(self, settings: _Rooted, owner: type[Any]) -> Path: ...
    def __get__(self, settings: _Rooted | None, owner: type[Any]) -> Path | BelowHome:
        return self if settings is None else settings.home.joinpath(*self.parts)


class HomeLayout:
    """What both services find below CORPUS_HOME: the published revisions and the API keys
    (mixed into the pipeline's and the query service's settings, which agree on them)."""

    if TYPE_CHECKING:
        home: Path
        api_keys_file: Path | None

    published_dir = BelowHome("published")

    @property
    def keys_file(self) -> Path:
        return self.api_keys_file or self.home / "service" / "api_keys.json"


class PipelineLayout(HomeLayout):
    """The pipeline's own folders below CORPUS_HOME (a mixin, like `HomeLayout`: a pydantic
    settings class takes no class attributes besides its fields)."""

    artifacts_dir = BelowHome("artifacts")
    work_dir = BelowHome("work")
    embeddings_dir = BelowHome("embeddings")
    dagster_home = BelowHome("dagster")


class CorpusSettings(PipelineLayout, BaseSettings):
    """Runtime settings (environment variables `CORPUS_*`, or a `.env` file)."""

    model_config = SettingsConfigDict(
        env_prefix="CORPUS_",
        env_file=".env",
        env_file_encoding="utf-8",
        env_nested_delimiter="__",
        extra="ignore",
    )

    home: HomePath = Field(
        default=Path("data/runtime"), description="Root of every runtime folder."
    )
    object_store_url: str = Field(
        default="",
        description="fsspec URL of the object store; default <home>/objects (s3://… for S3).",
    )
    namespace: str = Field(default="default", pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    # 300 measured best on the development questions (MRR@10 0.964; 200 → 0.948, 400 → 0.948).
    chunk_max_tokens: int = Field(default=300, ge=32, le=8192)
    summary_max_sentences: int = Field(default=2, ge=1, le=10)
    keywords_per_chunk: int = Field(default=8, ge=0, le=50)
    max_file_bytes: int = Field(default=512 * 1024 * 1024, ge=1)
    # The upload API: one file, and one request, at most this many MiB (read in chunks).
    max_upload_mb: int = Field(default=50, ge=1)
    max_request_mb: int = Field(default=200, ge=1)
    # Uploads one key may have in flight (more: 429), and the threads that check and store
    # them (door checks, archive expansion, the object store) off the request loop.
    max_uploads_per_key: int = Field(default=4, ge=1)
    # Documents one upload may expand into (archive members, e-mail attachments; more: 413,
    # nothing stored), and jobs one key may have queued at once (more: 429).
    max_documents_per_upload: int = Field(default=500, ge=1)
    max_queued_jobs_per_key: int = Field(default=2000, ge=1)
    upload_workers: int = Field(default=2, ge=1)
    # API keys both services read (`corpus keys`); default <home>/service/api_keys.json. Without
    # keys every request is refused, unless open access (loopback only) serves the local user.
    api_keys_file: Path | None = None
    open_access: bool = False
    # Parse budget: a document is cut (with a diagnostic) after this many pages / characters.
    parse_max_pages: int = Field(default=5000, ge=1)
    parse_max_chars: int = Field(default=20_000_000, ge=1)
    # A delimited file (CSV/TSV) is cut, the same way, after this many cells.
    parse_max_cells: int = Field(default=1_000_000, ge=1)
    # PDFs longer than this are parsed range by range (cut at top-level TOC entries if any).
    pdf_split_pages: int = Field(default=200, ge=1)
    # Each document's parse runs in a worker process that is killed past these limits, so a
    # pathological file fails only itself (0 = no limit). Sized for 2 cores / 24 GB with
    # `ingest_workers` documents at a time; `parse_in_process` skips the worker (debugging only: no limits).
    parse_timeout_seconds: float = Field(default=300.0, ge=0)
    parse_max_memory_mb: int = Field(default=4096, ge=0)
    parse_in_process: bool = False
    # A long PDF with a text layer has every other page read ahead by a forked helper process
    # (`parsing.pdf.prefetch`): for a document parsed alone; `ingest` turns it off for a batch
    # that keeps every core busy with a document each.
    pdf_page_helper: bool = True
    # Documents of one `corpus ingest` batch materialised side by side, each in its own process
    # (its parse in a worker of its own under the limits above); publishing stays one at a time.
    ingest_workers: int = Field(default=2, ge=1, le=32)
    # Upload-API jobs are leased: the worker renews its lease every `job_heartbeat_seconds`
    # while it processes; a job whose lease ran out (its API or worker process died) is queued
    # again, and fails after `job_max_attempts` interrupted attempts.
    job_lease_seconds: float = Field(default=60.0, gt=0)
    job_heartbeat_seconds: float = Field(default=15.0, gt=0)
    job_max_attempts: int = Field(default=3, ge=1)
    # The folder the inbox sensor watches (relative paths are the documents' addresses) and
    # how it syncs: new_only, update_only or full (full also removes vanished files).
    inbox_dir: Path = Field(default=Path("data/inbox"))
    inbox_mode: Literal["new_only", "update_only", "full"] = "full"
    # A bucket the S3 sensor syncs the same way ("s3://bucket/prefix"; empty = off); a
    # document's identity is its s3:// address, its change signal the object's ETag.
    s3_sync_url: str = Field(default="", pattern=r"^(s3://[^/\s]+(/\S*)?)?$")
    s3_sync_mode: Literal["new_only", "update_only", "full"] = "full"
    # How a document run executes its one step: in the run's process, or in a process of its own.
    document_executor: Literal["in_process", "multiprocess"] = "in_process"
    # Scanned pages of one PDF recognised side by side (single-threaded Tesseract processes).
    ocr_workers: int = Field(default=2, ge=1, le=32)
    # Legacy Office files (.doc, .ppt, an .xls xlrd cannot read) are converted by LibreOffice
    # (`parsing.legacy`): its binary (a path or a command name; empty: `soffice`, else
    # `libreoffice`, on the PATH), how long one conversion may run before its whole process
    # group is killed, and how many run at once on this machine (across processes).
    libreoffice_path: str = ""
    libreoffice_timeout_seconds: float = Field(default=120.0, gt=0)
    libreoffice_max_parallel: int = Field(default=2, ge=1, le=32)

    # LLM roles (any OpenAI-compatible endpoint). Empty model = off; offline defaults are used.
    llm_base_url: str = ""
    llm_api_key: SecretStr = SecretStr("")
    llm_timeout_seconds: float = Field(default=30.0, gt=0)
    # Vision calls per document (one per distinct image file); the rest keep no description.
    image_description_max_images: int = Field(default=64, ge=0)
    summary: LLMRole = Field(default_factory=LLMRole)
    hierarchy: LLMRole = Field(default_factory=LLMRole)
    image_description: LLMRole = Field(default_factory=LLMRole)
    ocr: LLMRole = Field(default_factory=LLMRole)
    classification: LLMRole = Field(default_factory=LLMRole)
    # Dense channel (issue 17): off, the local ONNX model, or the `embeddings` role's endpoint.
    dense: Literal["off", "local", "endpoint"] = "off"
    embeddings: EmbeddingsRole = Field(default_factory=EmbeddingsRole)
    embeddings_dimension: int = Field(default=1536, gt=0)

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> CorpusSettings:
        # A lease renewed less often than it lasts would run out under a live worker.
        if self.job_heartbeat_seconds >= self.job_lease_seconds:
            raise ValueError("job_heartbeat_seconds must be shorter than job_lease_seconds")
        return self

    @property
    def object_store(self) -> str:
        return self.object_store_url or (self.home / "objects").as_uri()

    def role(self, name: str) -> LLMRole:
        """A role's settings with the shared endpoint and key filled in where unset."""
        role: LLMRole = getattr(self, name)
        return role.model_copy(
            update={
                "base_url": role.base_url or self.llm_base_url,
                "api_key": role.api_key if role.api_key.get_secret_value() else self.llm_api_key,
            }
        )


def load_settings(**overrides: object) -> CorpusSettings:
    """Settings from the environment, with explicit overrides (e.g. from CLI flags)."""
    return CorpusSettings(**overrides)  # type: ignore[arg-type]
