"""The Dagster code location and the repo's instance config: operator jobs tagged for the run
queue, document runs limited so publishing is never starved, dead runs retried once."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg

from corpus_pipeline.definitions import defs
from corpus_pipeline.defs.versions import code_version

REPO = Path(__file__).resolve().parent.parent


def test_the_operator_jobs_are_tagged_by_stage() -> None:
    definitions = defs()
    reprocess = definitions.resolve_job_def("reprocess_documents")
    publish = definitions.resolve_job_def("publish_revision")
    assert reprocess.tags["corpus/stage"] == "document"
    assert publish.tags["corpus/stage"] == "publish"
    assert reprocess.partitions_def is not None, "a backfill selects document partitions"


def test_every_document_asset_carries_its_code_version() -> None:
    graph = defs().resolve_asset_graph()
    node = graph.get(dg.AssetKey("parsed_document"))
    assert node.code_version == code_version("parsed_document")


def test_the_instance_limits_document_runs_and_retries_dead_runs_once(tmp_path: Path) -> None:
    shutil.copyfile(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    instance = dg.DagsterInstance.from_config(str(tmp_path))
    assert instance.run_retries_enabled and instance.run_retries_max_retries == 1
    assert not instance.run_retries_retry_on_asset_or_op_failure
    queue = instance.get_concurrency_config().run_queue_config
    assert queue is not None and queue.max_concurrent_runs == 4
    limits = [
        (limit["key"], limit.get("value"), limit["limit"]) for limit in queue.tag_concurrency_limits
    ]
    assert limits == [("corpus/stage", "document", 2)]
