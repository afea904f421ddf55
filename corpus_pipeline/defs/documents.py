"""Per-document assets: source → profile → parsed table → chunks → nav → manifest, one step.

Six assets per document partition, each with its own metadata in the UI, are materialised by
one multi-asset step together with their contract checks. As six steps with three check steps
a document paid ~2 s of run bookkeeping on the embedded SQLite instance (~130 event-log writes,
each stage's value pickled and loaded again, partition lookups per input), more than parsing
most documents takes; in one step the values pass in memory. A document is therefore
(re)materialised whole, which is what reprocessing a document means.

The step only orchestrates: the work is done by the plain functions in
`corpus_pipeline.pipeline.stages`; each document's parse runs in a worker process under time and
memory limits (`corpus_pipeline.pipeline.isolation`). Every error surfaces as a `dg.Failure` whose message
says in words what failed (never a URL, a key or a path); tracebacks go to the log.
"""

import logging
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

import dagster as dg
from pydantic import BaseModel, ConfigDict

from corpus_pipeline.common.errors import CorpusError, StageFailedError, describe_unexpected
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import DocumentProfile, Manifest, SourceRecord
from corpus_pipeline.defs.checks import check_chunks, check_directory, check_nav, check_specs
from corpus_pipeline.defs.dagster_internals import provenance_tags
from corpus_pipeline.defs.partitions import DOCUMENTS_PER_RUN, documents_partitions
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    registry_for,
    resolve_settings,
)
from corpus_pipeline.defs.versions import code_version
from corpus_pipeline.pipeline import isolation as worker
from corpus_pipeline.pipeline import stages as pipeline
from corpus_pipeline.profiling import Profiled

GROUP = "documents"
STEP = "document_pipeline"
SHOWN_FAILURES = 5
# The batch failure's metadata entry: {document id: message} of every failed document.
FAILED_DOCUMENTS = "failed_documents"
logger = logging.getLogger(__name__)

# Dagster's metadata value union exists for type checkers only.
Metadata: TypeAlias = "dict[str, dg.RawMetadataValue]"
# What the step yields: results of a one-document run, or events recorded per partition.
StepEvent: TypeAlias = (
    "dg.MaterializeResult[Any] | dg.AssetCheckResult | dg.AssetMaterialization"
    " | dg.AssetCheckEvaluation | dg.Output[None]"
)


def _spec(key: str, kinds: set[str], description: str, deps: list[str]) -> dg.AssetSpec:
    return dg.AssetSpec(
        key,
        deps=deps,
        group_name=GROUP,
        kinds=kinds,
        description=description,
        partitions_def=documents_partitions,
        code_version=code_version(key),
        # A batch run records each document's materialisations itself (`_batch`), so Dagster
        # must not add one per partition of the run's range for the outputs it did not see.
        skippable=True,
    )


def _asset_specs() -> list[dg.AssetSpec]:
    """The six per-document assets (a function: the defs loader would register a module-level
    list of specs as assets of their own)."""
    return [
        _spec(
            "source_document",
            {"fsspec", "python"},
            "The delivered file, stored durably in the object store and fetched for this job.",
            [],
        ),
        _spec(
            "document_profile",
            {"python"},
            "Format sniffed from the bytes, cheap structural evidence and the routing decision; "
            "computed once.",
            ["source_document"],
        ),
        _spec(
            "parsed_document",
            {"parquet", "python"},
            "The uniform parsed table (one row per block, Parquet) with hierarchy paths, tables and "
            "images.",
            ["source_document", "document_profile"],
        ),
        _spec(
            "document_chunks",
            {"json", "python"},
            "Typed segments (text, image, table) with content-hash chunk ids, summaries and keywords.",
            ["parsed_document", "document_profile"],
        ),
        _spec(
            "document_nav",
            {"json", "python"},
            "The navigation tree: sections with summaries and chunk counts, plus the resource list.",
            ["parsed_document", "document_chunks", "document_profile"],
        ),
        _spec(
            "document_manifest",
            {"json", "filesystem"},
            "The document directory in the fixed format (chunks.json, doc_nav.json, manifest.json, "
            "tables/, images/, source/, headings.json, diagnostics.json), committed atomically.",
            [
                "source_document",
                "document_profile",
                "parsed_document",
                "document_chunks",
                "document_nav",
            ],
        ),
    ]


ASSET_DEPS: dict[str, list[str]] = {
    spec.key.to_user_string(): [dep.asset_key.to_user_string() for dep in spec.deps]
    for spec in _asset_specs()
}


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


def _blocking(result: dg.AssetCheckResult) -> Iterator[dg.AssetCheckResult]:
    """Report a check; a failed blocking check ends the step before the stages built on it."""
    yield result
    if not result.passed:
        raise dg.Failure(
            description=result.description or f"check {result.check_name} failed",
            metadata={"error_type": "DagsterAssetCheckFailedError", "stage": "check"},
        )


def _source(settings: CorpusSettings, document_id: str) -> tuple[SourceOutput, Metadata]:
    started = time.perf_counter()
    registry = registry_for(settings)
    record = registry.get(document_id)
    local = registry.fetch_source(
        record, pipeline.fresh_dir(pipeline.stage_dir(settings, document_id, "source"))
    )
    out = SourceOutput(record=record, local_path=str(local), seconds=time.perf_counter() - started)
    return out, {
        "source_file_name": record.source_file_name,
        "namespace": record.namespace,
        "object_key": record.object_key,
        "sha256": record.sha256,
        "size_bytes": record.size_bytes,
    }


def _profile(source: SourceOutput, settings: CorpusSettings) -> tuple[Profiled, Metadata]:
    started = time.perf_counter()
    record = source.record
    profiled = pipeline.run_profile(
        Path(source.local_path), record.source_file_name, record.document_id, settings
    )
    profile = profiled.profile
    pdf: Metadata = (
        {"pdf_category": profile.pdf.category, "classification": profile.pdf.classification}
        if profile.pdf is not None
        else {}
    )
    return profiled, {
        "format": profile.format.value,
        "strategy": profile.routing.strategy,
        "routing_reason": profile.routing.reason,
        "paragraphs": profile.paragraph_count or 0,
        "headings": profile.heading_count or 0,
        "tables": profile.table_count or 0,
        "language": profile.language or "unknown",
        "has_embedded_toc": profile.has_embedded_toc,
        **pdf,
        "seconds": round(time.perf_counter() - started, 4),
    }


def _parse(
    source: SourceOutput, profiled: Profiled, settings: CorpusSettings
) -> tuple[pipeline.ParseOutput, Metadata]:
    record = source.record
    parsed = worker.run_parse_isolated(
        record.document_id,
        profiled,
        pipeline.stage_dir(settings, record.document_id, "parse"),
        settings,
    )
    return parsed, {
        "path": dg.MetadataValue.path(parsed.rows_path),
        "rows": parsed.rows,
        "headings": parsed.headings,
        "tables": parsed.tables,
        "images": parsed.images,
        "image_files": parsed.image_files,
        "warnings": len(parsed.diagnostics),
        "seconds": round(parsed.seconds, 4),
    }


def _chunks(
    document_id: str,
    parsed: pipeline.ParseOutput,
    profile: DocumentProfile,
    settings: CorpusSettings,
) -> tuple[pipeline.ChunksOutput, Metadata]:
    out_dir = pipeline.stage_dir(settings, document_id, "chunks")
    chunks = pipeline.run_chunks(document_id, parsed, profile, settings, out_dir)
    return chunks, {
        "path": dg.MetadataValue.path(chunks.chunks_path),
        **{f"{kind}_chunks": n for kind, n in chunks.counts.items()},
        "resources": len(chunks.resources),
        "seconds": round(chunks.seconds, 4),
    }


def _nav(
    document_id: str,
    parsed: pipeline.ParseOutput,
    chunks: pipeline.ChunksOutput,
    profile: DocumentProfile,
    settings: CorpusSettings,
) -> tuple[pipeline.NavOutput, Metadata]:
    out_dir = pipeline.stage_dir(settings, document_id, "nav")
    nav = pipeline.run_nav(document_id, parsed, chunks, profile, settings, out_dir)
    return nav, {
        "path": dg.MetadataValue.path(nav.nav_path),
        "sections": nav.sections,
        "seconds": round(nav.seconds, 4),
    }


def _manifest(
    source: SourceOutput,
    profile: DocumentProfile,
    parsed: pipeline.ParseOutput,
    chunks: pipeline.ChunksOutput,
    nav: pipeline.NavOutput,
    settings: CorpusSettings,
) -> tuple[Manifest, Metadata]:
    document_id = source.record.document_id
    timings = {
        "source": source.seconds,
        "parse": parsed.seconds,
        "chunks": chunks.seconds,
        "nav": nav.seconds,
    }
    staging = pipeline.staging_dir(settings, document_id)
    final = pipeline.document_dir(settings, document_id)
    try:
        manifest = pipeline.assemble_document(
            source.record, Path(source.local_path), profile, parsed, chunks, nav, timings, staging
        )
        pipeline.commit_document(staging, final)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    stats = manifest.statistics
    return manifest, {
        "document_dir": dg.MetadataValue.path(str(final)),
        "title": manifest.title,
        "chunks": stats.chunks,
        "sections": stats.sections,
        "tokens": stats.tokens,
        "tables": stats.tables,
        "images": stats.images,
        "warnings": manifest.diagnostics_count.get("warning", 0),
    }


@dg.multi_asset(
    name=STEP,
    specs=_asset_specs(),
    check_specs=check_specs(),
    partitions_def=documents_partitions,
    can_subset=False,
    backfill_policy=dg.BackfillPolicy.multi_run(DOCUMENTS_PER_RUN),
    description="One document from its stored file to its committed directory, checks included; "
    f"a run takes up to {DOCUMENTS_PER_RUN} documents (one partition range).",
)
def document_pipeline(
    context: dg.AssetExecutionContext,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> Iterator[StepEvent]:
    with user_errors("source"):
        settings = resolve_settings(corpus, object_store, models)
    keys = context.partition_keys
    if len(keys) == 1:
        yield from run_document(settings, keys[0])
    else:
        check_outputs = [
            context.assets_def.get_output_name_for_asset_check_key(key)
            for key in sorted(context.selected_asset_check_keys, key=str)
        ]
        yield from run_batch(settings, keys, check_outputs, context.log)


def run_batch(
    settings: CorpusSettings,
    document_ids: Sequence[str],
    check_outputs: Sequence[str],
    log: dg.DagsterLogManager,
) -> Iterator[dg.AssetMaterialization | dg.AssetCheckEvaluation | dg.Output[None]]:
    """Many documents in one run (a partition range): one process, one parse forkserver and
    one set of Dagster handles for all of them, instead of ~10 s of run start-up each.

    Each document runs exactly as alone and its materialisations and checks are recorded under
    its own partition with its own metadata and data versions. A failed document does not stop
    the others: its partitions stay unmaterialised (Dagster shows them failed, the run failed)
    and the run's failure names every failed document.
    """
    failures: dict[str, str] = {}
    for document_id in document_ids:
        versions: dict[str, str] = {}
        try:
            for result in run_document(settings, document_id):
                yield _partition_event(result, document_id, versions)
        except dg.Failure as exc:
            log.error(f"{document_id}: {exc.description}")
            failures[document_id] = exc.description or "failed"
    raise_if_failed(failures, len(document_ids), "failed")
    # The checks' own outputs, which Dagster expects once per step (their evaluations, one per
    # partition, are recorded above).
    for name in check_outputs:
        yield dg.Output(None, output_name=name)


def raise_if_failed(failures: dict[str, str], total: int, what: str) -> None:
    """End a run over a range whose documents partly failed: one Failure naming them (the
    first few in its message, every one in its metadata, which `corpus ingest` reads)."""
    if not failures:
        return
    shown = "; ".join(f"{d}: {m}" for d, m in list(failures.items())[:SHOWN_FAILURES])
    more = f" (+{len(failures) - SHOWN_FAILURES} more)" if len(failures) > SHOWN_FAILURES else ""
    raise dg.Failure(
        description=f"{len(failures)} of {total} documents {what}: {shown}{more}",
        metadata={
            "error_type": "DocumentsFailed",
            FAILED_DOCUMENTS: dg.MetadataValue.json(failures),
        },
    )


def _partition_event(
    result: dg.MaterializeResult | dg.AssetCheckResult,  # type: ignore[type-arg]
    document_id: str,
    versions: dict[str, str],
) -> dg.AssetMaterialization | dg.AssetCheckEvaluation:
    """One result of a document's step as the event Dagster records for its partition, with
    the provenance tags a single-partition run would carry (code version, input data versions,
    data version), so staleness after a code change is per document in both kinds of run."""
    assert result.asset_key is not None
    key = result.asset_key.to_user_string()
    if isinstance(result, dg.AssetCheckResult):
        assert result.check_name is not None
        return dg.AssetCheckEvaluation(
            asset_key=result.asset_key,
            check_name=result.check_name,
            passed=result.passed,
            metadata=result.metadata,
            description=result.description,
            partition=document_id,
        )
    inputs = {dep: versions[dep] for dep in ASSET_DEPS[key]}
    own = result.data_version.value if result.data_version is not None else None
    tags, versions[key] = provenance_tags(code_version(key), inputs, own)
    return dg.AssetMaterialization(
        asset_key=result.asset_key,
        partition=document_id,
        metadata=result.metadata,
        tags=tags,
    )


def run_document(
    settings: CorpusSettings, document_id: str
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:  # type: ignore[type-arg]
    """The step's work, stage by stage, as plain code (the ingest benchmark runs it without
    Dagster to measure what the orchestration costs)."""
    started = time.perf_counter()
    with user_errors("source"):
        source, metadata = _source(settings, document_id)
    # The delivered bytes are the source's data version: the same content again is not a change.
    yield dg.MaterializeResult(
        asset_key="source_document",
        metadata=metadata,
        data_version=dg.DataVersion(source.record.sha256),
    )
    with user_errors("profile"):
        profiled, metadata = _profile(source, settings)
    profile = profiled.profile
    yield dg.MaterializeResult(asset_key="document_profile", metadata=metadata)
    with user_errors("parse"):
        parsed, metadata = _parse(source, profiled, settings)
    yield dg.MaterializeResult(asset_key="parsed_document", metadata=metadata)
    with user_errors("chunks"):
        chunks, metadata = _chunks(document_id, parsed, profile, settings)
        pipeline.require_text(source.record.source_file_name, profile, parsed, chunks)
    yield dg.MaterializeResult(asset_key="document_chunks", metadata=metadata)
    with user_errors("chunks"):
        checked = check_chunks(chunks)
    yield from _blocking(checked)
    with user_errors("nav"):
        nav, metadata = _nav(document_id, parsed, chunks, profile, settings)
    yield dg.MaterializeResult(asset_key="document_nav", metadata=metadata)
    with user_errors("nav"):
        checked = check_nav(nav, chunks)
    yield from _blocking(checked)
    with user_errors("manifest"):
        manifest, metadata = _manifest(source, profile, parsed, chunks, nav, settings)
    # The document's own time from fetch to commit (in a batch run: this document's share).
    metadata["document_seconds"] = round(time.perf_counter() - started, 4)
    yield dg.MaterializeResult(asset_key="document_manifest", metadata=metadata)
    with user_errors("manifest"):
        checked = check_directory(settings, manifest.document_id)
    yield checked
