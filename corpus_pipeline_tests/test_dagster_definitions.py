"""The Dagster code location and the repo's instance config: operator jobs tagged for the run
queue, document runs limited so publishing is never starved, dead runs retried once."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,  # not exported by dagster
)

from corpus_pipeline.definitions import defs
from corpus_pipeline.defs.partitions import DOCUMENTS_PER_RUN
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


def test_the_code_location_holds_every_object_its_modules_define() -> None:
    """The location lists its objects (discovery is slow); a new asset, job or sensor in a
    `defs/` module that is not listed fails here."""
    import importlib
    import pkgutil

    import corpus_pipeline.defs as package

    found: dict[type, set[str]] = {dg.SensorDefinition: set(), dg.AssetsDefinition: set()}
    jobs: set[str] = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, dg.SensorDefinition):
                found[dg.SensorDefinition].add(value.name)
            elif isinstance(value, dg.AssetsDefinition):
                found[dg.AssetsDefinition] |= {k.to_user_string() for k in value.keys}
            elif isinstance(value, UnresolvedAssetJobDefinition):
                jobs.add(value.name)
    repository = defs().get_repository_def()
    assert found[dg.SensorDefinition] == {s.name for s in repository.sensor_defs}
    assert found[dg.AssetsDefinition] == {
        k.to_user_string() for k in repository.asset_graph.get_all_asset_keys()
    }
    assert jobs and jobs <= {j.name for j in repository.get_all_jobs()}
    assert len(repository.asset_graph.asset_check_keys) == 3
    assert set(repository.get_top_level_resources()) == {"corpus", "object_store", "models"}


def test_a_document_run_executes_its_one_step_in_the_run_process() -> None:
    job = defs().resolve_job_def("reprocess_documents")
    assert job.executor_def.name == "in_process"


def test_a_backfill_of_many_documents_runs_them_in_ranges() -> None:
    step = defs().resolve_assets_def("document_manifest")
    policy = step.backfill_policy
    assert policy is not None and policy.max_partitions_per_run == DOCUMENTS_PER_RUN


def test_an_operator_can_give_the_document_step_a_process_of_its_own(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    code = (
        "from corpus_pipeline.definitions import defs; "
        "print(defs().resolve_job_def('reprocess_documents').executor_def.name)"
    )
    env = {**os.environ, "CORPUS_DOCUMENT_EXECUTOR": "multiprocess", "CORPUS_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "multiprocess", out.stderr[-2000:]
