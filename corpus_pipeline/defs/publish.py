"""The corpus revision: per-document artifacts published as one consistent revision per
namespace (LanceDB tables + tantivy channels). Writers are serialised by the `index_writer`
pool (limit 1 in dagster.yaml) and, underneath, by a per-namespace file lock."""

import dagster as dg
from pydantic import Field

from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    resolve_settings,
)
from corpus_pipeline.errors import CorpusError
from corpus_pipeline.publish.service import publish


class PublishConfig(dg.Config):
    namespaces: list[str] = Field(
        default_factory=list, description="Empty = every known namespace."
    )


@dg.asset(
    group_name="publish",
    kinds={"lancedb", "tantivy"},
    deps=["document_manifest"],
    pool="index_writer",
    description=(
        "One consistent revision per namespace: documents, sections, chunks, graph nodes and edges "
        "in LanceDB, plus the content/path/term channels in tantivy, swapped in atomically."
    ),
)
def corpus_revision(
    context: dg.AssetExecutionContext,
    config: PublishConfig,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.MaterializeResult:  # type: ignore[type-arg]
    settings = resolve_settings(corpus, object_store, models)
    try:
        reports = publish(settings, config.namespaces or None)
    except CorpusError as exc:
        raise dg.Failure(description=str(exc)) from exc
    metadata: dict[str, dg.RawMetadataValue] = {}
    for report in reports:
        pointer = report.pointer
        prefix = report.namespace
        metadata[f"{prefix}/revision"] = pointer.revision
        metadata[f"{prefix}/documents"] = pointer.documents
        metadata[f"{prefix}/chunks"] = pointer.chunks
        metadata[f"{prefix}/published"] = len(report.published)
        metadata[f"{prefix}/removed"] = len(report.removed)
        metadata[f"{prefix}/seconds"] = round(report.seconds, 3)
        if report.mirrored_files is not None:
            metadata[f"{prefix}/mirrored_files"] = report.mirrored_files
        context.log.info(
            f"namespace {report.namespace}: revision {pointer.revision}, "
            f"{len(report.published)} published, {len(report.removed)} removed, {report.unchanged} unchanged"
        )
    return dg.MaterializeResult(metadata=metadata)
