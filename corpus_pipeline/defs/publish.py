"""The corpus revision: per-document artifacts published as one consistent revision per
namespace (LanceDB tables + tantivy channels), one partition per namespace, so the UI shows each
namespace's revision, its lineage and when it is stale. Writers are serialised by the
`index_writer` pool (limit 1 in dagster.yaml) and, underneath, by a per-namespace file lock."""

import dagster as dg

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.defs.partitions import namespaces_partitions
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    resolve_settings,
)
from corpus_pipeline.publish.service import publish


@dg.asset(
    group_name="publish",
    kinds={"lancedb", "tantivy"},
    # Every document partition feeds every namespace's revision as far as Dagster can map
    # partitions (dynamic to dynamic has no finer mapping); which documents a namespace holds is
    # the registry's, and `publish_sensor` publishes only the namespaces whose documents changed.
    deps=[
        dg.AssetDep("document_manifest", partition_mapping=dg.AllPartitionMapping()),
        dg.AssetDep("document_embeddings", partition_mapping=dg.AllPartitionMapping()),
    ],
    partitions_def=namespaces_partitions,
    pool="index_writer",
    description=(
        "One consistent revision of a namespace: documents, sections, chunks, graph nodes and "
        "edges in LanceDB, plus the content/path/term channels in tantivy, swapped in atomically."
    ),
)
def corpus_revision(
    context: dg.AssetExecutionContext,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.MaterializeResult:  # type: ignore[type-arg]
    settings = resolve_settings(corpus, object_store, models)
    try:
        reports = publish(settings, [context.partition_key])
    except CorpusError as exc:
        raise dg.Failure(description=str(exc)) from exc
    [report] = reports
    pointer = report.pointer
    metadata: dict[str, dg.RawMetadataValue] = {
        "revision": pointer.revision,
        "documents": pointer.documents,
        "chunks": pointer.chunks,
        "published": len(report.published),
        "removed": len(report.removed),
        "unchanged": report.unchanged,
        "seconds": round(report.seconds, 3),
    }
    if report.mirrored_files is not None:
        metadata["mirrored_files"] = report.mirrored_files
    context.log.info(
        f"namespace {report.namespace}: revision {pointer.revision}, {len(report.published)} "
        f"published, {len(report.removed)} removed, {report.unchanged} unchanged"
    )
    return dg.MaterializeResult(metadata=metadata)
