"""Sensors: the inbox folder synced into the corpus, and a publish once document runs are done.

`inbox_sensor` lists `CORPUS_INBOX_DIR` (the embedded default `data/inbox/`) each tick, plans the
sync from content hashes (`sync.plan_sync`, mode `CORPUS_INBOX_MODE`), admits and stores new and
changed files (`door.admit`, then the registry) and requests `reprocess_documents` runs over
contiguous ranges of their partitions (up to `DOCUMENTS_PER_RUN` documents each); a file that vanished from a complete listing is forgotten and the namespace
republished. Each tick's counts (ingested, updated, skipped, failed, removed) are its log line and,
when nothing is to do, its skip reason in the UI. `publish_sensor` requests one
`publish_revision` run when document runs have finished since the last publish and none is
queued or running, so a backfill of many partitions publishes once, at its end.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
from dagster._core.storage.tags import (  # the tags Dagster's own range backfills use
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from corpus_pipeline.contracts import SourceKind
from corpus_pipeline.defs.jobs import (
    STAGE_TAG,
    embed_documents,
    publish_revision,
    reprocess_documents,
)
from corpus_pipeline.defs.partitions import (
    DOCUMENTS_PARTITION,
    documents_partitions,
    partition_ranges,
)
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    registry_for,
    resolve_settings,
)
from corpus_pipeline.door import admit
from corpus_pipeline.errors import CorpusError
from corpus_pipeline.ids import document_id_for
from corpus_pipeline.ingest import forget_document
from corpus_pipeline.settings import CorpusSettings
from corpus_pipeline.sync import (
    FolderEntry,
    SyncMode,
    SyncPlan,
    plan_sync,
    read_object,
    scan_bucket,
    scan_folder,
)

_ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def _cursor_entries(cursor: str | None, root: Any) -> dict[str, FolderEntry]:
    files = json.loads(cursor).get("files", {}) if cursor else {}
    return {a: FolderEntry(root / a, int(m), int(s), str(h)) for a, (m, s, h) in files.items()}


@dg.sensor(
    jobs=[reprocess_documents, publish_revision],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,  # `make dev` watches data/inbox/ at once
    description="Syncs the inbox folder into the corpus: new and changed files are stored and "
    "processed (batched runs over their partitions), vanished ones removed; counts per tick in its log.",
)
def inbox_sensor(
    context: dg.SensorEvaluationContext,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.SensorResult:
    settings = resolve_settings(corpus, object_store, models)
    root = settings.inbox_dir
    previous = _cursor_entries(context.cursor, root)
    entries, complete = scan_folder(root, previous)
    plan = plan_sync(
        {a: e.sha256 for a, e in entries.items()},
        {a: e.sha256 for a, e in previous.items()},
        SyncMode(settings.inbox_mode),
        complete,
    )
    tick = _apply(
        context,
        settings,
        plan,
        lambda a: entries[a].path.read_bytes(),
        SourceKind.FOLDER,
        "inbox",
        complete,
    )
    kept = {a: e for a, e in entries.items() if a not in plan.ignored}
    if not complete:  # what could not be listed stays known
        kept = {**{a: e for a, e in previous.items() if a not in entries}, **kept}
    cursor = {"files": {a: [e.mtime_ns, e.size, e.sha256] for a, e in sorted(kept.items())}}
    return tick.result(json.dumps(cursor))


@dg.sensor(
    jobs=[reprocess_documents, publish_revision],
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Syncs CORPUS_S3_SYNC_URL (s3://bucket/prefix) like the inbox: the ETag decides "
    "what changed before anything is downloaded.",
)
def s3_sensor(
    context: dg.SensorEvaluationContext,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.SensorResult:
    settings = resolve_settings(corpus, object_store, models)
    if not settings.s3_sync_url:
        return dg.SensorResult(skip_reason="no bucket to sync (CORPUS_S3_SYNC_URL is empty)")
    previous: dict[str, str] = (
        json.loads(context.cursor).get("objects", {}) if context.cursor else {}
    )
    listing, complete = scan_bucket(settings.s3_sync_url)
    plan = plan_sync(listing, previous, SyncMode(settings.s3_sync_mode), complete)
    tick = _apply(context, settings, plan, read_object, SourceKind.S3, "s3", complete)
    kept = {a: e for a, e in listing.items() if a not in plan.ignored}
    if not complete:
        kept = previous
    return tick.result(json.dumps({"objects": dict(sorted(kept.items()))}))


@dataclass
class _Tick:
    """What one sync tick did, and the SensorResult that reports it."""

    label: str
    plan: SyncPlan
    complete: bool
    requests: list[dg.RunRequest] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)  # document id → content sha256
    failed: int = 0
    removed: int = 0

    def counts(self) -> str:
        plan, complete = self.plan, self.complete
        return (
            f"{self.label}: ingested {len(plan.new)}, updated {len(plan.updated)}, "
            f"skipped {len(plan.unchanged) + len(plan.ignored)}, failed {self.failed}, "
            f"removed {self.removed}"
            + ("" if complete else " (listing incomplete: nothing removed)")
        )

    def result(self, cursor: str) -> dg.SensorResult:
        counts = self.counts()
        adds = [documents_partitions.build_add_request(self.added)] if self.added else []
        return dg.SensorResult(
            run_requests=self.requests,
            dynamic_partitions_requests=adds,
            cursor=cursor,
            skip_reason=None if self.requests else counts,
        )


def _apply(
    context: dg.SensorEvaluationContext,
    settings: CorpusSettings,
    plan: SyncPlan,
    fetch: Callable[[str], bytes],
    kind: SourceKind,
    label: str,
    complete: bool,
) -> _Tick:
    """Admit and store new and changed addresses (batched into range runs), forget the
    removed ones (and request a publish without them)."""
    registry = registry_for(settings)
    ns = settings.namespace
    tick = _Tick(label, plan, complete)
    for address in plan.new + plan.updated:
        try:
            data = fetch(address)
            admit(address, data, max_bytes=settings.max_file_bytes)
            record = registry.register(data, address, ns, kind)
        except (CorpusError, OSError) as exc:
            tick.failed += 1
            context.log.warning(f"{label}: {address} not ingested: {exc}")
            continue
        tick.added.append(record.document_id)
        tick.versions[record.document_id] = record.sha256
    if tick.added:
        known = list(context.instance.get_dynamic_partitions(DOCUMENTS_PARTITION))
        order = known + [key for key in dict.fromkeys(tick.added) if key not in set(known)]
        for first, last, count in partition_ranges(order, tick.added):
            tick.requests.append(_documents_request(order, first, last, count, tick, ns))
    for address in plan.removed:
        try:
            forget_document(settings, document_id_for(ns, address))
        except CorpusError:
            continue  # never registered (it was refused at the door)
        tick.removed += 1
    if tick.removed:
        key = f"{label}-removal:{','.join(sorted(plan.removed))}"
        tick.requests.append(_publish_request([ns], key))
    context.log.info(tick.counts())
    return tick


def _documents_request(
    order: list[str], first: str, last: str, count: int, tick: _Tick, namespace: str
) -> dg.RunRequest:
    """One `reprocess_documents` run over a contiguous range of document partitions (a single
    partition when alone); its run key is the documents' content, so the same files again are
    never run twice."""
    tags = {"corpus/namespace": namespace, "corpus/trigger": tick.label, STAGE_TAG: "document"}
    if count == 1:
        return dg.RunRequest(
            run_key=f"{first}:{tick.versions[first]}",
            job_name=reprocess_documents.name,
            partition_key=first,
            tags=tags,
        )
    start = order.index(first)
    members = order[start : start + count]
    digest = hashlib.sha256(
        "\n".join(f"{key}:{tick.versions.get(key, '')}" for key in members).encode()
    ).hexdigest()[:16]
    return dg.RunRequest(
        run_key=f"{first}..{last}:{digest}",
        job_name=reprocess_documents.name,
        tags={
            **tags,
            ASSET_PARTITION_RANGE_START_TAG: first,
            ASSET_PARTITION_RANGE_END_TAG: last,
            "corpus/documents": str(count),
        },
    )


def _publish_request(namespaces: list[str], run_key: str) -> dg.RunRequest:
    return dg.RunRequest(
        run_key=run_key,
        job_name=publish_revision.name,
        run_config={"ops": {"corpus_revision": {"config": {"namespaces": namespaces}}}},
        tags={"corpus/trigger": "sensor", STAGE_TAG: "publish"},
    )


def _finished_since(
    instance: dg.DagsterInstance, stages: list[str], cursor: str | None
) -> list[dg.DagsterRun]:
    """Successful runs of the stages since the run the cursor names, newest first."""
    done = dg.RunsFilter(tags={STAGE_TAG: stages}, statuses=[dg.DagsterRunStatus.SUCCESS])
    new = []
    for run in instance.get_runs(done, limit=500):  # newest first
        if run.run_id == cursor:
            break
        new.append(run)
    return new


# Runs whose results a publish takes into the revision: documents, and their vectors.
_PUBLISHED_STAGES = ["document", "embedding"]


@dg.sensor(
    job=publish_revision,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Publishes once document (or embedding) runs have finished and none is queued "
    "or running.",
)
def publish_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    instance = context.instance
    stages = dg.RunsFilter(tags={STAGE_TAG: _PUBLISHED_STAGES}, statuses=_ACTIVE)
    if instance.get_runs_count(stages):
        return dg.SensorResult(skip_reason="document runs still queued or running")
    new = _finished_since(instance, _PUBLISHED_STAGES, context.cursor)
    if not new:
        return dg.SensorResult(skip_reason="no document run finished since the last publish")
    namespaces = sorted({run.tags.get("corpus/namespace", "default") for run in new})
    return dg.SensorResult(
        run_requests=[_publish_request(namespaces, f"publish-after:{new[0].run_id}")],
        cursor=new[0].run_id,
    )


@dg.sensor(
    job=embed_documents,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="With the dense channel on (CORPUS_DENSE), embeds the documents of every "
    "finished document run, over the same partitions; publishing then adds their vectors.",
)
def embeddings_sensor(
    context: dg.SensorEvaluationContext,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.SensorResult:
    settings = resolve_settings(corpus, object_store, models)
    new = _finished_since(context.instance, ["document"], context.cursor)
    if not new:
        return dg.SensorResult(skip_reason="no document run finished since the last tick")
    cursor = new[0].run_id
    if settings.dense == "off":
        return dg.SensorResult(skip_reason="the dense channel is off (CORPUS_DENSE)", cursor=cursor)
    requests = [_embed_request(run) for run in reversed(new)]
    return dg.SensorResult(run_requests=requests, cursor=cursor)


def _embed_request(run: dg.DagsterRun) -> dg.RunRequest:
    """The embedding run over the partitions a document run materialised."""
    tags = {
        "corpus/namespace": run.tags.get("corpus/namespace", "default"),
        "corpus/trigger": "embeddings_sensor",
        STAGE_TAG: "embedding",
    }
    for key in (ASSET_PARTITION_RANGE_START_TAG, ASSET_PARTITION_RANGE_END_TAG):
        if key in run.tags:
            tags[key] = run.tags[key]
    return dg.RunRequest(
        run_key=f"embed-after:{run.run_id}",
        job_name=embed_documents.name,
        partition_key=run.tags.get("dagster/partition"),
        tags=tags,
    )
