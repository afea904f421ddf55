"""Per-document dense vectors: their own asset, after the committed document, never on the
lexical path.

A document is searchable lexically as soon as its directory is committed and published;
`document_embeddings` runs later (its own job, `embed_documents`), writes the vector file of
the configured space beside the document (`embeddings.embed_document`), and the next publish
adds those vectors to the revision. Re-embedding after a model change is a backfill of this
asset alone. Like the document step, a run may take a range of partitions; each document is
recorded under its own partition, and one that fails does not fail the others' records.
"""

from collections.abc import Iterator

import dagster as dg

from corpus_pipeline.defs.documents import raise_if_failed, user_errors
from corpus_pipeline.defs.partitions import DOCUMENTS_PER_RUN, documents_partitions
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    resolve_settings,
)
from corpus_pipeline.defs.versions import code_version
from corpus_pipeline.embeddings.vectors import embed_document, embedder_for

GROUP = "dense"
ASSET = "document_embeddings"


@dg.multi_asset(
    name="embed_document_step",
    specs=[
        dg.AssetSpec(
            ASSET,
            deps=["document_manifest"],
            group_name=GROUP,
            kinds={"onnx", "parquet"},
            description="One vector per unique chunk of the committed document, in the "
            "configured space (CORPUS_DENSE: the local ONNX model or an embeddings endpoint); "
            "published into the revision's vector table by the next publish.",
            partitions_def=documents_partitions,
            code_version=code_version(ASSET),
            skippable=True,  # each document's materialisation is recorded by the step itself
        )
    ],
    partitions_def=documents_partitions,
    backfill_policy=dg.BackfillPolicy.multi_run(DOCUMENTS_PER_RUN),
    description="Dense vectors of the selected documents.",
)
def document_embeddings(
    context: dg.AssetExecutionContext,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> Iterator[dg.AssetMaterialization]:
    with user_errors("embeddings"):
        settings = resolve_settings(corpus, object_store, models)
        embedder = embedder_for(settings)
    if embedder is None:
        raise dg.Failure(description="the dense channel is off (set CORPUS_DENSE)")
    failures: dict[str, str] = {}
    for document_id in context.partition_keys:
        try:
            with user_errors("embeddings"):
                out = embed_document(settings, document_id, embedder)
        except dg.Failure as exc:
            context.log.error(f"{document_id}: {exc.description}")
            failures[document_id] = exc.description or "failed"
            continue
        yield dg.AssetMaterialization(
            asset_key=ASSET,
            partition=document_id,
            metadata={
                "space": embedder.spec.key,
                "chunks": out.chunks,
                "embedded": out.embedded,
                "kept": out.chunks - out.embedded,
                "seconds": round(out.seconds, 4),
                "path": dg.MetadataValue.path(str(out.path)),
            },
            tags={"dagster/code_version": code_version(ASSET)},
        )
    raise_if_failed(failures, len(context.partition_keys), "were not embedded")
