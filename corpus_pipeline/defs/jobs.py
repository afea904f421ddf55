"""Jobs an operator launches from the Dagster UI, tagged for the run queue.

`reprocess_documents` re-parses and re-commits the selected document partitions (a backfill
over stale partitions after a parser change); `publish_revision` publishes them. Their
`corpus/stage` tags meet the run queue's limits in dagster.yaml: document runs may take at most
`DOCUMENT_RUN_LIMIT` of the queue's slots, so a large backfill never starves publishing.
`collect_garbage` removes stored bytes and per-document folders no registry record references
(`corpus gc`; `gc_schedule` in `sensors.py` runs it daily).
"""

import dagster as dg

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.defs.documents import GROUP
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    resolve_settings,
)
from corpus_pipeline.defs.tags import STAGE_TAG
from corpus_pipeline.storage.gc import collect_garbage as collect

# A document run is one step (the multi-asset with its checks, over a range of partitions), so
# by default the run executes it in its own process: the multiprocess executor starts a second
# process per run only to load the definitions again (measured by benchmarks/sensor_ingest.py,
# `--executor`). Documents run in parallel as runs (the queue's document slots), not as steps.
# `CORPUS_DOCUMENT_EXECUTOR=multiprocess` puts the step in a process of its own (isolation from
# the run's process, e.g. under a run launcher that shares one process among runs).
_EXECUTORS = {"in_process": dg.in_process_executor, "multiprocess": dg.multiprocess_executor}
reprocess_documents = dg.define_asset_job(
    "reprocess_documents",
    selection=dg.AssetSelection.groups(GROUP),
    executor_def=_EXECUTORS[load_settings().document_executor],
    tags={STAGE_TAG: "document"},
    description="Re-parse and re-commit the selected document partitions (e.g. the stale ones).",
)

publish_revision = dg.define_asset_job(
    "publish_revision",
    selection=dg.AssetSelection.assets("corpus_revision"),
    tags={STAGE_TAG: "publish"},
    description="Publish one consistent revision of the namespaces' documents.",
)

# Dense vectors of the selected documents (e.g. all of them after a model change); never part of
# the document job, so the lexical revision never waits for them.
embed_documents = dg.define_asset_job(
    "embed_documents",
    selection=dg.AssetSelection.groups("dense"),
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: "embedding"},
    description="Embed the selected document partitions into the configured vector space.",
)


@dg.op(
    description="Remove stored bytes and per-document folders that no registry record references "
    "and that are older than an hour; published revisions are never touched."
)
def remove_unreferenced(
    context: dg.OpExecutionContext,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.Output[None]:
    report = collect(resolve_settings(corpus, object_store, models))
    for item in report.removed:
        context.log.info(f"removed {item.kind} {item.location} ({item.size_bytes:,} bytes)")
    context.log.info(report.summary())
    return dg.Output(
        None,
        metadata={
            "removed": len(report.removed),
            "removed_bytes": report.removed_bytes,
            "kept_young": len(report.kept_young),
            "removed_items": dg.MetadataValue.text(
                "\n".join(f"{g.kind} {g.location}" for g in report.removed) or "none"
            ),
        },
    )


@dg.job(tags={STAGE_TAG: "maintenance"}, description="What `corpus gc` does, from the UI.")
def collect_garbage() -> None:
    remove_unreferenced()
