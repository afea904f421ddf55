"""The inbox sensor syncs a folder into the corpus by content hash and address; the publish
sensor publishes once document runs are done. Sensors are evaluated against a real instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
)
from corpus_pipeline.defs.sensors import inbox_sensor, publish_sensor
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import dagster_instance
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry


@pytest.fixture
def inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "inbox"
    (folder / "q1").mkdir(parents=True)
    (folder / "q1" / "notes.md").write_text("# Q1\n\nTufted ducks dive for mussels.\n")
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
    monkeypatch.setenv("CORPUS_INBOX_DIR", str(folder))
    return folder


def _context(home: Path, cursor: str | None = None, dense: str = "") -> Any:
    """A sensor context on the home's real instance, with the resources the sensors take."""
    return dg.build_sensor_context(
        instance=dagster_instance(load_settings(home=home)),
        cursor=cursor,
        resources={
            "corpus": CorpusRootResource(home=str(home)),
            "object_store": ObjectStoreResource(),
            "models": ModelSettingsResource(dense=dense),
        },
    )


def _tick(home: Path, cursor: str | None = None) -> dg.SensorResult:
    result = inbox_sensor(_context(home, cursor))
    assert isinstance(result, dg.SensorResult)
    return result


def test_new_files_are_stored_and_requested_one_run_per_document(inbox: Path, tmp_path: Path):
    result = _tick(tmp_path / "home")
    [run] = result.run_requests or []
    assert run.job_name == "reprocess_documents" and run.partition_key
    assert run.partition_key.startswith("q1-notes-md-"), "the address, not the base name"
    [added, namespace] = result.dynamic_partitions_requests or []
    assert list(added.partition_keys) == [run.partition_key]
    assert (namespace.partitions_def_name, list(namespace.partition_keys)) == (
        "namespaces",
        ["default"],
    ), "the namespace's revision is listed from its first document on"
    records = SourceRegistry(ObjectStore(load_settings(home=tmp_path / "home").object_store))
    assert [r.source_file_name for r in records.records()] == ["q1/notes.md"]
    assert sorted(json.loads(result.cursor or "{}")["files"]) == ["blob.bin", "q1/notes.md"]


def test_many_new_files_are_requested_as_range_runs_over_their_partitions(
    inbox: Path, tmp_path: Path
):
    for i in range(4):
        (inbox / f"more-{i}.md").write_text(f"# Note {i}\n\nGoldeneyes dive {i} times.\n")
    result = _tick(tmp_path / "home")
    [added, _] = result.dynamic_partitions_requests or []
    keys = list(added.partition_keys)
    assert len(keys) == 5
    runs = result.run_requests or []
    assert len(runs) == 2, "five documents spread over the two document slots"
    covered: list[str] = []
    for run in runs:
        tags = run.tags
        first = keys.index(tags["dagster/asset_partition_range_start"])
        last = keys.index(tags["dagster/asset_partition_range_end"])
        assert int(tags["corpus/documents"]) == last - first + 1
        covered += keys[first : last + 1]
    assert sorted(covered) == sorted(keys)
    assert len({run.run_key for run in runs}) == 2


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


def _publish_tick(instance: dg.DagsterInstance, home: Path, cursor: str | None = None) -> Any:
    context = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={
            "corpus": CorpusRootResource(home=str(home)),
            "object_store": ObjectStoreResource(),
            "models": ModelSettingsResource(),
        },
    )
    return publish_sensor(context)


@pytest.mark.slow
def test_the_publish_sensor_publishes_the_namespace_of_documents_materialised_outside_it(
    tmp_path: Path,
):
    """Documents materialised by any run — here one with no tags at all, as "Materialize" in
    the UI starts it — get their namespace (the registry's, not a tag's) published once; a
    namespace published after its documents (as the CLI does) is not published again."""
    from corpus_pipeline.defs.documents import document_pipeline
    from corpus_pipeline.orchestration.runs import DocumentRuns, resources_for

    note = tmp_path / "note.md"
    note.write_text("# Ducks\n\nTufted ducks dive.\n")
    home = tmp_path / "home"
    settings = load_settings(home=home, ingest_workers=1, namespace="birds")
    instance = dagster_instance(settings)
    assert not _publish_tick(instance, home).run_requests
    [result] = ingest([note], settings)
    assert result.status == "ok" and result.document_id
    fired: Any = _publish_tick(instance, home)
    [publish] = fired.run_requests
    assert (publish.job_name, publish.partition_key) == ("publish_revision", "birds")
    assert not _publish_tick(instance, home, fired.cursor).run_requests, "once"

    run = dg.materialize(
        [document_pipeline],
        instance=instance,
        resources=resources_for(settings),
        partition_key=result.document_id,
    )
    assert run.success and not run.dagster_run.tags.get("corpus/namespace")
    assert DocumentRuns.of(settings).publish("birds").error is None
    published: Any = _publish_tick(instance, home, fired.cursor)
    assert not published.run_requests, "published after its documents already"

    run = dg.materialize(
        [document_pipeline],
        instance=instance,
        resources=resources_for(settings),
        partition_key=result.document_id,
    )
    assert run.success
    [again] = _publish_tick(instance, home, published.cursor).run_requests
    assert again.partition_key == "birds"


def _embeddings_tick(home: Path, dense: str, cursor: str | None = None) -> Any:
    from corpus_pipeline.defs.sensors import embeddings_sensor

    return embeddings_sensor(_context(home, cursor, dense))


@pytest.mark.slow
def test_finished_document_runs_are_embedded_over_the_same_partitions(tmp_path: Path):
    notes = []
    for i in range(5):
        note = tmp_path / f"n{i}.md"
        note.write_text(f"# Note {i}\n\nGoldeneyes dive {i} times a minute.\n")
        notes.append(note)
    home = tmp_path / "home"
    results = ingest(notes, load_settings(home=home, ingest_workers=1))
    assert all(r.status == "ok" for r in results)
    off = _embeddings_tick(home, "off")
    assert not off.run_requests and off.skip_reason.skip_message.startswith("the dense channel")
    on = _embeddings_tick(home, "local")
    covered: set[str] = set()
    instance = dagster_instance(load_settings(home=home))
    order = list(instance.get_dynamic_partitions("documents"))
    for request in on.run_requests:
        assert request.job_name == "embed_documents"
        assert request.tags["corpus/stage"] == "embedding"
        if request.partition_key:
            covered.add(request.partition_key)
        else:
            first = order.index(request.tags["dagster/asset_partition_range_start"])
            last = order.index(request.tags["dagster/asset_partition_range_end"])
            covered |= set(order[first : last + 1])
    assert covered == {r.document_id for r in results}
    assert not _embeddings_tick(home, "local", on.cursor).run_requests, "each run embedded once"


def test_an_e_mail_in_the_inbox_brings_its_attachment_as_a_linked_document(
    inbox: Path, tmp_path: Path
):
    """The inbox takes a file as `corpus ingest` does: the message and its attachment are two
    documents, the attachment recorded as attached to the message; removing the message from
    the inbox forgets both."""
    from corpus_pipeline_tests.mail_files import message

    note = ("duck-count.txt", "text/plain", b"Tufted ducks: 14. Goldeneyes: 3.\n")
    (inbox / "budget.eml").write_bytes(message(attachments=[note]))
    home = tmp_path / "home"
    first = _tick(home)
    records = SourceRegistry(ObjectStore(load_settings(home=home).object_store))
    by_name = {r.source_file_name: r for r in records.records()}
    assert sorted(by_name) == ["budget.eml", "budget.eml/duck-count.txt", "q1/notes.md"]
    assert by_name["budget.eml/duck-count.txt"].attached_to == by_name["budget.eml"].document_id
    [added, _] = first.dynamic_partitions_requests or []
    assert by_name["budget.eml/duck-count.txt"].document_id in set(added.partition_keys)
    (inbox / "budget.eml").unlink()
    _tick(home, first.cursor)
    assert [r.source_file_name for r in records.records()] == ["q1/notes.md"]
