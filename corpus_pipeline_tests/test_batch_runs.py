"""A run over a range of document partitions processes each document as alone would and
records it under its own partition; a failed document fails the run but not its neighbours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.defs.documents import document_pipeline
from corpus_pipeline.defs.partitions import (
    DOCUMENTS_PARTITION,
    DOCUMENTS_PER_RUN,
    partition_ranges,
)
from corpus_pipeline.defs.versions import code_version
from corpus_pipeline.orchestration.runs import dagster_instance, resources_for
from corpus_pipeline.pipeline.stages import document_dir
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

from .support import DOCUMENT_ASSETS

ASSETS = list(DOCUMENT_ASSETS)


def _latest(instance: dg.DagsterInstance, asset: str, partition: str) -> dg.AssetMaterialization:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1
    ).records
    assert records and records[0].asset_materialization is not None
    return records[0].asset_materialization


def test_ranges_are_contiguous_runs_of_the_partition_order():
    order = ["a", "b", "c", "d", "e", "f"]
    assert partition_ranges(order, ["f", "a", "b", "d", "e"]) == [("a", "b", 2), ("d", "f", 3)]


def test_a_small_batch_is_spread_over_both_document_slots():
    order = [f"k{i}" for i in range(5)]
    assert partition_ranges(order, order) == [("k0", "k2", 3), ("k3", "k4", 2)]


def test_a_large_batch_is_cut_at_the_documents_per_run():
    order = [f"k{i:04d}" for i in range(3 * DOCUMENTS_PER_RUN)]
    ranges = partition_ranges(order, list(reversed(order)))
    assert [count for _, _, count in ranges] == [DOCUMENTS_PER_RUN] * 3
    assert ranges[0][:2] == (order[0], order[DOCUMENTS_PER_RUN - 1])


def test_a_key_without_a_partition_is_an_error():
    with pytest.raises(KeyError):
        partition_ranges(["a"], ["b"])


def _range_run(home: Path, files: dict[str, bytes]) -> tuple[Any, Any, list[Any], Any]:
    """Register the files as documents of one namespace and run them as one partition range."""
    settings = load_settings(home=home, namespace="birds")
    registry = SourceRegistry(ObjectStore(settings.object_store))
    records = [registry.register(data, name, "birds") for name, data in files.items()]
    keys = [r.document_id for r in records]
    instance = dagster_instance(settings)
    instance.add_dynamic_partitions(DOCUMENTS_PARTITION, keys)
    result = dg.materialize(
        [document_pipeline],
        instance=instance,
        resources=resources_for(settings),
        raise_on_error=False,
        tags={ASSET_PARTITION_RANGE_START_TAG: keys[0], ASSET_PARTITION_RANGE_END_TAG: keys[-1]},
    )
    return settings, instance, records, result


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory: pytest.TempPathFactory):
    """Three registered documents, the middle one a PDF that is not one, run as one range."""
    files = {
        "ducks.md": b"# Ducks\n\nTufted ducks dive for mussels in winter.\n",
        "broken.pdf": b"%PDF-1.7\n" + b"\x00garbage" * 50,
        "geese.md": b"# Geese\n\nBrent geese graze eelgrass on the mudflats.\n",
    }
    return _range_run(tmp_path_factory.mktemp("batch") / "home", files)


def test_the_run_fails_naming_only_the_failed_document(batch_run):
    _, _, records, result = batch_run
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    message = failure.step_failure_data.error.message
    assert f"1 of 3 documents failed: {records[1].document_id}:" in message
    assert records[0].document_id not in message and records[2].document_id not in message


def test_each_good_document_is_committed_and_materialised_under_its_own_partition(batch_run):
    settings, instance, records, _ = batch_run
    good = [records[0], records[2]]
    for asset in ASSETS[2:]:  # the broken file was stored and profiled, then failed to parse
        done = instance.get_materialized_partitions(dg.AssetKey(asset))
        assert done == {r.document_id for r in good}, asset
    for record in good:
        assert (document_dir(settings, record.document_id) / "chunks.json").exists()
        event = _latest(instance, "source_document", record.document_id)
        assert event.metadata["source_file_name"].value == record.source_file_name


def test_each_partition_carries_its_own_provenance(batch_run):
    _, instance, records, _ = batch_run
    record = records[2]
    source = _latest(instance, "source_document", record.document_id)
    assert (source.tags or {})["dagster/data_version"] == record.sha256
    tags = _latest(instance, "document_chunks", record.document_id).tags or {}
    assert tags["dagster/code_version"] == code_version("document_chunks")
    assert tags["dagster/input_data_version/parsed_document"]
    other = _latest(instance, "document_chunks", records[0].document_id).tags or {}
    assert other["dagster/data_version"] != tags["dagster/data_version"]


def test_checks_are_recorded_per_partition(batch_run):
    _, _, records, result = batch_run
    evaluations = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ]
    by_partition: dict[str, set[str]] = {}
    for evaluation in evaluations:
        assert evaluation.passed
        by_partition.setdefault(evaluation.partition, set()).add(evaluation.check_name)
    assert set(by_partition) == {records[0].document_id, records[2].document_id}
    assert all(len(names) == 3 for names in by_partition.values())


def test_the_failed_document_is_shown_failed(batch_run):
    _, instance, records, _ = batch_run
    failed = instance.get_status_by_partition(
        dg.AssetKey("parsed_document"),
        [r.document_id for r in records],
        dg.DynamicPartitionsDefinition(name=DOCUMENTS_PARTITION),
    )
    assert failed is not None
    statuses = {key: str(status) for key, status in failed.items()}
    assert "FAILED" in statuses[records[1].document_id]
    assert "MATERIALIZED" in statuses[records[0].document_id]


def test_a_batch_of_good_documents_is_a_successful_run(tmp_path: Path):
    notes = {f"n{i}.md": f"# Note {i}\n\nGoldeneyes dive {i} times.\n".encode() for i in range(3)}
    _, instance, records, result = _range_run(tmp_path / "home", notes)
    assert result.success
    done = instance.get_materialized_partitions(dg.AssetKey("document_manifest"))
    assert done == {r.document_id for r in records}


def test_a_batch_materialisation_is_up_to_date_for_dagster(batch_run):
    """The hand-made provenance tags read as a fresh partition, not a stale one."""
    settings, instance, records, _ = batch_run
    definitions = dg.Definitions(assets=[document_pipeline], resources=resources_for(settings))
    graph = definitions.resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    for asset in ASSETS:
        status = resolver.get_status(dg.AssetKey(asset), records[2].document_id)
        assert status == StaleStatus.FRESH, (
            asset,
            resolver.get_stale_causes(dg.AssetKey(asset), records[2].document_id),
        )
