"""Per-document assets: source → profile → parsed table → chunks → nav → manifest.

Every asset is partitioned by document id and only orchestrates: the work is done by the
plain functions in `corpus_pipeline.pipeline`; each document's parse runs in a worker process
under time and memory limits (`corpus_pipeline.worker`). Every error surfaces as a `dg.Failure`
whose message says in words what failed (never a URL, a key or a path); tracebacks go to the
log.
"""

import logging
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from pydantic import BaseModel, ConfigDict

from corpus_pipeline import pipeline, worker
from corpus_pipeline.contracts import DocumentProfile, Manifest, SourceRecord
from corpus_pipeline.defs.partitions import documents_partitions
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    registry_for,
    resolve_settings,
)
from corpus_pipeline.errors import CorpusError, StageFailedError, describe_unexpected

GROUP = "documents"
logger = logging.getLogger(__name__)


class SourceOutput(BaseModel):
    """The registered record and where its bytes were fetched for this job."""

    model_config = ConfigDict(frozen=True)

    record: SourceRecord
    local_path: str
    seconds: float


@contextmanager
def user_errors(stage: str) -> Iterator[None]:
    """Turn a stage's errors into a Dagster Failure carrying only a safe message in words.

    A `CorpusError` already names the problem. Anything else is a bug or a crash: the message
    says which stage failed, the kind of problem and the exception class (sanitized), and the
    traceback goes to the log (it also stays in the Dagster run as the Failure's cause). A
    parse worker's traceback rides along as the Failure's metadata.
    """
    try:
        yield
    except CorpusError as exc:
        metadata: dict[str, dg.MetadataValue[str]] = {
            "error_type": dg.MetadataValue.text(type(exc).__name__),
            "stage": dg.MetadataValue.text(stage),
        }
        if isinstance(exc, StageFailedError) and exc.details:
            # The worker's traceback (already logged by the worker) kept with the run.
            metadata["traceback"] = dg.MetadataValue.text(exc.details)
        raise dg.Failure(description=str(exc), metadata=metadata) from exc
    except Exception as exc:
        message = describe_unexpected(stage, exc)
        logger.error("%s", message, exc_info=exc)
        raise dg.Failure(
            description=message, metadata={"error_type": type(exc).__name__, "stage": stage}
        ) from exc


def _timed(fn: Callable[[], object]) -> tuple[object, float]:
    started = time.perf_counter()
    return fn(), time.perf_counter() - started


@dg.asset(
    partitions_def=documents_partitions,
    group_name=GROUP,
    kinds={"fsspec", "python"},
    description="The delivered file, stored durably in the object store and fetched for this job.",
)
def source_document(
    context: dg.AssetExecutionContext,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.Output[SourceOutput]:
    settings = resolve_settings(corpus, object_store, models)
    document_id = context.partition_key
    started = time.perf_counter()
    with user_errors("source"):
        registry = registry_for(settings)
        record = registry.get(document_id)
        local = registry.fetch_source(
            record, pipeline.fresh_dir(pipeline.stage_dir(settings, document_id, "source"))
        )
    out = SourceOutput(record=record, local_path=str(local), seconds=time.perf_counter() - started)
    return dg.Output(
        out,
        metadata={
            "source_file_name": record.source_file_name,
            "namespace": record.namespace,
            "object_key": record.object_key,
            "sha256": record.sha256,
            "size_bytes": record.size_bytes,
        },
    )


@dg.asset(
    partitions_def=documents_partitions,
    group_name=GROUP,
    kinds={"python"},
    description="Format sniffed from the bytes, cheap structural evidence and the routing decision; computed once.",
)
def document_profile(
    source_document: SourceOutput,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.Output[DocumentProfile]:
    settings = resolve_settings(corpus, object_store, models)
    with user_errors("profile"):
        profile, seconds = _timed(
            lambda: pipeline.run_profile(
                Path(source_document.local_path),
                source_document.record.source_file_name,
                source_document.record.document_id,
                settings,
            )
        )
    assert isinstance(profile, DocumentProfile)
    return dg.Output(
        profile,
        metadata={
            "format": profile.format.value,
            "strategy": profile.routing.strategy,
            "routing_reason": profile.routing.reason,
            "paragraphs": profile.paragraph_count or 0,
            "headings": profile.heading_count or 0,
            "tables": profile.table_count or 0,
            "language": profile.language or "unknown",
            "has_embedded_toc": profile.has_embedded_toc,
            **(
                {"pdf_category": profile.pdf.category, "classification": profile.pdf.classification}
                if profile.pdf is not None
                else {}
            ),
            "seconds": round(seconds, 4),
        },
    )


@dg.asset(
    partitions_def=documents_partitions,
    group_name=GROUP,
    kinds={"parquet", "python"},
    description="The uniform parsed table (one row per block, Parquet) with hierarchy paths, tables and images.",
)
def parsed_document(
    context: dg.AssetExecutionContext,
    source_document: SourceOutput,
    document_profile: DocumentProfile,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.Output[pipeline.ParseOutput]:
    settings = resolve_settings(corpus, object_store, models)
    record = source_document.record
    with user_errors("parse"):
        parsed = worker.run_parse_isolated(
            record.document_id,
            Path(source_document.local_path),
            record.source_file_name,
            document_profile,
            pipeline.stage_dir(settings, context.partition_key, "parse"),
            settings,
        )
    return dg.Output(
        parsed,
        metadata={
            "path": dg.MetadataValue.path(parsed.rows_path),
            "rows": parsed.rows,
            "headings": parsed.headings,
            "tables": parsed.tables,
            "images": parsed.images,
            "image_files": parsed.image_files,
            "warnings": len(parsed.diagnostics),
            "seconds": round(parsed.seconds, 4),
        },
    )


@dg.asset(
    partitions_def=documents_partitions,
    group_name=GROUP,
    kinds={"json", "python"},
    description="Typed segments (text, image, table) with content-hash chunk ids, summaries and keywords.",
)
def document_chunks(
    context: dg.AssetExecutionContext,
    parsed_document: pipeline.ParseOutput,
    document_profile: DocumentProfile,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.Output[pipeline.ChunksOutput]:
    settings = resolve_settings(corpus, object_store, models)
    with user_errors("chunks"):
        chunks = pipeline.run_chunks(
            context.partition_key,
            parsed_document,
            document_profile,
            settings,
            pipeline.stage_dir(settings, context.partition_key, "chunks"),
        )
    return dg.Output(
        chunks,
        metadata={
            "path": dg.MetadataValue.path(chunks.chunks_path),
            **{f"{kind}_chunks": n for kind, n in chunks.counts.items()},
            "resources": len(chunks.resources),
            "seconds": round(chunks.seconds, 4),
        },
    )


@dg.asset(
    partitions_def=documents_partitions,
    group_name=GROUP,
    kinds={"json", "python"},
    description="The navigation tree: sections with summaries and chunk counts, plus the resource list.",
)
def document_nav(
    context: dg.AssetExecutionContext,
    parsed_document: pipeline.ParseOutput,
    document_chunks: pipeline.ChunksOutput,
    document_profile: DocumentProfile,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.Output[pipeline.NavOutput]:
    settings = resolve_settings(corpus, object_store, models)
    with user_errors("nav"):
        nav = pipeline.run_nav(
            context.partition_key,
            parsed_document,
            document_chunks,
            document_profile,
            settings,
            pipeline.stage_dir(settings, context.partition_key, "nav"),
        )
    return dg.Output(
        nav,
        metadata={
            "path": dg.MetadataValue.path(nav.nav_path),
            "sections": nav.sections,
            "seconds": round(nav.seconds, 4),
        },
    )


@dg.asset(
    partitions_def=documents_partitions,
    group_name=GROUP,
    kinds={"json", "filesystem"},
    description=(
        "The document directory in the fixed format (chunks.json, doc_nav.json, manifest.json, "
        "tables/, images/, source/, headings.json, diagnostics.json), committed atomically."
    ),
)
def document_manifest(
    context: dg.AssetExecutionContext,
    source_document: SourceOutput,
    document_profile: DocumentProfile,
    parsed_document: pipeline.ParseOutput,
    document_chunks: pipeline.ChunksOutput,
    document_nav: pipeline.NavOutput,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.Output[Manifest]:
    settings = resolve_settings(corpus, object_store, models)
    document_id = context.partition_key
    timings = {
        "source": source_document.seconds,
        "parse": parsed_document.seconds,
        "chunks": document_chunks.seconds,
        "nav": document_nav.seconds,
    }
    staging = pipeline.staging_dir(settings, document_id)
    final = pipeline.document_dir(settings, document_id)
    try:
        with user_errors("manifest"):
            manifest = pipeline.assemble_document(
                source_document.record,
                Path(source_document.local_path),
                document_profile,
                parsed_document,
                document_chunks,
                document_nav,
                timings,
                staging,
            )
            pipeline.commit_document(staging, final)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    stats = manifest.statistics
    return dg.Output(
        manifest,
        metadata={
            "document_dir": dg.MetadataValue.path(str(final)),
            "title": manifest.title,
            "chunks": stats.chunks,
            "sections": stats.sections,
            "tokens": stats.tokens,
            "tables": stats.tables,
            "images": stats.images,
            "warnings": manifest.diagnostics_count.get("warning", 0),
        },
    )


DOCUMENT_ASSETS = [
    source_document,
    document_profile,
    parsed_document,
    document_chunks,
    document_nav,
    document_manifest,
]
