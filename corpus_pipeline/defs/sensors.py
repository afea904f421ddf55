"""Sensors: the inbox folder synced into the corpus, and a publish once document runs are done.

`inbox_sensor` lists `CORPUS_INBOX_DIR` (the embedded default `data/inbox/`) each tick, plans the
sync from content hashes (`sync.plan_sync`, mode `CORPUS_INBOX_MODE`), admits and stores new and
changed files (`door.admit`, then the registry) and requests one `reprocess_documents` run per
document partition; a file that vanished from a complete listing is forgotten and the namespace
republished. Each tick's counts (ingested, updated, skipped, failed, removed) are its log line and,
when nothing is to do, its skip reason in the UI. `publish_sensor` requests one
`publish_revision` run when document runs have finished since the last publish and none is
queued or running, so a backfill of many partitions publishes once, at its end.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import dagster as dg

from corpus_pipeline.contracts import SourceKind
from corpus_pipeline.defs.jobs import STAGE_TAG, publish_revision, reprocess_documents
from corpus_pipeline.defs.partitions import documents_partitions
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    registry_for,
    resolve_settings,
)
from corpus_pipeline.door import Refused, admit
from corpus_pipeline.errors import CorpusError
from corpus_pipeline.ids import document_id_for
from corpus_pipeline.sync import FolderEntry, SyncMode, plan_sync, scan_folder

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
    "processed (one run per document), vanished ones removed; counts per tick in its log.",
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
    registry = registry_for(settings)
    ns = settings.namespace
    requests: list[dg.RunRequest] = []
    added: list[str] = []
    failed = 0
    for address in plan.new + plan.updated:
        entry = entries[address]
        try:
            data = entry.path.read_bytes()
            admit(address, data, max_bytes=settings.max_file_bytes)
            record = registry.register(data, address, ns, SourceKind.FOLDER)
        except (Refused, CorpusError, OSError) as exc:
            failed += 1
            context.log.warning(f"inbox: {address} not ingested: {exc}")
            continue
        added.append(record.document_id)
        requests.append(
            dg.RunRequest(
                run_key=f"{record.document_id}:{record.sha256}",
                job_name=reprocess_documents.name,
                partition_key=record.document_id,
                tags={"corpus/namespace": ns, "corpus/trigger": "inbox", STAGE_TAG: "document"},
            )
        )
    removed = 0
    for address in plan.removed:
        document_id = document_id_for(ns, address)
        try:
            registry.delete(document_id)
        except CorpusError:
            continue  # never registered (it was refused at the door)
        shutil.rmtree(settings.artifacts_dir / document_id, ignore_errors=True)
        removed += 1
    if removed:
        key = f"inbox-removal:{','.join(sorted(plan.removed))}"
        requests.append(_publish_request([ns], key))
    counts = (
        f"inbox: ingested {len(plan.new)}, updated {len(plan.updated)}, "
        f"skipped {len(plan.unchanged) + len(plan.ignored)}, failed {failed}, removed {removed}"
        + ("" if complete else " (listing incomplete: nothing removed)")
    )
    context.log.info(counts)
    kept = {a: e for a, e in entries.items() if a not in plan.ignored}
    if not complete:  # what could not be listed stays known
        kept = {**{a: e for a, e in previous.items() if a not in entries}, **kept}
    cursor = json.dumps(
        {"files": {a: [e.mtime_ns, e.size, e.sha256] for a, e in sorted(kept.items())}}
    )
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[documents_partitions.build_add_request(added)]
        if added
        else [],
        cursor=cursor,
        skip_reason=None if requests else counts,
    )


def _publish_request(namespaces: list[str], run_key: str) -> dg.RunRequest:
    return dg.RunRequest(
        run_key=run_key,
        job_name=publish_revision.name,
        run_config={"ops": {"corpus_revision": {"config": {"namespaces": namespaces}}}},
        tags={"corpus/trigger": "sensor", STAGE_TAG: "publish"},
    )


@dg.sensor(
    job=publish_revision,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Publishes once document runs have finished and none is queued or running.",
)
def publish_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    instance = context.instance
    if instance.get_runs_count(dg.RunsFilter(tags={STAGE_TAG: "document"}, statuses=_ACTIVE)):
        return dg.SensorResult(skip_reason="document runs still queued or running")
    done = dg.RunsFilter(tags={STAGE_TAG: "document"}, statuses=[dg.DagsterRunStatus.SUCCESS])
    new = []
    for run in instance.get_runs(done, limit=500):  # newest first
        if run.run_id == context.cursor:
            break
        new.append(run)
    if not new:
        return dg.SensorResult(skip_reason="no document run finished since the last publish")
    namespaces = sorted({run.tags.get("corpus/namespace", "default") for run in new})
    return dg.SensorResult(
        run_requests=[_publish_request(namespaces, f"publish-after:{new[0].run_id}")],
        cursor=new[0].run_id,
    )
