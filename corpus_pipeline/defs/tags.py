"""The tags of every run this project starts: one function decides them for the CLI, the upload
API, the sensors and the jobs an operator launches from the UI.

`corpus/stage` meets the run queue's limits in dagster.yaml (document runs never starve
publishing); `corpus/namespace` says which namespace a document run is for (what a UI backfill
cannot set is read from the materialisations instead, see `sensors.publish_sensor`);
`corpus/trigger` says who started the run; `corpus/process` names the process an in-process run
executes in, so a run whose process died is failed and its slot freed
(`orchestration.runs.fail_orphaned_runs`).
"""

from __future__ import annotations

from typing import Literal

STAGE_TAG = "corpus/stage"
NAMESPACE_TAG = "corpus/namespace"
TRIGGER_TAG = "corpus/trigger"
PROCESS_TAG = "corpus/process"
DOCUMENTS_TAG = "corpus/documents"
# The run tags that make one run cover a range of partitions, as Dagster's own backfills and the
# UI's launchpad set them (dagster-io/dagster#10441); `dg.materialize` has no range parameter
# (dagster-io/dagster#14905). Dagster reads them back through `RunRequest.partition_key_range`
# (checked in `test_dagster_internals.py`).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"

Stage = Literal["document", "publish", "embedding", "maintenance"]


def run_tags(
    stage: Stage,
    trigger: str,
    *,
    namespace: str | None = None,
    span: tuple[str, str, int] | None = None,
    process: str | None = None,
) -> dict[str, str]:
    """The tags of a run of `stage` started by `trigger`: over `span` (a contiguous range of
    document partitions: first, last and how many; one partition is a run's partition key, not
    a range), for `namespace`, executing in `process` (in-process runs only)."""
    tags = {STAGE_TAG: stage, TRIGGER_TAG: trigger}
    if namespace is not None:
        tags[NAMESPACE_TAG] = namespace
    if span is not None and span[2] > 1:
        first, last, count = span
        tags.update({RANGE_START_TAG: first, RANGE_END_TAG: last})
        tags[DOCUMENTS_TAG] = str(count)
    if process is not None:
        tags[PROCESS_TAG] = process
    return tags
