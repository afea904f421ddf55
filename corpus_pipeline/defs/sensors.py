"""Sensors: the inbox folder synced into the corpus, and a publish once document runs are done.

`inbox_sensor` lists `CORPUS_INBOX_DIR` (the embedded default `data/inbox/`) each tick, plans the
sync from content hashes (`sync.plan_sync`, mode `CORPUS_INBOX_MODE`), admits and stores the
documents of new and changed files (`door.deliveries`, as `corpus ingest` does: archive members,
mbox messages, e-mail attachments; then the registry) and requests `reprocess_documents` runs over
contiguous ranges of their partitions (up to `DOCUMENTS_PER_RUN` documents each); a file that vanished from a complete listing is forgotten and the namespace
republished (with the documents it delivered). Each tick's counts (ingested, updated, skipped, failed, removed) are its log line and,
when nothing is to do, its skip reason in the UI. `publish_sensor` requests a
`publish_revision` run per namespace whose documents were materialised (by any run) after its
last revision, once no run writing documents is queued or running, so a backfill of many
partitions publishes once, at its end. `gc_schedule`
runs `collect_garbage` (what `corpus gc` does) once a day.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.common.ids import document_id_for
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import SourceKind
from corpus_pipeline.defs.jobs import (
    collect_garbage,
    embed_documents,
    publish_revision,
    reprocess_documents,
)
from corpus_pipeline.defs.partitions import (
    DOCUMENTS_PARTITION,
    NAMESPACES_PARTITION,
    documents_partitions,
    namespaces_partitions,
    partition_ranges,
)
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    registry_for,
    resolve_settings,
)
from corpus_pipeline.defs.tags import run_tags
from corpus_pipeline.intake.door import deliveries
from corpus_pipeline.intake.sync import (
    FolderEntry,
    SyncMode,
    SyncPlan,
    plan_sync,
    read_object,
    scan_bucket,
    scan_folder,
)
from corpus_pipeline.parsing.legacy import libreoffice_available
from corpus_pipeline.storage.gc import forget_document
from corpus_pipeline.storage.store import SourceRegistry

_ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


_SensorBody = Callable[[dg.SensorEvaluationContext, Callable[[], CorpusSettings]], dg.SensorResult]


def _corpus_sensor(
    description: str, *, interval: int = 30, **targets: Any
) -> Callable[[_SensorBody], dg.SensorDefinition]:
    """A sensor of the corpus, running from the start; its body is given the tick's context
    and the settings (the environment's with the resources' values on top), resolved when the
    body asks for them. `targets`: the `job` or `jobs` it requests runs of."""

    def define(body: _SensorBody) -> dg.SensorDefinition:
        @dg.sensor(
            name=body.__name__,
            minimum_interval_seconds=interval,
            default_status=dg.DefaultSensorStatus.RUNNING,
            description=description,
            **targets,
        )
        def sensor(
            context: dg.SensorEvaluationContext,
            corpus: CorpusRootResource,
            object_store: ObjectStoreResource,
            models: ModelSettingsResource,
        ) -> dg.SensorResult:
            return body(context, lambda: resolve_settings(corpus, object_store, models))

        return sensor

    return define


def _cursor_entries(cursor: str | None, root: Any) -> dict[str, FolderEntry]:
    files = json.loads(cursor).get("files", {}) if cursor else {}
    return {a: FolderEntry(root / a, int(m), int(s), str(h)) for a, (m, s, h) in files.items()}


@_corpus_sensor(  # running from the start: `make dev` watches data/inbox/ at once
    "Syncs the inbox folder into the corpus: new and changed files are stored and "
    "processed (batched runs over their partitions), vanished ones removed; counts per tick in its log.",
    jobs=[reprocess_documents, publish_revision],
)
def inbox_sensor(
    context: dg.SensorEvaluationContext, resolved: Callable[[], CorpusSettings]
) -> dg.SensorResult:
    settings = resolved()
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


@_corpus_sensor(
    "Syncs CORPUS_S3_SYNC_URL (s3://bucket/prefix) like the inbox: the ETag decides "
    "what changed before anything is downloaded.",
    interval=60,
    jobs=[reprocess_documents, publish_revision],
)
def s3_sensor(
    context: dg.SensorEvaluationContext, resolved: Callable[[], CorpusSettings]
) -> dg.SensorResult:
    settings = resolved()
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
    namespace: str = "default"
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
        if self.added:  # the namespace's revision is listed from its first document on
            adds.append(namespaces_partitions.build_add_request([self.namespace]))
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
    tick = _Tick(label, plan, complete, ns)
    for address in plan.new + plan.updated:
        try:
            found = deliveries(
                address,
                fetch(address),
                max_bytes=settings.max_file_bytes,
                libreoffice=libreoffice_available(settings),
            )
        except (CorpusError, OSError) as exc:
            tick.failed += 1
            context.log.warning(f"{label}: {address} not ingested: {exc}")
            continue
        # The documents the file carries, as `corpus ingest` and the upload API take them: an
        # archive's members, an mbox's messages, an e-mail's attachments (`attached_to` it).
        for item in found:
            if item.refused is not None:
                context.log.warning(f"{label}: {item.label} skipped: {item.refused}")
                continue
            attached = document_id_for(ns, item.parent) if item.parent is not None else None
            try:
                record = registry.register(item.data, item.label, ns, kind, attached_to=attached)
            except CorpusError as exc:
                tick.failed += 1
                context.log.warning(f"{label}: {item.label} not ingested: {exc}")
                continue
            tick.added.append(record.document_id)
            tick.versions[record.document_id] = record.sha256
    if tick.added:
        known = list(context.instance.get_dynamic_partitions(DOCUMENTS_PARTITION))
        order = known + [key for key in dict.fromkeys(tick.added) if key not in set(known)]
        for first, last, count in partition_ranges(order, tick.added):
            tick.requests.append(_documents_request(order, first, last, count, tick, ns))
    for document_id in _carried_by(registry, ns, plan.removed):
        try:
            forget_document(settings, document_id)
        except CorpusError:
            continue  # never registered (it was refused at the door)
        tick.removed += 1
    if tick.removed:
        key = f"{label}-removal:{','.join(sorted(plan.removed))}"
        tick.requests.extend(_publish_requests([ns], key))
    context.log.info(tick.counts())
    return tick


def _carried_by(registry: SourceRegistry, namespace: str, addresses: list[str]) -> list[str]:
    """The documents of removed files: each file's own, and those it delivered under its label
    (archive members, mbox messages and e-mail attachments are `<address>/<name>`)."""
    if not addresses:
        return []
    prefixes = tuple(f"{address}/" for address in addresses)
    carried = [
        record.document_id
        for record in registry.records()
        if record.namespace == namespace and record.source_file_name.startswith(prefixes)
    ]
    return [document_id_for(namespace, address) for address in addresses] + carried


def _documents_request(
    order: list[str], first: str, last: str, count: int, tick: _Tick, namespace: str
) -> dg.RunRequest:
    """One `reprocess_documents` run over a contiguous range of document partitions (a single
    partition when alone); its run key is the documents' content, so the same files again are
    never run twice."""
    span = (first, last, count)
    if count == 1:
        run_key = f"{first}:{tick.versions[first]}"
    else:
        start = order.index(first)
        members = order[start : start + count]
        digest = hashlib.sha256(
            "\n".join(f"{key}:{tick.versions.get(key, '')}" for key in members).encode()
        ).hexdigest()[:16]
        run_key = f"{first}..{last}:{digest}"
    tags = run_tags("document", tick.label, namespace=namespace, span=span)
    return _range_request(reprocess_documents, run_key, span, tags)


def _range_request(
    job: dg.UnresolvedAssetJobDefinition,
    run_key: str,
    span: tuple[str, str, int],
    tags: dict[str, str],
) -> dg.RunRequest:
    """A run of `job` over `span` (first, last and how many document partitions): on the
    partition itself when it is one, else over the range its tags (`run_tags(span=…)`) name."""
    first, _, count = span
    return dg.RunRequest(
        run_key=run_key,
        job_name=job.name,
        partition_key=first if count == 1 else None,
        tags=tags,
    )


def _publish_requests(namespaces: list[str], run_key: str) -> list[dg.RunRequest]:
    """One `publish_revision` run per namespace, on its partition."""
    return [
        dg.RunRequest(
            run_key=f"{run_key}:{namespace}",
            job_name=publish_revision.name,
            partition_key=namespace,
            tags=run_tags("publish", "sensor"),
        )
        for namespace in namespaces
    ]


# What a revision is published from: the committed documents and their vectors. Whatever
# materialised them (a sensor's run, a UI backfill over the asset graph or of the job,
# "Materialize" on one partition, the CLI, the upload API) is seen by its materialisations, not
# by run tags the UI cannot set.
PUBLISHED_FROM = (dg.AssetKey("document_manifest"), dg.AssetKey("document_embeddings"))
_PAGE = 1000


def _writes_published_inputs(run: dg.DagsterRun) -> bool:
    """Whether an active run may still materialise what a revision is published from."""
    if run.job_name in (reprocess_documents.name, embed_documents.name):
        return True
    selection = run.asset_selection or frozenset()
    if run.job_name.startswith("__ASSET_JOB") and not selection:
        return True  # an asset job whose selection is not recorded: assume it may
    return any(key.path[0] in _DOCUMENT_ASSETS for key in selection)


def _document_asset_names() -> frozenset[str]:
    from corpus_pipeline.defs.documents import _asset_specs
    from corpus_pipeline.defs.embeddings import ASSET

    return frozenset({spec.key.path[0] for spec in _asset_specs()} | {ASSET})


_DOCUMENT_ASSETS = _document_asset_names()


def _materialised_since(
    instance: dg.DagsterInstance,
    cursor_value: str | None,
    keys: tuple[dg.AssetKey, ...] = PUBLISHED_FROM,
) -> tuple[dict[str, int], str | None]:
    """Document partition → storage id of its newest materialisation of `keys` since the
    storage id the cursor holds (a cursor of an older form counts as none); and the cursor
    after them."""
    after = int(cursor_value) if cursor_value and cursor_value.isdigit() else None
    newest: dict[str, int] = {}
    last = after
    for key in keys:
        cursor = None
        while True:
            page = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key, after_storage_id=after),
                limit=_PAGE,
                cursor=cursor,
                ascending=True,
            )
            for record in page.records:
                if record.partition_key:
                    newest[record.partition_key] = record.storage_id
                last = max(last or 0, record.storage_id)
            if not page.has_more:
                break
            cursor = page.cursor
    return newest, (str(last) if last is not None else cursor_value)


def _published_at(instance: dg.DagsterInstance, namespace: str) -> int:
    """Storage id of the newest materialisation of the namespace's revision (0: never)."""
    page = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey("corpus_revision"), asset_partitions=[namespace]
        ),
        limit=1,
        ascending=False,
    )
    return page.records[0].storage_id if page.records else 0


@_corpus_sensor(
    "Publishes the revision of every namespace whose documents (or vectors) were "
    "materialised after its last publish, whatever started the run, once no document run is "
    "queued or running.",
    job=publish_revision,
)
def publish_sensor(
    context: dg.SensorEvaluationContext, resolved: Callable[[], CorpusSettings]
) -> dg.SensorResult:
    instance = context.instance
    active = instance.get_runs(dg.RunsFilter(statuses=_ACTIVE), limit=500)
    if any(_writes_published_inputs(run) for run in active):
        return dg.SensorResult(skip_reason="document runs still queued or running")
    newest, cursor = _materialised_since(instance, context.cursor)
    if not newest:
        return dg.SensorResult(skip_reason="no document materialised since the last publish")
    # The namespace belongs to the document (its registry record), not to the run's tags.
    registry = registry_for(resolved())
    touched: dict[str, int] = {}
    for document_id, storage_id in newest.items():
        try:
            namespace = registry.get(document_id).namespace
        except CorpusError:
            continue  # forgotten since: its removal publishes on its own
        touched[namespace] = max(touched.get(namespace, 0), storage_id)
    # A namespace the CLI or the upload API published after its documents is not published again.
    stale = sorted(
        ns for ns, storage_id in touched.items() if _published_at(instance, ns) < storage_id
    )
    if not stale:
        return dg.SensorResult(skip_reason="every namespace already published", cursor=cursor)
    return dg.SensorResult(
        run_requests=_publish_requests(stale, f"publish-after:{cursor}"),
        dynamic_partitions_requests=[
            namespaces_partitions.build_add_request(
                [ns for ns in stale if not instance.has_dynamic_partition(NAMESPACES_PARTITION, ns)]
            )
        ],
        cursor=cursor,
    )


@_corpus_sensor(
    "With the dense channel on (CORPUS_DENSE), embeds every document materialised "
    "since the last tick (whatever ran it), in range runs; publishing then adds their vectors.",
    job=embed_documents,
)
def embeddings_sensor(
    context: dg.SensorEvaluationContext, resolved: Callable[[], CorpusSettings]
) -> dg.SensorResult:
    settings = resolved()
    newest, cursor = _materialised_since(
        context.instance, context.cursor, (dg.AssetKey("document_manifest"),)
    )
    if not newest:
        return dg.SensorResult(skip_reason="no document materialised since the last tick")
    if settings.dense == "off":
        return dg.SensorResult(skip_reason="the dense channel is off (CORPUS_DENSE)", cursor=cursor)
    # Documents embedded after they were materialised (`corpus ingest` embeds its own) are done.
    embedded, _ = _materialised_since(
        context.instance, context.cursor, (dg.AssetKey("document_embeddings"),)
    )
    order = list(context.instance.get_dynamic_partitions(DOCUMENTS_PARTITION))
    present = set(order)
    known = [
        key
        for key, storage_id in newest.items()
        if key in present and embedded.get(key, 0) < storage_id
    ]
    requests = [
        _embed_request(order, first, last, count, cursor or "")
        for first, last, count in partition_ranges(order, known)
    ]
    return dg.SensorResult(run_requests=requests, cursor=cursor)


def _embed_request(
    order: list[str], first: str, last: str, count: int, cursor: str
) -> dg.RunRequest:
    """The embedding run over a range of newly materialised document partitions."""
    span = (first, last, count)
    where = first if count == 1 else f"{first}..{last}"
    tags = run_tags("embedding", "embeddings_sensor", span=span)
    return _range_request(embed_documents, f"embed:{cursor}:{where}", span, tags)


gc_schedule = dg.ScheduleDefinition(
    name="gc_schedule",
    job=collect_garbage,
    cron_schedule="30 3 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily at 03:30: removes stored bytes and per-document folders that no registry "
    "record references (older than an hour; published revisions untouched), as `corpus gc`.",
)
