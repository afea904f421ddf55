"""What the Dagster instance remembers of this project's runs, for `corpus runs` and `corpus list`.

Every run a way in starts carries the tags of `defs.tags.run_tags`, whoever started it (the CLI,
the upload API, a sensor, the UI), so the public run API filtered by `corpus/stage` finds the
document, embedding and publish runs; what a publish made (its revision) is its
materialisation's metadata. A document whose bytes have no committed artifacts yet is failed or
still in progress as its `document_manifest` partition's status says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import dagster as dg

from corpus_pipeline.defs.partitions import documents_partitions
from corpus_pipeline.defs.tags import (
    DOCUMENTS_TAG,
    NAMESPACE_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    STAGE_TAG,
    TRIGGER_TAG,
    Stage,
)

PARTITION_TAG = "dagster/partition"  # the partition key of a one-partition run
_REVISION = dg.AssetKey("corpus_revision")


@dataclass(frozen=True)
class RunSummary:
    """One run in words: its stage, status, start, length, namespace, who started it, and
    what it ran (a document, a range of them, or the revision a publish made)."""

    run_id: str
    stage: str
    status: str
    created_at: datetime
    seconds: float | None
    namespace: str | None
    trigger: str | None
    target: str


def recent_runs(
    instance: dg.DagsterInstance,
    stages: Sequence[Stage],
    namespace: str | None = None,
    limit: int = 20,
) -> list[RunSummary]:
    """The newest `limit` runs of `stages` (of `namespace` when given), newest first."""
    tags: dict[str, str | Sequence[str]] = {STAGE_TAG: list(stages)}
    if namespace is not None:
        tags[NAMESPACE_TAG] = namespace
    records = instance.get_run_records(dg.RunsFilter(tags=tags), limit=limit)
    revisions = _revisions(instance, namespace, limit) if "publish" in stages else {}
    out = []
    for record in records:
        run = record.dagster_run
        seconds = None
        if record.start_time is not None and record.end_time is not None:
            seconds = record.end_time - record.start_time
        out.append(
            RunSummary(
                run_id=run.run_id,
                stage=run.tags.get(STAGE_TAG, ""),
                status=run.status.value.lower(),
                created_at=record.create_timestamp,
                seconds=seconds,
                namespace=run.tags.get(NAMESPACE_TAG),
                trigger=run.tags.get(TRIGGER_TAG),
                target=revisions.get(run.run_id) or _target(run.tags),
            )
        )
    return out


def _target(tags: Mapping[str, str]) -> str:
    """What a run ran, from its tags: one document, a range of them, or its namespace."""
    if tags.get(STAGE_TAG) == "publish":
        return f"namespace '{tags.get(NAMESPACE_TAG) or tags.get(PARTITION_TAG, '?')}'"
    if RANGE_START_TAG in tags:
        count = tags.get(DOCUMENTS_TAG, "?")
        return f"{count} documents: {tags[RANGE_START_TAG]} … {tags.get(RANGE_END_TAG, '?')}"
    return tags.get(PARTITION_TAG, "")


def _revisions(instance: dg.DagsterInstance, namespace: str | None, limit: int) -> dict[str, str]:
    """Run id → what its publish made ("revision 3 of 'default': 2 published, 0 removed"),
    for the newest `limit` publishes."""
    page = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=_REVISION, asset_partitions=[namespace] if namespace else None
        ),
        limit=limit,
        ascending=False,
    )
    out = {}
    for record in page.records:
        materialization = record.asset_materialization
        if materialization is None:
            continue
        metadata = {key: value.value for key, value in materialization.metadata.items()}
        out[record.run_id] = (
            f"revision {metadata.get('revision')} of '{record.partition_key}': "
            f"{metadata.get('published', 0)} published, {metadata.get('removed', 0)} removed"
        )
    return out


def document_states(instance: dg.DagsterInstance, document_ids: Sequence[str]) -> dict[str, str]:
    """Document id → "failed" or "processing" for documents whose last run failed or is
    running (the status of their `document_manifest` partitions); others are left out."""
    if not document_ids:
        return {}
    statuses = instance.get_status_by_partition(
        dg.AssetKey("document_manifest"), list(document_ids), documents_partitions
    )
    words = {
        dg.AssetPartitionStatus.FAILED: "failed",
        dg.AssetPartitionStatus.IN_PROGRESS: "processing",
    }
    return {
        document_id: words[status]
        for document_id, status in (statuses or {}).items()
        if status in words
    }
