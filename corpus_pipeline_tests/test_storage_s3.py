"""The object store and the source registry against a real S3 API (a local `moto_server`).

The endpoint reaches s3fs the way a deployment sets it: the standard `AWS_ENDPOINT_URL`
variable, which botocore reads when a client is created (settings carry only `s3://…`)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
import s3fs

from corpus_pipeline.common.errors import InvalidInputError, StorageError
from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

from .services import AWS_DUMMY_KEY_ID, AWS_DUMMY_SECRET, moto_server, use_moto
from .support import DOCS

pytestmark = pytest.mark.slow

PREFIX = "corpus"


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """One moto_server per test session (per xdist worker), stopped at the end."""
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def s3_env(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Dummy credentials and the moto endpoint for this test only; no user AWS config."""
    # fsspec caches filesystem instances (and their clients) across tests: start and end clean.
    use_moto(s3_endpoint, tmp_path, monkeypatch)
    yield s3_endpoint
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def s3(s3_env: str) -> Any:
    """A plain boto3 client on the same endpoint: the test's independent view of the bucket."""
    return boto3.client("s3")


@pytest.fixture
def bucket(s3: Any) -> str:
    name = f"corpus-test-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
def registry(bucket: str) -> SourceRegistry:
    return SourceRegistry(ObjectStore(f"s3://{bucket}/{PREFIX}"))


def _keys(s3: Any, bucket: str, prefix: str) -> list[str]:
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(obj["Key"] for obj in listed.get("Contents", []))


def test_the_same_bytes_under_two_names_are_stored_once(registry, s3, bucket):
    data = b"# Title\n\nThe same bytes delivered twice.\n"

    first = registry.register(data, "first.md", "default")
    second = registry.register(data, "second.md", "default")

    assert first.document_id != second.document_id
    assert (
        first.object_key == second.object_key == f"sources/sha256/{first.sha256[:2]}/{first.sha256}"
    )
    assert _keys(s3, bucket, f"{PREFIX}/sources/") == [f"{PREFIX}/{first.object_key}"]
    stored = s3.get_object(Bucket=bucket, Key=f"{PREFIX}/{first.object_key}")["Body"].read()
    assert stored == data
    assert _keys(s3, bucket, f"{PREFIX}/registry/") == sorted(
        f"{PREFIX}/registry/documents/{r.document_id}.json" for r in (first, second)
    )
    assert {r.source_file_name for r in registry.records()} == {"first.md", "second.md"}


def test_deleting_a_document_removes_its_bytes_once_no_other_document_holds_them(
    registry, s3, bucket
):
    data = b"# Title\n\nBytes two documents share.\n"
    first = registry.register(data, "first.md", "default")
    second = registry.register(data, "second.md", "default")
    registry.delete(first.document_id)
    assert _keys(s3, bucket, f"{PREFIX}/sources/") == [f"{PREFIX}/{second.object_key}"]
    registry.delete(second.document_id)
    assert _keys(s3, bucket, f"{PREFIX}/sources/") == []
    assert _keys(s3, bucket, f"{PREFIX}/registry/") == []


def test_no_partial_object_is_left_behind(registry, s3, bucket):
    record = registry.register(b"complete bytes", "notes.txt", "default")

    keys = _keys(s3, bucket, f"{PREFIX}/")

    assert keys == sorted(
        [f"{PREFIX}/{record.object_key}", f"{PREFIX}/registry/documents/{record.document_id}.json"]
    )


def test_get_returns_the_registered_record(registry):
    record = registry.register(b"alpha beta", "alpha.txt", "team-a", organizational_unit="ops")

    assert registry.get(record.document_id) == record


def test_a_record_written_by_another_process_is_visible(registry, s3, bucket):
    """A long-lived process (query service, sensor) must see documents registered elsewhere,
    even after it has listed the registry once."""
    mine = registry.register(b"mine", "mine.txt", "default")
    assert [r.document_id for r in registry.records()] == [mine.document_id]

    theirs = mine.model_copy(update={"document_id": "theirs-0123456789ab"})
    s3.put_object(
        Bucket=bucket,
        Key=f"{PREFIX}/registry/documents/{theirs.document_id}.json",
        Body=theirs.model_dump_json().encode(),
    )

    assert registry.get(theirs.document_id) == theirs
    assert {r.document_id for r in registry.records()} == {mine.document_id, theirs.document_id}


def test_fetch_source_copies_the_verified_bytes(registry, tmp_path):
    data = b"%PDF-1.7 pretend this is a document"
    record = registry.register(data, "folder/report.pdf", "default")

    path = registry.fetch_source(record, tmp_path / "work")

    assert path == tmp_path / "work" / "report.pdf"
    assert path.read_bytes() == data


def test_a_tampered_object_fails_its_checksum(registry, s3, bucket, tmp_path):
    record = registry.register(b"original bytes", "report.txt", "default")
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/{record.object_key}", Body=b"tampered bytes")

    with pytest.raises(InvalidInputError, match="checksum") as caught:
        registry.fetch_source(record, tmp_path / "work")

    assert record.document_id in str(caught.value)
    assert not (tmp_path / "work" / "report.txt").exists()


def test_a_missing_document_is_named_without_endpoint_or_keys(registry, s3_endpoint, bucket):
    with pytest.raises(InvalidInputError) as caught:
        registry.get("never-registered-0123456789ab")

    message = str(caught.value)
    assert message == "document_id: no document 'never-registered-0123456789ab' is registered"
    for secret in (s3_endpoint, s3_endpoint.rsplit(":", 1)[1], AWS_DUMMY_KEY_ID, AWS_DUMMY_SECRET):
        assert secret not in message


def test_ingest_with_an_s3_object_store_writes_artifacts_locally(bucket, s3, tmp_path):
    settings = load_settings(home=tmp_path / "home", object_store_url=f"s3://{bucket}/{PREFIX}")

    [result] = ingest([DOCS / "word_sample.docx"], settings)

    assert (result.status, result.error) == ("ok", None)
    assert result.document_id
    directory = settings.artifacts_dir / result.document_id
    assert directory.is_dir()
    assert (directory / "manifest.json").is_file()
    assert (directory / "source" / "word_sample.docx").read_bytes() == (
        DOCS / "word_sample.docx"
    ).read_bytes()
    assert result.counts["text"] > 0
    # The source went to S3, not to the local default store.
    assert f"{PREFIX}/registry/documents/{result.document_id}.json" in _keys(s3, bucket, PREFIX)
    assert not (settings.home / "objects").exists()


def test_a_missing_bucket_is_an_error_and_is_not_created(s3, s3_env):
    name = f"missing-{uuid.uuid4().hex[:8]}"
    registry = SourceRegistry(ObjectStore(f"s3://{name}/{PREFIX}"))
    with pytest.raises(StorageError, match="object store write") as caught:
        registry.register(b"hello", "a.txt", "default")
    assert name not in {b["Name"] for b in s3.list_buckets()["Buckets"]}
    assert "127.0.0.1" not in str(caught.value)


def test_an_unreachable_store_fails_ingest_cleanly_without_the_endpoint(
    s3_env, monkeypatch, tmp_path
):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    s3fs.S3FileSystem.clear_instance_cache()
    settings = load_settings(home=tmp_path / "home", object_store_url="s3://nowhere/corpus")
    (result,) = ingest([DOCS / "wiki.md"], settings)
    assert result.status == "failed"
    assert result.error and result.error.startswith("object store")
    assert "127.0.0.1" not in result.error and ":9" not in result.error


def _s3_tick(home: Path, cursor: str | None = None) -> Any:
    import dagster as dg

    from corpus_pipeline.defs.resources import (
        CorpusRootResource,
        ModelSettingsResource,
        ObjectStoreResource,
    )
    from corpus_pipeline.defs.sensors import s3_sensor
    from corpus_pipeline.orchestration.runs import dagster_instance

    context = dg.build_sensor_context(
        instance=dagster_instance(load_settings(home=home)),
        cursor=cursor,
        resources={
            "corpus": CorpusRootResource(home=str(home)),
            "object_store": ObjectStoreResource(),
            "models": ModelSettingsResource(),
        },
    )
    return s3_sensor(context)


def test_the_s3_sensor_syncs_a_bucket_prefix_by_etag_and_address(
    s3: Any, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3.put_object(Bucket=bucket, Key="drop/q1/notes.md", Body=b"# Q1\n\nTufted ducks dive.\n")
    s3.put_object(Bucket=bucket, Key="drop/tool.bin", Body=bytes(range(256)) * 4)
    s3.put_object(Bucket=bucket, Key="drop/q2/notes.md", Body=b"# Q2\n\nGoldeneyes dive.\n")
    s3.put_object(Bucket=bucket, Key="elsewhere/other.md", Body=b"# Other\n\ntext\n")
    monkeypatch.setenv("CORPUS_S3_SYNC_URL", f"s3://{bucket}/drop")
    home = tmp_path / "home"
    first = _s3_tick(home)
    run, other = first.run_requests
    assert run.partition_key.startswith("s3-"), "identity is the s3:// address"
    assert other.partition_key != run.partition_key, "same base name, other prefix: two documents"
    cursor = json.loads(first.cursor)["objects"]
    assert sorted(cursor) == [
        f"s3://{bucket}/drop/q1/notes.md",
        f"s3://{bucket}/drop/q2/notes.md",
        f"s3://{bucket}/drop/tool.bin",
    ]
    quiet = _s3_tick(home, first.cursor)
    assert quiet.skip_reason.skip_message == (
        "s3: ingested 0, updated 0, skipped 3, failed 0, removed 0"
    )
    s3.put_object(Bucket=bucket, Key="drop/q1/notes.md", Body=b"# Q1\n\nGoldeneyes too.\n")
    changed = _s3_tick(home, quiet.cursor)
    [update] = changed.run_requests
    assert update.partition_key == run.partition_key and update.run_key != run.run_key
    s3.delete_object(Bucket=bucket, Key="drop/q1/notes.md")
    gone = _s3_tick(home, changed.cursor)
    [publish] = gone.run_requests
    assert publish.job_name == "publish_revision"
