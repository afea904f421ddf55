"""The inbox sensor syncs a folder into the corpus by content hash and address; the publish
sensor publishes once document runs are done. Sensors are evaluated against a real instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
)
from corpus_pipeline.defs.sensors import inbox_sensor, publish_sensor
from corpus_pipeline.ingest import dagster_instance, ingest
from corpus_pipeline.settings import load_settings
from corpus_pipeline.storage import ObjectStore, SourceRegistry


@pytest.fixture
def inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "inbox"
    (folder / "q1").mkdir(parents=True)
    (folder / "q1" / "notes.md").write_text("# Q1\n\nTufted ducks dive for mussels.\n")
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
    monkeypatch.setenv("CORPUS_INBOX_DIR", str(folder))
    return folder


def _tick(home: Path, cursor: str | None = None) -> dg.SensorResult:
    instance = dagster_instance(load_settings(home=home))
    context = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={
            "corpus": CorpusRootResource(home=str(home)),
            "object_store": ObjectStoreResource(),
            "models": ModelSettingsResource(),
        },
    )
    result = inbox_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_new_files_are_stored_and_requested_one_run_per_document(inbox: Path, tmp_path: Path):
    result = _tick(tmp_path / "home")
    [run] = result.run_requests or []
    assert run.job_name == "reprocess_documents" and run.partition_key
    assert run.partition_key.startswith("q1-notes-md-"), "the address, not the base name"
    [added] = result.dynamic_partitions_requests or []
    assert list(added.partition_keys) == [run.partition_key]
    records = SourceRegistry(ObjectStore(load_settings(home=tmp_path / "home").object_store))
    assert [r.source_file_name for r in records.records()] == ["q1/notes.md"]
    assert sorted(json.loads(result.cursor or "{}")["files"]) == ["blob.bin", "q1/notes.md"]


def test_an_unchanged_inbox_is_a_skipped_tick_with_its_counts(inbox: Path, tmp_path: Path):
    first = _tick(tmp_path / "home")
    again = _tick(tmp_path / "home", first.cursor)
    assert not again.run_requests
    assert again.skip_reason and again.skip_reason.skip_message == (
        "inbox: ingested 0, updated 0, skipped 2, failed 0, removed 0"
    )


def test_a_changed_file_is_an_update_with_a_new_run_key(inbox: Path, tmp_path: Path):
    first = _tick(tmp_path / "home")
    (inbox / "q1" / "notes.md").write_text("# Q1\n\nGoldeneyes dive too.\n")
    again = _tick(tmp_path / "home", first.cursor)
    [before] = first.run_requests or []
    [after] = again.run_requests or []
    assert after.partition_key == before.partition_key and after.run_key != before.run_key


def test_a_vanished_file_is_removed_and_the_namespace_republished(inbox: Path, tmp_path: Path):
    first = _tick(tmp_path / "home")
    (inbox / "q1" / "notes.md").unlink()
    again = _tick(tmp_path / "home", first.cursor)
    [publish] = again.run_requests or []
    assert publish.job_name == "publish_revision"
    records = SourceRegistry(ObjectStore(load_settings(home=tmp_path / "home").object_store))
    assert records.records() == []


def test_new_only_mode_leaves_changed_files_alone(
    inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    first = _tick(tmp_path / "home")
    monkeypatch.setenv("CORPUS_INBOX_MODE", "new_only")
    (inbox / "q1" / "notes.md").write_text("# Q1\n\nchanged\n")
    (inbox / "q2.md").write_text("# Q2\n\nnew\n")
    again = _tick(tmp_path / "home", first.cursor)
    [run] = again.run_requests or []
    assert run.partition_key and run.partition_key.startswith("q2-md-")


@pytest.mark.slow
def test_the_publish_sensor_publishes_once_after_document_runs(tmp_path: Path):
    note = tmp_path / "note.md"
    note.write_text("# Ducks\n\nTufted ducks dive.\n")
    settings = load_settings(home=tmp_path / "home", ingest_workers=1, namespace="birds")
    instance = dagster_instance(settings)
    idle: Any = publish_sensor(dg.build_sensor_context(instance=instance))
    assert not idle.run_requests
    [result] = ingest([note], settings)
    assert result.status == "ok"
    fired: Any = publish_sensor(dg.build_sensor_context(instance=instance))
    [publish] = fired.run_requests
    assert publish.run_config["ops"]["corpus_revision"]["config"]["namespaces"] == ["birds"]
    again: Any = publish_sensor(dg.build_sensor_context(instance=instance, cursor=fired.cursor))
    assert not again.run_requests
